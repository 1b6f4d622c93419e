"""The three tables in memory, as the fakes of the store ports share them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from chronoq import resources as r
from chronoq.domain.after import FanIn, Graph
from chronoq.domain.backfills import Backfill
from chronoq.domain.calendars import CalendarMeta
from chronoq.domain.flow import FlowState
from chronoq.domain.inflight import InFlight
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Usage
from chronoq.domain.runs import TERMINAL_STATUSES, Occurrence, Run
from chronoq.domain.secrets import SecretMeta
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent
from chronoq.usecases.ports import KeyRecord, Page, Position, RunEnd

T = TypeVar("T")


def page(
    candidates: Sequence[tuple[Position, T]], limit: int, keep: Callable[[T], bool]
) -> Page[T]:
    """A store's paging over items in listing order, each with its position: up to
    ``limit`` kept ones, looking at PAGE_SCAN_LIMIT items at most."""
    found: list[T] = []
    last: Position | None = None
    for looked, (position, item) in enumerate(candidates):
        if looked == r.PAGE_SCAN_LIMIT:
            return Page(found, last)
        if keep(item):
            if len(found) == limit:
                return Page(found, last)
            found.append(item)
        last = position
    return Page(found, None)


class RunTable(dict[tuple[str, str], Run]):
    """The runs, by (job id, run id); and, as the runs stream and the notifier's filter
    would deliver them (aws.streams), the ends of backfills' runs and re-runs whose end is
    not counted yet (``ends``: each write that leaves such a run in a final status adds one;
    a test delivers them to usecases.progress, in any order, as often as it likes)."""

    def __init__(self) -> None:
        super().__init__()
        #: the runs whose end is still to be counted (codecs.COUNTED false)
        self.uncounted: set[tuple[str, str]] = set()
        self.ends: list[RunEnd] = []

    def __setitem__(self, key: tuple[str, str], run: Run) -> None:
        if key not in self and (run.backfill_id or run.rerun_of):
            self.uncounted.add(key)
        super().__setitem__(key, run)
        if key in self.uncounted and run.status in TERMINAL_STATUSES:
            self.ends.append(RunEnd.of(run))

    def __delitem__(self, key: tuple[str, str]) -> None:
        super().__delitem__(key)
        self.uncounted.discard(key)

    def take_ends(self) -> list[RunEnd]:
        """The ends delivered so far (and forgotten: each is delivered once by this)."""
        taken, self.ends = self.ends, []
        return taken


@dataclass
class FakeTables:
    """What the tables hold (every port's fake reads and writes the same dictionaries,
    under one lock, as the DynamoDB adapters share the tables)."""

    jobs: dict[str, Job] = field(default_factory=dict)
    runs: RunTable = field(default_factory=RunTable)
    #: bucket -> due -> occurrence
    schedule: dict[str, dict[str, Occurrence]] = field(default_factory=dict)
    #: shard -> {"opened": minute, "minute": minute}
    marks: dict[int, dict[str, datetime]] = field(default_factory=dict)
    #: shard -> (minute being dispatched, key of its last item dispatched)
    within: dict[int, tuple[datetime, str]] = field(default_factory=dict)
    #: run id -> when it was last claimed
    claims: dict[str, datetime] = field(default_factory=dict)
    #: idempotency key -> (record, when it expires)
    keys: dict[str, tuple[KeyRecord, datetime]] = field(default_factory=dict)
    #: owner -> how many jobs they have
    job_counts: dict[str, int] = field(default_factory=dict)
    #: flow item key -> its state
    flows: dict[str, FlowState] = field(default_factory=dict)
    #: in-flight item key -> an owner's count of runs in flight
    in_flight: dict[str, InFlight] = field(default_factory=dict)
    #: (job id, run id) -> (flow item key, wait order): the runs parked on a flow
    parked: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: (job id, backfill id) -> backfill
    backfills: dict[tuple[str, str], Backfill] = field(default_factory=dict)
    #: owner -> what their backfills and re-runs hold (backfill_runs 0: read from those)
    usage: dict[str, Usage] = field(default_factory=dict)
    #: (owner, job name) -> (the job holding it, when it was claimed)
    names: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
    #: owner -> name -> what is kept of the secret (its value is the SecretValues fake's)
    secrets: dict[str, dict[str, SecretMeta]] = field(default_factory=dict)
    #: (owner, secret name) -> the ids of the jobs using it
    secret_uses: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: owner -> name -> the calendar
    calendars: dict[str, dict[str, CalendarMeta]] = field(default_factory=dict)
    #: (owner, calendar name) -> the ids of the jobs using it
    calendar_uses: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    #: job id -> its expectation of success (a job with ``expect``)
    expectations: dict[str, Expectation] = field(default_factory=dict)
    #: owner -> its pipeline graph; (job id, instant) -> an after job's fan-in
    graphs: dict[str, Graph] = field(default_factory=dict)
    fanins: dict[tuple[str, datetime], FanIn] = field(default_factory=dict)
    #: bucket -> due -> a job's success deadline (the time index's other kind of item)
    deadlines: dict[str, dict[str, Deadline]] = field(default_factory=dict)
    #: (job id, key) -> a silence's record (SILENT, RECOVERED); and, as the runs stream and
    #: the notifier's filter would deliver them, each record as it is written (a test delivers
    #: them to the notifier, as often as it likes)
    silences: dict[tuple[str, str], SilenceEvent] = field(default_factory=dict)
    silence_stream: list[SilenceEvent] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
