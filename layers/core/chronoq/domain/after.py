"""Completion triggers: jobs whose schedule is ``after`` other jobs (schedules.AfterSchedule).

- **The graph.** An owner's ``after`` jobs and their upstreams are the edges of one item per
  owner, its pipeline graph, with a version. A change that adds edges is checked for a cycle
  on the graph as read and written back on condition that its version is still the one read:
  two changes racing cannot both pass the check on the same graph, so no cycle slips through.
- **The marker.** Each upstream job keeps the ids of the jobs that follow it
  (``Job.followed_by``); its runs note them among their ``slots`` as they start
  (``after#<id>,<id>``), so the runs table's stream lets their ends through to the notifier,
  and the notifier knows whom to tell without a read. Ends of jobs nothing follows cost
  nothing more.
- **Fan-in.** An upstream run's end that counts (``counts``) is noted in the fan-in item of
  (downstream job, instant) by one update adding the upstream's id (a set: an end heard twice
  is noted once). The update that completes the set creates the downstream run, with an id
  derived from the job and the instant (ids.after_run_id) and a conditional write: however the
  ends are repeated or ordered, one run. The run is sent like a manual run (the worker, fair
  share and the owner's limits as for any run).
- **The wait.** The first arrival of an instant writes a deadline to the time index
  (``within_seconds`` later); the dispatcher, finding it passed with upstreams missing,
  records the downstream run SKIPPED, naming them, with the same id and the same conditional
  write: the last upstream arriving at the same moment and the deadline make one run between
  them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from chronoq.domain import ids, keys
from chronoq.domain.runs import RunStatus
from chronoq.domain.time import Instant

#: What a run of an upstream job notes among its ``slots`` (its followers' ids after it).
SLOT = "after#"
#: The statuses of a run that was started, by what ``on`` asks of it.
_COUNTED = {
    "SUCCEEDED": frozenset({RunStatus.SUCCEEDED}),
    "FAILED": frozenset({RunStatus.FAILED, RunStatus.TIMED_OUT}),
    "ENDED": frozenset(
        {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.CANCELLED}
    ),
}
#: The field a refusal names.
FIELD = "schedule.jobs"


def counts(on: str, status: RunStatus) -> bool:
    """Does an upstream run that ended ``status`` count for a downstream job's ``on``?"""
    return status in _COUNTED[on]


def slot(followers: Iterable[str]) -> str:
    """The token an upstream run notes among its ``slots``: its job's followers."""
    return SLOT + ",".join(sorted(followers))


def followers_in(slots: str) -> list[str]:
    """The downstream job ids a run's ``slots`` (as its record holds them) name."""
    for token in slots.split():
        if token.startswith(SLOT):
            return [f for f in token.removeprefix(SLOT).split(",") if f]
    return []


class Graph(BaseModel):
    """An owner's pipeline graph: each ``after`` job's upstream job ids; ``version`` 0: no
    item yet."""

    model_config = ConfigDict(frozen=True)

    owner: str
    edges: dict[str, frozenset[str]] = Field(default_factory=dict)
    version: int = 0

    def with_job(self, job_id: str, upstreams: Iterable[str]) -> Graph:
        """The graph with ``job_id``'s upstreams replaced (none: it leaves the graph)."""
        edges = {k: v for k, v in self.edges.items() if k != job_id}
        ups = frozenset(upstreams)
        if ups:
            edges[job_id] = ups
        return self.model_copy(update={"edges": edges})

    def downstream_of(self, job_id: str) -> list[str]:
        return sorted(d for d, ups in self.edges.items() if job_id in ups)


def cycle_from(edges: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """A cycle through ``start`` (the job ids along it, ``start`` first), or None: a walk up
    from ``start`` that reaches it again."""
    path: list[str] = []
    seen: set[str] = set()

    def walk(node: str) -> bool:
        for up in sorted(edges.get(node, ())):
            if up == start:
                path.append(node)
                return True
            if up in seen:
                continue
            seen.add(up)
            if walk(up):
                path.append(node)
                return True
        return False

    if walk(start):
        return list(reversed(path))
    return None


class FanIn(BaseModel):
    """Which upstreams of a downstream job have arrived for one instant (the fan-in item)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    instant: Instant
    #: The upstream job ids arrived, and their runs (``triggered_by``).
    arrived: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    #: When the first upstream arrived.
    first_at: Instant | None = None

    def complete(self, upstreams: Iterable[str]) -> bool:
        return set(upstreams) <= self.arrived

    def missing(self, upstreams: Iterable[str]) -> list[str]:
        return sorted(set(upstreams) - self.arrived)


def fanin_key(job_id: str, instant: datetime) -> str:
    return keys.fanin_key(job_id, ids.run_stamp(instant))
