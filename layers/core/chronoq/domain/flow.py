"""Flow control's rules: which runs of a flow may start, and in which second.

A flow is the owner's key (every job of theirs whose ``flow`` names it shares it), or a
backfill (its pacing). Its state is one item: the runs holding a ``max_running`` slot, each
with the second reserved for its start, and the number of starts counted in the latest
second any start was reserved in (the frontier). Starts are reserved in order: a run gets
the second it wants if that is past the frontier, else the frontier's second while it has
room, else the second after. So no second ever holds more than ``max_starts_per_second``
starts, and a run over the rate knows at once when it may start. A run over ``max_running``
is parked (``wait_order`` keeps the parked runs of a flow in the order they are woken) until a
slot is given back: when its run ends (the state machine's last step; the run's end wakes the
parked runs the free slots let start), when the run is cancelled, or, if its run never
started, once the flow is full and the second reserved for it is FLOW_LEASE_SECONDS past.

Pure: the use case reads the state, decides with ``admit`` and writes the state back under
the version it read (a concurrent change makes it read and decide again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from chronoq.domain import keys
from chronoq.domain import limits as lim
from chronoq.domain.runs import Priority
from chronoq.domain.time import format_instant

#: Prefix of the jobs table's flow items (see domain.keys).
ITEM_PREFIX = keys.FLOW


def item_key(owner: str, key: str) -> str:
    """The item of the owner's flow ``key`` (no owner nor key in clear)."""
    digest = hashlib.sha256(f"user\0{owner}\0{key}".encode()).hexdigest()[:40]
    return ITEM_PREFIX + digest


def backfill_item_key(owner: str, backfill_id: str) -> str:
    """The item pacing a backfill's runs (its ``max_running`` is the backfill's maximum in
    flight)."""
    digest = hashlib.sha256(f"backfill\0{owner}\0{backfill_id}".encode()).hexdigest()[:40]
    return ITEM_PREFIX + digest


def owner_item_key(owner: str) -> str:
    """The item counting the owner's asked runs under way (manual, re-runs, backfills): its
    ``max_running`` is the deployment's ``max_asked_runs_in_flight``."""
    digest = hashlib.sha256(f"owner\0{owner}".encode()).hexdigest()[:40]
    return ITEM_PREFIX + digest


@dataclass(frozen=True)
class Limits:
    max_running: int | None = None
    max_starts_per_second: int | None = None


@dataclass(frozen=True)
class FlowState:
    """A flow's item: ``holders``, run id -> the second (epoch) reserved for its start, for
    the runs holding a ``max_running`` slot; the ``frontier`` second and the ``starts``
    reserved in it; its ``version`` (0: no item yet)."""

    holders: Mapping[str, int] = field(default_factory=dict)
    frontier: int = 0
    starts: int = 0
    version: int = 0
    #: The flow's ``max_running`` as its latest admission knew it (what a wake counts on).
    max_running: int | None = None


@dataclass(frozen=True)
class Candidate:
    """A run that asks to start: the first second it may start in (``wanted``), and the
    second this flow reserved for it before, if its message says so."""

    run_id: str
    wanted: int
    reserved: int | None = None


def admit(
    state: FlowState,
    limits: Limits,
    candidates: Sequence[Candidate],
    now: int,
    stale: Iterable[str] = (),
) -> tuple[FlowState, dict[str, int | None]]:
    """The flow's state once ``candidates`` (in order) have asked to start at second ``now``
    (epoch), and for each the second it starts in, or None: held back, no slot is free. A
    flow that paces its starts (``max_starts_per_second``) counts a start in a second still
    to come, never before ``now`` + 1, so that its execution, started now, waits for it and
    starts in the second it was counted in; a flow that only limits its runs at once lets a
    run that is due start in the current second (``now``), without waiting. ``stale``:
    holders whose runs never started (see ``stale_holders``), whose slots are taken back.

    A run already holding a slot keeps it; one whose reserved second is still ahead keeps
    that second (it was counted); otherwise each start is counted in the second it gets."""
    gone = set(stale)
    holders = {run: second for run, second in state.holders.items() if run not in gone}
    frontier, starts = state.frontier, state.starts
    earliest = now + 1 if limits.max_starts_per_second is not None else now
    decided: dict[str, int | None] = {}
    for candidate in candidates:
        holding = candidate.run_id in holders
        kept = candidate.reserved
        if kept is not None and kept >= earliest and (limits.max_running is None or holding):
            decided[candidate.run_id] = kept
            continue
        if limits.max_running is not None and not holding and len(holders) >= limits.max_running:
            decided[candidate.run_id] = None
            continue
        start = max(candidate.wanted, earliest)
        rate = limits.max_starts_per_second
        if rate is not None:
            if start > frontier:
                frontier, starts = start, 1
            elif starts < rate:
                starts += 1
            else:
                frontier, starts = frontier + 1, 1
            start = frontier
        if limits.max_running is not None:
            holders[candidate.run_id] = start
        decided[candidate.run_id] = start
    return FlowState(holders, frontier, starts, state.version, limits.max_running), decided


def stale_holders(state: FlowState, now: int) -> list[str]:
    """Holders whose reserved second is FLOW_LEASE_SECONDS past: if their runs have not
    started (no record, or one that is not RUNNING), their slots were never used."""
    return sorted(
        run for run, second in state.holders.items() if second < now - lim.FLOW_LEASE_SECONDS
    )


def free_slots(state: FlowState, ended: Iterable[str] = ()) -> int:
    """The slots of a flow that limits its runs at once that a parked run may take, counting
    the holders in ``ended`` (runs that ended, whose slots are being given back) as free."""
    if state.max_running is None:
        return 0
    busy = set(state.holders) - set(ended)
    return max(0, state.max_running - len(busy))


#: Priorities in the order a flow wakes its parked runs: one owner's priorities order its runs.
_RANK = {p.value: n for n, p in enumerate(Priority)}


def wait_order(priority: str, held_at: datetime, run_id: str) -> str:
    """A parked run's place among its flow's parked runs (they are woken in this order):
    higher priority first, then the longest waiting, then by run id."""
    return f"{_RANK.get(priority, len(_RANK))}#{format_instant(held_at)}#{run_id}"
