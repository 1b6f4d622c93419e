"""What a ``kill -9`` of chronoq local takes with it on the engine, and what its next start
gives back: executions under way (noted on disk as they start: chronoq.local.engine.inflight),
their runs given back (engine.recovery), messages received by the process that stopped (made
visible at once), and the runs stream's records not yet delivered (engine.streams)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from chronoq import resources as r
from chronoq.aws.queues import SqsQueues
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.execution import batches
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes.clock import FakeClock
from chronoq.local.drivers import QueuePoller
from chronoq.local.engine import recovery
from chronoq.local.engine.inflight import InFlight
from chronoq.local.engine.queues import SqliteQueues
from chronoq.local.engine.streams import LocalStreams
from chronoq.local.engine.tables import SqliteTables
from chronoq.local.persist import INTERRUPTED

from tests.contract.backends import NOW, a_job, a_run

ARN = "arn:aws:states:us-east-1:123456789012:execution:run:one"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(now=NOW)


@pytest.fixture
def tables(clock: FakeClock) -> Iterator[SqliteTables]:
    kept = SqliteTables(None, r.TABLES, clock=clock)
    yield kept
    kept.close()


@pytest.fixture
def store(tables: SqliteTables) -> DynamoStore:
    return DynamoStore(cast(Any, tables), r.JOBS_TABLE.id, r.RUNS_TABLE.id, r.SCHEDULE_TABLE.id)


@pytest.fixture
def sqs(clock: FakeClock) -> Iterator[SqliteQueues]:
    queues = SqliteQueues(None, clock)
    for queue in r.QUEUES:
        queues.create_queue(QueueName=queue.id, Attributes={"VisibilityTimeout": "180"})
    yield queues
    queues.close()


@pytest.fixture
def queues(sqs: SqliteQueues) -> SqsQueues:
    urls = {q.priority: sqs.get_queue_url(QueueName=q.id)["QueueUrl"] for q in r.QUEUES}
    return SqsQueues(cast(Any, sqs), urls)


def _received(sqs: SqliteQueues) -> list[RunMessage]:
    messages = []
    for queue in r.QUEUES:
        url = sqs.get_queue_url(QueueName=queue.id)["QueueUrl"]
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        messages += [RunMessage.model_validate_json(m["Body"]) for m in answer.get("Messages", [])]
    return messages


# --- executions under way, on disk ------------------------------------------------------------


def test_given_an_execution_started_and_not_ended_when_reopened_then_its_runs_are_lost_once(
    tmp_path: Path,
) -> None:
    first = InFlight(tmp_path / "executions.db")
    first.started(ARN, json.dumps({batches.RUNS: [{"run_id": "a"}, {"run_id": "b"}]}))
    first.started(f"{ARN}-ended", json.dumps({"run_id": "c"}))
    first.ended(f"{ARN}-ended")
    first.close()  # (as a kill leaves it: nothing more written)

    second = InFlight(tmp_path / "executions.db")

    assert [d["run_id"] for d in second.lost()] == ["a", "b"]
    assert second.lost() == []


def test_given_an_execution_that_ended_before_its_start_was_noted_when_noted_then_it_is_not_kept() -> (
    None
):
    inflight = InFlight(None)

    inflight.ended(ARN)  # (a fast execution: its end is told first)
    inflight.started(ARN, json.dumps({"run_id": "a"}))

    assert inflight.lost() == []


# --- their runs, given back -------------------------------------------------------------------


def test_given_lost_executions_when_recovered_then_a_running_run_fails_and_one_not_started_is_sent_again(
    store: DynamoStore, queues: SqsQueues, sqs: SqliteQueues, clock: FakeClock
) -> None:
    job = a_job()
    store.put_new_job(job)
    running = a_run(job, NOW + timedelta(seconds=1), RunStatus.RUNNING)
    queued = a_run(job, NOW + timedelta(seconds=2), RunStatus.QUEUED)
    ended = a_run(job, NOW + timedelta(seconds=3), RunStatus.SUCCEEDED)
    for run in (running, queued, ended):
        store.create_run(run, NOW)
    unrecorded_at = NOW + timedelta(seconds=4)
    unrecorded = ids.run_id(job.id, unrecorded_at)  # (its first state never came)
    lost = [
        ExecutionInput.of(job, run.id, run.scheduled_at).document()
        for run in (running, queued, ended)
    ] + [ExecutionInput.of(job, unrecorded, unrecorded_at).document()]

    counts = recovery.recover(lost, store, queues, clock())
    clock.advance(60)  # (each is sent delayed until its second)

    kept = store.get_run(job.id, running.id)
    assert kept is not None
    assert (kept.status, kept.reason) == (RunStatus.FAILED, INTERRUPTED)
    assert {m.run_id for m in _received(sqs)} == {queued.id, unrecorded}
    assert counts == {"resent": 2, "interrupted": 1}


def test_given_a_lost_run_without_a_record_when_resent_then_the_message_says_what_its_input_said(
    store: DynamoStore, queues: SqsQueues, sqs: SqliteQueues, clock: FakeClock
) -> None:
    job = a_job()
    at = NOW + timedelta(seconds=4)
    queued_at = NOW - timedelta(seconds=30)
    document = ExecutionInput.of(job, ids.run_id(job.id, at), at, queued_at=queued_at).document()

    recovery.recover([document], store, queues, clock())
    clock.advance(60)

    (message,) = _received(sqs)
    assert (message.job_id, message.scheduled_at, message.queued_at) == (job.id, at, queued_at)
    assert message.generation == job.generation


# --- messages received by the process that stopped --------------------------------------------


def test_given_messages_received_and_not_deleted_when_returned_then_they_are_received_again_at_once(
    sqs: SqliteQueues, queues: SqsQueues, clock: FakeClock
) -> None:
    job = a_job()
    queues.send(
        [(job.priority, RunMessage(job_id=job.id, run_id="r1", scheduled_at=NOW, queued_at=NOW))],
        NOW,
    )
    assert len(_received(sqs)) == 1  # (then the process is killed: never deleted)
    assert _received(sqs) == []  # (invisible for its visibility timeout)

    assert sqs.return_in_flight() == 1

    assert [m.run_id for m in _received(sqs)] == ["r1"]


def test_given_a_worker_batch_of_forty_when_the_poller_deletes_it_then_all_go_in_batches_of_ten(
    sqs: SqliteQueues, queues: SqsQueues, clock: FakeClock
) -> None:
    job = a_job()
    at = NOW
    queues.send(
        [
            (job.priority, RunMessage(job_id=job.id, run_id=f"r{i}", scheduled_at=at, queued_at=at))
            for i in range(r.WORKER_BATCH_SIZE)
        ],
        NOW,
    )
    url = sqs.get_queue_url(QueueName=next(q.id for q in r.QUEUES if q.priority == job.priority))[
        "QueueUrl"
    ]
    delivered: list[dict[str, Any]] = []

    def worker(event: dict[str, Any]) -> dict[str, Any]:
        delivered.append(event)
        return {"batchItemFailures": []}

    poller = QueuePoller(sqs, [url], worker, halt=threading.Event(), name="poller")

    poller.poll_once()

    assert sum(len(e["Records"]) for e in delivered) == r.WORKER_BATCH_SIZE
    assert (
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"][
            "ApproximateNumberOfMessagesNotVisible"
        ]
        == "0"
    )


# --- the runs stream --------------------------------------------------------------------------


def test_given_stream_records_not_handed_over_when_the_stream_is_read_anew_then_they_come_again_and_handed_ones_do_not(
    tables: SqliteTables, store: DynamoStore
) -> None:
    job = a_job()
    for second in (1, 2, 3):
        store.create_run(a_run(job, NOW + timedelta(seconds=second)), NOW)
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/Runs/stream/local"
    first = LocalStreams(tables, r.RUNS_TABLE.id, arn)
    iterator = first.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
    page = first.get_records(ShardIterator=iterator["ShardIterator"], Limit=2)
    assert len(page["Records"]) == 2
    # (handed over; the poller asks for what follows, which the process never delivers)
    first.get_records(ShardIterator=page["NextShardIterator"], Limit=1)

    again = LocalStreams(tables, r.RUNS_TABLE.id, arn)  # a restart
    iterator = again.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
    records = again.get_records(ShardIterator=iterator["ShardIterator"])["Records"]

    assert [rec["dynamodb"]["Keys"]["run_id"]["S"] for rec in records] == [
        ids.run_id(job.id, NOW + timedelta(seconds=3))
    ]


def test_given_two_readers_when_one_has_had_records_then_the_other_still_gets_them_after_a_restart(
    tables: SqliteTables, store: DynamoStore
) -> None:
    job = a_job()
    for second in (1, 2, 3):
        store.create_run(a_run(job, NOW + timedelta(seconds=second)), NOW)
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/Runs/stream/local"
    stream = LocalStreams(tables, r.RUNS_TABLE.id, arn)
    prompt, bulk = stream.reader("notifier"), stream.reader("archiver")
    bulk.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")  # (known)
    iterator = prompt.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
    page = prompt.get_records(ShardIterator=iterator["ShardIterator"])
    prompt.get_records(ShardIterator=page["NextShardIterator"])  # all three handed over to it

    again = LocalStreams(tables, r.RUNS_TABLE.id, arn)  # a restart
    bulk_again, prompt_again = again.reader("archiver"), again.reader("notifier")

    def records(reader: LocalStreams) -> list[str]:
        start = reader.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
        found = reader.get_records(ShardIterator=start["ShardIterator"])["Records"]
        return [rec["dynamodb"]["Keys"]["run_id"]["S"] for rec in found]

    assert records(prompt_again) == []
    assert records(bulk_again) == [
        ids.run_id(job.id, NOW + timedelta(seconds=second)) for second in (1, 2, 3)
    ]


def test_given_every_reader_has_had_a_record_then_the_stream_keeps_it_no_longer(
    tables: SqliteTables, store: DynamoStore
) -> None:
    job = a_job()
    store.create_run(a_run(job, NOW + timedelta(seconds=1)), NOW)
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/Runs/stream/local"
    stream = LocalStreams(tables, r.RUNS_TABLE.id, arn)
    readers = [stream.reader("notifier"), stream.reader("archiver")]
    pages = []
    for reader in readers:
        start = reader.get_shard_iterator(StreamArn=arn, ShardId="s", ShardIteratorType="LATEST")
        pages.append(reader.get_records(ShardIterator=start["ShardIterator"]))

    readers[0].get_records(ShardIterator=pages[0]["NextShardIterator"])
    assert len(tables.read_stream(r.RUNS_TABLE.id, 0, 10)) == 1  # (the archiver's still)
    readers[1].get_records(ShardIterator=pages[1]["NextShardIterator"])
    assert tables.read_stream(r.RUNS_TABLE.id, 0, 10) == []
