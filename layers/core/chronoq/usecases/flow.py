"""Flow control in the worker: the runs of a batch that have flows (their job's ``flow``,
their backfill's pacing) ask each flow's item for a start, together: one read and at most one
conditional write per flow item and batch (see chronoq.domain.flow for the rules).

A run of a job without a flow never comes here: it costs nothing more."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from chronoq.domain import flow, ids
from chronoq.domain import limits as lim
from chronoq.domain.backfills import Backfill
from chronoq.domain.jobs import Job
from chronoq.domain.runs import RunStatus
from chronoq.usecases.ports import Clock, FlowStore, RunStore

#: How often a flow item's write is tried again when another worker changed it meanwhile
#: (after that the runs look again after FLOW_RETRY_SECONDS).
SAVE_ATTEMPTS = 3
#: At most this many holders' runs are read per look for slots never used.
STALE_READS = 10


def epoch(instant: datetime) -> int:
    """``instant``'s whole second, rounded down (epoch seconds)."""
    return math.floor(instant.timestamp())


def instant(second: int) -> datetime:
    return datetime.fromtimestamp(second, UTC)


def flows_of(
    job: Job,
    backfill: Backfill | None,
    asked: bool = False,
    asked_in_flight: int = lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT,
) -> tuple[tuple[str, flow.Limits], ...]:
    """The flow items a run of ``job`` (of ``backfill``, if any; ``asked``: a run asked for,
    see ids.is_asked) goes through, in order: its backfill's pacing first, then its job's
    flow, then, for a run asked for, its owner's runs asked for under way (at most
    ``asked_in_flight``; last: a run takes a slot of it only once nothing else holds it
    back)."""
    found: list[tuple[str, flow.Limits]] = []
    if backfill is not None:
        found.append(
            (
                flow.backfill_item_key(job.owner, backfill.id),
                flow.Limits(max_running=backfill.max_in_flight),
            )
        )
    if job.flow is not None:
        limits = flow.Limits(job.flow.max_running, job.flow.max_starts_per_second)
        found.append((flow.item_key(job.owner, job.flow.key), limits))
    if asked:
        found.append((flow.owner_item_key(job.owner), flow.Limits(max_running=asked_in_flight)))
    return tuple(found)


def held_slots(job: Job | None, owner: str, run_id: str) -> list[str]:
    """The flow items in which a run of ``job`` may hold a slot (to give back when it is
    cancelled): its job's flow (if it limits runs at once), its backfill's, and, for a run
    asked for, its owner's."""
    keys = []
    backfill_id = ids.backfill_id_of(run_id)
    if backfill_id is not None:
        keys.append(flow.backfill_item_key(owner, backfill_id))
    if job is not None and job.flow is not None and job.flow.max_running is not None:
        keys.append(flow.item_key(owner, job.flow.key))
    if ids.is_asked(run_id):
        keys.append(flow.owner_item_key(owner))
    return keys


@dataclass(frozen=True)
class Ask:
    """A run asking to start: its flows (in order), the first second it may start in, and
    the second its flows reserved for it before (its message's), if any."""

    run_id: str
    flows: tuple[tuple[str, flow.Limits], ...]
    wanted: datetime
    reserved: datetime | None = None


@dataclass
class Answer:
    """When the run starts (None: it waits for a slot of the flow item ``held_by``, parked);
    the flow items it holds a slot in; those it got its slot in just now."""

    start: datetime | None = None
    holding: list[str] = field(default_factory=list)
    newly: list[str] = field(default_factory=list)
    held_by: str | None = None


class FlowGateStore(FlowStore, RunStore, Protocol):
    """What flow control reads and writes."""


@dataclass
class FlowGate:
    store: FlowGateStore
    clock: Clock

    def admit(self, asks: Sequence[Ask]) -> dict[str, Answer | Exception]:
        """Each run's answer: when it starts, or that it waits; an error of the store for
        the runs of the flow item it concerned (their messages come back)."""
        now = epoch(self.clock())
        answers: dict[str, Answer | Exception | _Held] = {a.run_id: Answer() for a in asks}
        starts: dict[str, int] = {a.run_id: epoch(a.wanted) for a in asks}
        layers = max((len(a.flows) for a in asks), default=0)
        for layer in range(layers):
            groups: dict[tuple[str, flow.Limits], list[Ask]] = defaultdict(list)
            for ask in asks:
                if layer < len(ask.flows) and not _settled(answers[ask.run_id]):
                    groups[ask.flows[layer]].append(ask)
            for (key, limits), group in groups.items():
                candidates = [
                    flow.Candidate(
                        a.run_id,
                        starts[a.run_id],
                        epoch(a.reserved) if a.reserved is not None else None,
                    )
                    for a in group
                ]
                try:
                    before, after, decided, contended = self._decide(key, limits, candidates, now)
                except Exception as error:  # these runs' messages come back later
                    for a in group:
                        answers[a.run_id] = error
                    continue
                for a in group:
                    answer = answers[a.run_id]
                    assert isinstance(answer, Answer)
                    second = decided.get(a.run_id)
                    if a.run_id in after.holders:
                        answer.holding.append(key)
                        if a.run_id not in before.holders:
                            answer.newly.append(key)
                    if second is None:
                        answers[a.run_id] = _Held(answer, None if contended else key)
                    else:
                        starts[a.run_id] = max(starts[a.run_id], second)
        out: dict[str, Answer | Exception] = {}
        for ask in asks:
            answer = answers[ask.run_id]
            if isinstance(answer, _Held):
                held = answer.answer
                out[ask.run_id] = Answer(None, held.holding, held.newly, answer.key)
            elif isinstance(answer, Answer):
                answer.start = instant(starts[ask.run_id])
                out[ask.run_id] = answer
            else:
                out[ask.run_id] = answer
        return out

    def _decide(
        self, key: str, limits: flow.Limits, candidates: list[flow.Candidate], now: int
    ) -> tuple[flow.FlowState, flow.FlowState, dict[str, int | None], bool]:
        """Read the flow's item, decide, write it back under the version read: (before,
        after, decisions, False). After SAVE_ATTEMPTS lost races, every candidate waits, and
        looks again shortly (True: held back by the races, not for want of a slot)."""
        for _ in range(SAVE_ATTEMPTS):
            before = self.store.get_flow(key)
            stale = self._stale(before, limits, now)
            after, decided = flow.admit(before, limits, candidates, now, stale)
            unchanged = dict(after.holders) == dict(before.holders) and (
                after.frontier,
                after.starts,
                after.max_running,
            ) == (before.frontier, before.starts, before.max_running)
            if unchanged or self.store.save_flow(key, before, after, self.clock()):
                return before, after, decided, False
        return before, before, dict.fromkeys((c.run_id for c in candidates), None), True

    def _stale(self, state: flow.FlowState, limits: flow.Limits, now: int) -> list[str]:
        """Holders whose runs never started, read only when the flow is full: no record,
        or one that is not RUNNING, FLOW_LEASE_SECONDS after the second reserved for it."""
        if limits.max_running is None or len(state.holders) < limits.max_running:
            return []
        dead = []
        for run_id in flow.stale_holders(state, now)[:STALE_READS]:
            run = self.store.get_run(ids.job_id_of_run(run_id), run_id)
            if run is None or run.status is not RunStatus.RUNNING:
                dead.append(run_id)
        return dead

    def release(self, keys: Sequence[str], run_id: str) -> None:
        """Give the run's slots back (it will not start after all)."""
        for key in keys:
            self.store.release_flow(key, run_id)


@dataclass
class _Held:
    """A run one of its flows (``key``; None: lost races on it) holds back (its later flows
    are not asked)."""

    answer: Answer
    key: str | None


def _settled(answer: Answer | Exception | _Held) -> bool:
    return not isinstance(answer, Answer)
