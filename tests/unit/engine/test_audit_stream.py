"""The audit table's stream on chronoq local's engine (engine.streams): an entry added (a
PartiQL INSERT, as the api function adds it) is an INSERT record its reader (the archiver:
chronoq.aws.fanout) gets; and the streams share one log, so a reader of a stream seldom
written must not hold back the dropping of the other streams' records it never reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any, cast

import pytest
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.aws.audit import DynamoAuditTrail
from chronoq.aws.store import DynamoStore
from chronoq.domain.audit import Action, AuditEntry, Source
from chronoq.fakes.clock import FakeClock
from chronoq.local.drivers import stream_filter
from chronoq.local.engine.streams import LocalStreams
from chronoq.local.engine.tables import SqliteTables

from tests.contract.backends import NOW, a_job, a_run

RUNS_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Runs/stream/local"
AUDIT_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Audit/stream/local"


@pytest.fixture
def tables() -> Iterator[SqliteTables]:
    kept = SqliteTables(None, r.TABLES, clock=FakeClock(now=NOW))
    yield kept
    kept.close()


def read(reader: LocalStreams, arn: str) -> tuple[list[dict[str, Any]], str]:
    """What ``reader`` gets from where it is, and where it is then."""
    start = reader.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
    page = reader.get_records(ShardIterator=start["ShardIterator"])
    return page["Records"], page["NextShardIterator"]


def an_entry(n: int) -> AuditEntry:
    return AuditEntry(
        job_id="job_a",
        owner="alice",
        at=NOW + timedelta(seconds=n),
        request_id=f"req-{n}",
        action=Action.PAUSE,
        by="alice",
        source=Source.CLI,
    )


def test_given_an_entry_added_when_the_audit_stream_is_read_then_its_reader_gets_an_insert(
    tables: SqliteTables,
) -> None:
    reader = LocalStreams(tables, r.AUDIT_TABLE.id, AUDIT_ARN).reader(fanout.AUDIT_ARCHIVER.name)
    read(reader, AUDIT_ARN)  # (known from now on)
    DynamoAuditTrail(cast(Any, tables), r.AUDIT_TABLE.id).append(an_entry(1))

    (record,), _ = read(reader, AUDIT_ARN)

    assert record["eventName"] == "INSERT"
    assert record["dynamodb"]["NewImage"]["request_id"] == {"S": "req-1"}
    assert stream_filter(fanout.AUDIT_ARCHIVER.filters(()))(record)


def test_given_no_entry_added_when_the_runs_readers_have_had_their_records_then_the_log_drops_them(
    tables: SqliteTables,
) -> None:
    store = DynamoStore(cast(Any, tables), r.JOBS_TABLE.id, r.RUNS_TABLE.id, r.SCHEDULE_TABLE.id)
    runs = LocalStreams(tables, r.RUNS_TABLE.id, RUNS_ARN)
    readers = [runs.reader(each.name) for each in fanout.RUNS_STREAM_READERS]
    audit = LocalStreams(tables, r.AUDIT_TABLE.id, AUDIT_ARN).reader(fanout.AUDIT_ARCHIVER.name)
    for reader in readers:
        read(reader, RUNS_ARN)
    read(audit, AUDIT_ARN)
    store.create_run(a_run(a_job(), NOW + timedelta(seconds=1)), NOW)

    nexts = [read(reader, RUNS_ARN)[1] for reader in readers]
    audits, after = read(audit, AUDIT_ARN)  # (nothing of its own)
    for reader, iterator in zip(readers, nexts, strict=True):
        reader.get_records(ShardIterator=iterator)  # (had by the runs stream's readers)
    audit.get_records(ShardIterator=after)

    assert audits == []
    assert tables.read_stream(r.RUNS_TABLE.id, 0, 10) == []
