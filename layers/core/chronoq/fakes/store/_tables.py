"""The three tables in memory, as the fakes of the store ports share them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from chronoq import resources as r
from chronoq.domain.backfills import Backfill
from chronoq.domain.flow import FlowState
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Occurrence, Run
from chronoq.usecases.ports import KeyRecord, Page, Position

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


@dataclass
class FakeTables:
    """What the tables hold (every port's fake reads and writes the same dictionaries,
    under one lock, as the DynamoDB adapters share the tables)."""

    jobs: dict[str, Job] = field(default_factory=dict)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
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
    #: (job id, run id) -> (flow item key, wait order): the runs parked on a flow
    parked: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: (job id, backfill id) -> backfill
    backfills: dict[tuple[str, str], Backfill] = field(default_factory=dict)
    #: (owner, job name) -> (the job holding it, when it was claimed)
    names: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
