"""Waking the runs a flow parked: when runs that held ``max_running`` slots end, the runs
parked on those flows that the free slots let start are sent again, in their flow's order
(chronoq.domain.flow.wait_order). The notifier does it, as it hears of runs that end (the
runs table's stream; the state machine notes each run's slots on its record as it starts).
The same for an owner's runs in flight: the ends give their counts back (one write per owner
and batch; see chronoq.domain.inflight) and wake as many of the runs parked on it.

A woken run asks its flow for a slot as any run does: if another run took the slot first, it
is parked again; a wake lost on the way costs the parked run a wait until it looks again
(FLOW_RELOOK_SECONDS, or its start deadline). Cost per slot given back while runs wait: one
read of the flow's item, one query of the parked runs, one SQS send."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from chronoq.domain import after, flow, inflight, keys
from chronoq.domain import limits as lim
from chronoq.domain.runs import RunMessage
from chronoq.usecases.ports import Clock, FlowStore, Queues, RunStore


@dataclass(frozen=True)
class Ended:
    """A run that ended and the flow items it held slots in (its record's ``slots``, its
    job's expectation of success left out: chronoq.usecases.silence moves that on; and its
    job's followers: chronoq.usecases.after tells them)."""

    run_id: str
    slots: tuple[str, ...]

    @classmethod
    def of(cls, run_id: str, slots: str) -> Ended:
        others = (keys.EXPECT, after.SLOT)
        return cls(run_id, tuple(s for s in slots.split() if not s.startswith(others)))


class SlotWakerStore(FlowStore, RunStore, Protocol):
    """What waking parked runs reads and writes."""


@dataclass
class SlotWaker:
    store: SlotWakerStore
    queues: Queues
    clock: Clock
    #: An owner's runs in flight (deployment setting ``max_runs_in_flight``).
    runs_in_flight: int = lim.DEFAULT_MAX_RUNS_IN_FLIGHT

    def runs_ended(self, ended: Iterable[Ended]) -> int:
        """Give back the ended runs' counts among their owners' runs in flight (one write
        per owner), then wake, for each flow and each owner's count the ``ended`` runs held
        a slot in, as many of its parked runs as it has room for (a flow's: the ended runs'
        slots counted free, the state machine gives them back after recording the end).
        Answers how many were sent."""
        by_flow: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, list[str]] = defaultdict(list)
        parked_at: dict[str, int] = {}
        for run in ended:
            for token in run.slots:
                count = inflight.parse_slot(token)
                if count is not None:
                    counts[count[0]].append(count[1])
                else:
                    by_flow[token].add(run.run_id)
        now = self.clock()
        room: dict[str, int] = {
            key: flow.free_slots(self.store.get_flow(key), runs) for key, runs in by_flow.items()
        }
        for key, buckets in counts.items():
            left = self.store.give_in_flight(key, inflight.grouped(buckets))
            expired = left.expired(now)
            if expired:
                self.store.heal_in_flight(key, expired)
            if left.parked_at:  # (else no run waits for it: nothing to look for)
                room[key] = inflight.admitted(len(buckets), left.live(now), self.runs_in_flight)
                parked_at[key] = left.parked_at
        messages = []
        for key, free in sorted(room.items()):
            if free == 0:
                continue
            waiting = self.store.waiting_runs(key, free)
            if len(waiting) < free and key in parked_at:  # none left: ends stop looking
                self.store.clear_in_flight_parked(key, parked_at[key])
            for parked in waiting:
                message = RunMessage.of(parked, parked.scheduled_at).model_copy(
                    update={"held_at": parked.held_at, "woken": True}
                )
                messages.append((parked.priority, message))
        if messages:
            self.queues.send(messages, now)
        return len(messages)
