"""Who reads the tables' streams (the runs table's, the audit table's), and for what: the one
place that says so, read by the CDK stack (one event source mapping per reader) and by
chronoq local (one stream poller per reader).

DynamoDB Streams serves at most two readers per shard without throttling them, so the stream
has exactly two, one per cadence:

- the notifier, prompt (small batches, no batching window): notifications, wakes of parked
  runs, runs in flight given back, backfills' and re-runs' progress. A new consumer that must
  hear of a run's end within seconds joins it, in process (its handler).
- the archiver, bulk (batches of up to 10,000 records gathered for 240 s): the archive in S3,
  where an object costs a PUT whatever it holds, so that each holds many runs. A new consumer
  that can wait minutes joins it.

A new consumer joins a reader; it never adds one (tests/infra asserts the stack's mappings
of the stream are these, and at most two).

The audit table's stream has one reader: the archiver again, in its own bulk batches (the
entries added to jobs' audit trails: the archive's audit objects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from chronoq import resources as r
from chronoq.aws.streams import FINAL, notifier_filters
from chronoq.domain.runs import RunStatus

#: What DynamoDB Streams serves per shard without throttling.
MAX_READERS = 2

Filters = Callable[[Iterable[RunStatus]], list[dict[str, Any]]]


def audit_filters(_: Iterable[RunStatus] = ()) -> list[dict[str, Any]]:
    """Every entry added (an entry is only ever inserted; its removal, TTL's or an
    erasure's, is no entry)."""
    return [{"eventName": ["INSERT"]}]


def archiver_filters(_: Iterable[RunStatus] = ()) -> list[dict[str, Any]]:
    """Every write of an ended run: the write that ends it and each later one (its
    notifications' notes, its end counted), never a run that has not ended, nor a removal
    (TTL's, which has no new image)."""
    return [{"dynamodb": {"NewImage": {"status": {"S": FINAL}}}}]


@dataclass(frozen=True)
class StreamReader:
    """One reader of a table's stream (the runs table's unless ``table`` says otherwise):
    its function, what it serves, and how it reads."""

    function: r.Function
    #: What it serves (what a consumer joining it does there).
    serves: tuple[str, ...]
    #: Records per batch, and how long a batch is gathered (AWS; chronoq local's own window).
    batch_size: int
    batching_window_seconds: int
    local_batching_window_seconds: float
    #: How often a batch that failed is handed over again before its records go to the
    #: reader's dead-letter queue.
    max_retries: int
    #: The event source mapping's filter patterns, given the deployment's topic statuses.
    filters: Filters
    #: The table whose stream it reads.
    table: r.Table = r.RUNS_TABLE

    @property
    def name(self) -> str:
        """Its name among the streams' readers: its function's (of a stream other than the
        runs table's: ``<function>@<table id>``)."""
        if self.table is r.RUNS_TABLE:
            return self.function.name
        return f"{self.function.name}@{self.table.id}"


NOTIFIER = StreamReader(
    function=r.NOTIFIER_FUNCTION,
    serves=(
        "notifications of ended runs (the SNS topic, webhooks, e-mail)",
        "wakes of the runs a flow or an owner's runs in flight parked",
        "runs in flight given back",
        "backfills' and re-runs' ends counted",
    ),
    batch_size=r.NOTIFIER_BATCH_SIZE,
    batching_window_seconds=0,
    local_batching_window_seconds=0.0,
    max_retries=r.NOTIFIER_MAX_RETRIES,
    filters=notifier_filters,
)
ARCHIVER = StreamReader(
    function=r.ARCHIVER_FUNCTION,
    serves=("the archive: every write of an ended run, in S3 by owner and day",),
    batch_size=r.ARCHIVER_BATCH_SIZE,
    batching_window_seconds=r.ARCHIVER_BATCHING_WINDOW_SECONDS,
    local_batching_window_seconds=r.LOCAL_ARCHIVER_BATCHING_WINDOW_SECONDS,
    max_retries=r.ARCHIVER_MAX_RETRIES,
    filters=archiver_filters,
)
AUDIT_ARCHIVER = StreamReader(
    function=r.ARCHIVER_FUNCTION,
    serves=("the archive: every audit entry added, in S3 by owner and day",),
    batch_size=r.ARCHIVER_BATCH_SIZE,
    batching_window_seconds=r.ARCHIVER_BATCHING_WINDOW_SECONDS,
    local_batching_window_seconds=r.LOCAL_ARCHIVER_BATCHING_WINDOW_SECONDS,
    max_retries=r.ARCHIVER_MAX_RETRIES,
    filters=audit_filters,
    table=r.AUDIT_TABLE,
)
#: Every reader of the runs stream.
RUNS_STREAM_READERS = (NOTIFIER, ARCHIVER)
#: Every reader of the audit stream.
AUDIT_STREAM_READERS = (AUDIT_ARCHIVER,)
#: Every reader of every stream, by the id of the table whose stream it reads.
STREAM_READERS = {r.RUNS_TABLE.id: RUNS_STREAM_READERS, r.AUDIT_TABLE.id: AUDIT_STREAM_READERS}
assert all(len(readers) <= MAX_READERS for readers in STREAM_READERS.values()), (
    "a new consumer joins a reader (see above)"
)
assert all(each.table.id == table for table, readers in STREAM_READERS.items() for each in readers)


def reader(name: str) -> StreamReader:
    """The reader named ``name`` (StreamReader.name)."""
    return next(
        each for readers in STREAM_READERS.values() for each in readers if each.name == name
    )
