"""chronoq local's tables (chronoq.local.engine.tables) against moto's DynamoDB: every request
goes to both and their answers (or error codes) must agree. chronoq's own DynamoStore and
S3Artifacts run over the pair, so every request shape they make is compared; so are the run
state machine's DynamoDB tasks, their Parameters taken from the ASL file and substituted as
Step Functions does; each scenario ends with the tables compared item by item.

Why this module is long: it is one differential suite: every scenario runs over the same Twin
(the local tables and moto's DynamoDB side by side) and ends with the same item-by-item
comparison, for chronoq's store, the state machine's tasks and the requests both refuse."""

from __future__ import annotations

import copy
import json
import re
import zlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from chronoq import resources as r
from chronoq.aws.artifacts import S3Artifacts
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.flow import FlowState
from chronoq.domain.limits import Usage
from chronoq.domain.runs import Attempt, Occurrence, Priority, RunStatus
from chronoq.domain.schedules import CronSchedule
from chronoq.execution import machines
from chronoq.local.engine.tables import SqliteTables
from chronoq.usecases.ports import RunEnd, RunFilter, Tally, TallyRefused
from moto import mock_aws

from tests.contract.backends import NOW, SHARDS, a_job, a_run

NAMES = {t.id: f"chronoq-{t.id.lower()}" for t in r.TABLES}
JOBS, RUNS, SCHEDULE = (NAMES[t.id] for t in (r.JOBS_TABLE, r.RUNS_TABLE, r.SCHEDULE_TABLE))
BUCKET = "chronoq-outputs"
MINUTE = timedelta(minutes=1)


def create_tables(client: Any) -> None:
    """chronoq's tables in moto, from their definitions (as chronoq local creates them)."""
    for table in r.TABLES:
        keys = [(table.partition_key, "HASH")] + (
            [(table.sort_key, "RANGE")] if table.sort_key else []
        )
        attributes = {k for k, _ in keys}
        indexes = []
        for index in table.indexes:
            index_keys = [(index.partition_key, "HASH")]
            if index.sort_key:
                index_keys.append((index.sort_key, "RANGE"))
            attributes |= {k for k, _ in index_keys}
            indexes.append(
                {
                    "IndexName": index.name,
                    "KeySchema": [{"AttributeName": k, "KeyType": t} for k, t in index_keys],
                    "Projection": {"ProjectionType": index.projection.value},
                }
            )
        client.create_table(
            TableName=NAMES[table.id],
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in keys],
            AttributeDefinitions=[
                {"AttributeName": a, "AttributeType": "S"} for a in sorted(attributes)
            ],
            **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
        )


def normal(value: Any) -> Any:
    """A value as compared: sets' members sorted, boto3's response metadata left out."""
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)) in ("SS", "NS", "BS"):
            ((kind, members),) = value.items()
            return {kind: sorted(members)}
        return {
            k: normal(v)
            for k, v in value.items()
            if k not in ("ResponseMetadata", "ConsumedCapacity", "ItemCollectionMetrics")
        }
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def unordered(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda i: json.dumps(i, sort_keys=True, default=repr))


def error_of(error: ClientError | None) -> Any:
    if error is None:
        return None
    reasons = [
        (reason.get("Code"), normal(reason.get("Item")))
        for reason in error.response.get("CancellationReasons", [])
    ]
    return (error.response["Error"]["Code"], normal(error.response.get("Item")), reasons)


class Twin:
    """moto's DynamoDB client and chronoq's tables, called alike: each call goes to both,
    the answers (or error codes, and any item an error carries) must agree; the tables'
    answer or error is what the caller gets."""

    exceptions = SqliteTables.exceptions

    def __init__(self, moto: Any, engine: SqliteTables) -> None:
        self.moto = moto
        self.engine = engine
        #: Every operation called, in order.
        self.calls: list[str] = []

    def _both(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(operation)
        moto_error = engine_error = None
        expected: dict[str, Any] = {}
        got: dict[str, Any] = {}
        try:
            expected = getattr(self.moto, operation)(**copy.deepcopy(request))
        except ClientError as error:
            moto_error = error
        try:
            got = getattr(self.engine, operation)(**copy.deepcopy(request))
        except ClientError as error:
            engine_error = error
        assert error_of(engine_error) == error_of(moto_error), (operation, request)
        if engine_error is not None:
            raise engine_error
        expected, got = normal(expected), normal(got)
        if operation == "scan":  # (the order of a scan is the storage's own)
            assert "LastEvaluatedKey" not in expected, request
            expected["Items"], got["Items"] = unordered(expected["Items"]), unordered(got["Items"])
        if operation == "batch_get_item":
            for answer in (expected, got):
                answer["Responses"] = {t: unordered(i) for t, i in answer["Responses"].items()}
        assert got == expected, (operation, request)
        return got

    def get_item(self, **request: Any) -> dict[str, Any]:
        return self._both("get_item", request)

    def put_item(self, **request: Any) -> dict[str, Any]:
        return self._both("put_item", request)

    def update_item(self, **request: Any) -> dict[str, Any]:
        return self._both("update_item", request)

    def delete_item(self, **request: Any) -> dict[str, Any]:
        return self._both("delete_item", request)

    def query(self, **request: Any) -> dict[str, Any]:
        return self._both("query", request)

    def scan(self, **request: Any) -> dict[str, Any]:
        return self._both("scan", request)

    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        return self._both("batch_get_item", request)

    def batch_write_item(self, **request: Any) -> dict[str, Any]:
        return self._both("batch_write_item", request)

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        return self._both("transact_write_items", request)

    def get_paginator(self, operation: str) -> Any:
        twin = self

        class Pages:
            def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
                while True:
                    page = getattr(twin, operation)(**request)
                    yield page
                    if "LastEvaluatedKey" not in page:
                        return
                    request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}

        return Pages()

    def tables_agree(self) -> None:
        """Every table holds the same items in both."""
        for name in NAMES.values():
            kept = [
                i
                for page in self.moto.get_paginator("scan").paginate(TableName=name)
                for i in page["Items"]
            ]
            ours = [
                i
                for page in self.engine.get_paginator("scan").paginate(TableName=name)
                for i in page["Items"]
            ]
            assert unordered(normal(ours)) == unordered(normal(kept)), name


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.fixture
def twin(s3: Any) -> Iterator[Twin]:
    moto = boto3.client("dynamodb", region_name="us-east-1")
    create_tables(moto)
    engine = SqliteTables(None, r.TABLES, NAMES)
    yield Twin(moto, engine)
    engine.close()


@pytest.fixture
def store(twin: Twin) -> DynamoStore:
    return DynamoStore(twin, JOBS, RUNS, SCHEDULE)  # type: ignore[arg-type]


# --- chronoq's store over both -------------------------------------------------------------------


def test_given_jobs_names_counts_and_idempotency_keys_when_kept_by_dynamostore_then_both_answer_alike(
    twin: Twin, store: DynamoStore
) -> None:
    jobs = [a_job(owner="alice", created_at=NOW + i * MINUTE, name=f"job-{i}") for i in range(4)]
    other = a_job(owner="bob")
    for job in [*jobs, other]:
        store.put_new_job(job)
    with pytest.raises(twin.exceptions.ConditionalCheckFailedException):
        store.put_new_job(jobs[0])

    assert store.get_job(jobs[0].id) == jobs[0]
    assert set(store.get_jobs([j.id for j in jobs], consistent=True)) == {j.id for j in jobs}
    assert [j.id for j in store.list_jobs("alice")] == [j.id for j in jobs]
    first = store.page_jobs("alice", 2)
    rest = store.page_jobs("alice", 2, first.after)
    assert [j.id for j in first.items + rest.items] == [j.id for j in jobs]
    kept = store.page_jobs("alice", 5, keep=lambda j: j.name in ("job-1", "job-3"))
    assert [j.id for j in kept.items] == [jobs[1].id, jobs[3].id]

    assert store.count_job("alice", 1, limit=2)
    assert store.count_job("alice", 1, limit=2)
    assert not store.count_job("alice", 1, limit=2)
    assert store.count_job("alice", -1)

    assert store.claim_name("alice", "job-0", jobs[0].id, NOW) is None
    assert store.claim_name("alice", "job-0", jobs[1].id, NOW) == jobs[0].id
    store.release_name("alice", "job-0", jobs[1].id)  # (not its holder: kept)
    store.release_name("alice", "job-0", jobs[0].id)

    changed = jobs[2].model_copy(update={"version": 2, "next_run_at": None})
    assert store.save_job(changed, expected_version=1)
    assert not store.save_job(changed, expected_version=1)
    assert store.delete_job(jobs[3].id)
    assert not store.delete_job(jobs[3].id)
    assert {j.id for j in store.all_jobs()} == {jobs[0].id, jobs[1].id, jobs[2].id, other.id}

    assert store.claim_key("k1", "print", NOW, NOW - MINUTE) is None
    held = store.claim_key("k1", "print", NOW, NOW - MINUTE)
    store.answer_key("k1", '{"id": "job_1"}')
    answered = store.claim_key("k1", "print", NOW, NOW + MINUTE)
    store.release_key("k1")

    assert held is not None
    assert held.answer is None
    assert answered is not None
    assert answered.answer == '{"id": "job_1"}'
    twin.tables_agree()


def test_given_the_time_index_when_kept_by_dynamostore_then_both_answer_alike(
    twin: Twin, store: DynamoStore
) -> None:
    job = a_job()
    shard = ids.shard_of(job.id, SHARDS)
    occurrences = [
        Occurrence(
            job_id=job.id,
            run_id=ids.run_id(job.id, NOW + timedelta(seconds=s)),
            scheduled_at=NOW + timedelta(seconds=s),
            priority=Priority.NORMAL,
            generation=1,
        )
        for s in range(0, 60, 5)
    ]
    store.put_occurrences(occurrences[:6], SHARDS, NOW)
    store.put_occurrences(occurrences[6:], SHARDS, NOW, pack="chain-1")

    page, after = store.occurrence_page(NOW, shard, None, 4)
    rest, end = store.occurrence_page(NOW, shard, after, 100)
    assert [o.run_id for o in page + rest] == [o.run_id for o in occurrences]
    assert end is None
    assert store.occurrences_in(NOW, shard) == occurrences

    store.open_minute(shard, NOW)
    store.advance_within(shard, NOW, "x")
    store.close_minute(shard, NOW)
    store.open_minute(shard, NOW - MINUTE)  # (never moves back)
    assert store.opened_through(shard) == NOW
    store.reopen_minute(shard, NOW)
    done, within = store.dispatch_marks(SHARDS)
    assert done[shard] == NOW - MINUTE
    assert within == {}
    twin.tables_agree()


def test_given_runs_flows_backfills_and_logs_when_kept_by_dynamostore_and_s3artifacts_then_both_answer_alike(
    twin: Twin, store: DynamoStore, s3: Any
) -> None:
    job = a_job()
    store.put_new_job(job)
    runs = [a_run(job, NOW + i * MINUTE) for i in range(4)]
    assert store.create_run(runs[0], NOW)
    assert not store.create_run(runs[0], NOW)
    assert store.claim_run(job, runs[0], NOW, NOW, exclusive=True) == "claimed"
    assert store.claim_run(job, runs[0], NOW, NOW, exclusive=True) == "held"
    assert store.claim_run(job, runs[1], NOW, NOW, exclusive=True) == "job_changed"
    assert store.hold_run(runs[2], NOW, "its flow's rate", NOW)
    assert not store.hold_run(runs[2], NOW, "its flow's rate", NOW)
    attempt = Attempt(attempt=1, started_at=NOW, finished_at=NOW + MINUTE, outcome="Cancelled")
    ended = store.end_run(runs[0], RunStatus.CANCELLED, NOW, "stop", [RunStatus.QUEUED], attempt)
    assert ended
    assert not store.end_run(runs[0], RunStatus.FAILED, NOW, "again", [RunStatus.QUEUED])
    store.release_run(job.id, runs[0].id)
    assert store.create_run(runs[3], NOW)
    assert store.delete_pending_run(job.id, runs[3].id)
    assert not store.delete_pending_run(job.id, runs[0].id)
    store.note_notification(job.id, runs[0].id, "sns", "sent")
    store.note_notification(job.id, "no-such-run", "sns", "sent")

    page = store.page_runs(job.id, job.owner, 1)
    assert [x.id for x in page.items] == [runs[2].id]
    rest = store.page_runs(job.id, job.owner, 5, page.after)
    assert [x.id for x in rest.items] == [runs[0].id]
    filtered = store.page_runs(
        job.id, job.owner, 5, where=RunFilter(statuses=frozenset({RunStatus.CANCELLED}))
    )
    assert [x.id for x in filtered.items] == [runs[0].id]
    assert [x.id for x in store.list_runs(job.id, 5)] == [runs[2].id, runs[0].id]

    before = FlowState()
    assert store.save_flow("flow#f", before, FlowState({"r1": 100}, 100, 1), NOW)
    read = store.get_flow("flow#f")
    assert store.save_flow("flow#f", read, FlowState({"r2": 101}, 101, 2, read.version), NOW)
    assert not store.save_flow("flow#f", read, FlowState({"r3": 101}, 101, 2, read.version), NOW)
    store.release_flow("flow#f", "r2")
    store.release_flow("flow#none", "r2")
    assert store.get_flow("flow#f").holders == {}

    backfills = [
        Backfill(
            id=f"bf_{i}",
            job_id=job.id,
            owner=job.owner,
            start=NOW - timedelta(hours=2),
            to=NOW,
            state=BackfillState.RUNNING,
            total=12,
            max_in_flight=10,
            schedule=CronSchedule(type="cron", expression="*/10 * * * *"),
            created_at=NOW,
        )
        for i in range(3)
    ]
    for backfill in backfills:
        store.put_backfill(backfill)
    assert store.get_backfill(job.id, "bf_1") == backfills[1]
    listed = store.page_backfills(job.id, job.owner, 2)
    assert [b.id for b in listed.items] == ["bf_2", "bf_1"]
    assert store.end_backfill(backfills[0], BackfillState.COMPLETED, NOW)
    assert not store.end_backfill(backfills[0], BackfillState.COMPLETED, NOW)
    # counted ones: begun and ended with their owner's usage, their runs' ends counted
    counted = backfills[1].model_copy(update={"id": "bf_c", "ended": 0, "total": 2})
    assert store.start_backfill(counted, store.get_usage(job.owner))
    assert not store.start_backfill(counted.model_copy(update={"id": "bf_d"}), Usage())
    made = [
        runs[0].model_copy(update={"id": f"{runs[0].id}-bf_c{i}", "backfill_id": "bf_c"})
        for i in range(2)
    ]
    for run in made:
        store.create_run(run, NOW)
        store.end_run(run, RunStatus.FAILED, NOW, "x", [run.status])
    ends = tuple(RunEnd.of(store.get_run(job.id, run.id)) for run in made)  # type: ignore[arg-type]
    assert store.count_ends(Tally(job.owner, ends[:1], counted)) is None
    assert store.count_ends(Tally(job.owner, ends, counted)) == TallyRefused(
        frozenset({made[0].id}), True
    )
    now_read = store.get_backfill(job.id, "bf_c")
    assert store.count_ends(Tally(job.owner, ends[1:], now_read, NOW)) is None
    assert store.get_backfills([(job.id, "bf_c"), (job.id, "bf_x")])[0].runs == {"FAILED": 2}
    assert store.get_usage(job.owner).running == {}
    assert store.reserve_reruns(job.owner, 3, store.get_usage(job.owner))
    store.release_reruns(job.owner, 3)
    store.release_backfill(job.owner, job.id, "bf_c")

    artifacts = S3Artifacts(twin, s3, RUNS, BUCKET)  # type: ignore[arg-type]
    artifacts.append_logs(job.id, runs[0].id, 1, ["[attempt 1] small"], None)
    artifacts.append_logs(job.id, runs[0].id, 2, ["[attempt 2] " + "x" * r.INLINE_BYTES], None)
    artifacts.append_logs(job.id, "no-such-run", 1, ["[attempt 1] lost"], None)
    assert len(artifacts.read_logs(job.id, runs[0].id)) == 2
    twin.tables_agree()


# --- the run state machine's DynamoDB tasks over both --------------------------------------------

#: What the run state machine's DynamoDB tasks read of their input.
DOCUMENT: dict[str, Any] = {
    "job_id": "job_0123456789abcdef",
    "run_id": "job_0123456789abcdef_20261126T120000Z",
    "owner": "alice",
    "priority": "normal",
    "trigger": "schedule",
    "generation": 2,
    "scheduled_at": "2026-11-26T12:00:00Z",
    "queued_at": "2026-11-26T11:59:59Z",
    "expires_at": 1_900_000_000,
    "notify": True,
    "flow": "flow#alice#f",
    "slots": "flow#alice#f",
    "parameters": '{"day":"2026-11-26"}',
    "in_flight": "flow#nalice",
    "in_flight_bucket": "b1900000000",
    "attempt": {"number": 1},
    "attempt_started": {"at": "2026-11-26T12:00:00.100Z"},
    "attempt_finished": {"at": "2026-11-26T12:00:01.100Z"},
    "error": {"Error": "States.TaskFailed", "Cause": "boom"},
    "decision": {"summary": "failed: boom"},
    "result": {
        "output": '{"ok": true}',
        "output_location": "",
        "logs": {"L": [{"S": "[attempt 1] hello"}]},
        "log_objects": {"L": []},
        "log_bytes": 18,
    },
}
ENTERED = "2026-11-26T12:00:02.000Z"


def _path(document: Any, path: str) -> Any:
    for part in path.removeprefix("$.").split("."):
        document = document[part]
    return document


def _evaluate(expression: str, document: dict[str, Any]) -> Any:
    """A Parameters value ending in ``.$``, as Step Functions evaluates those of the ASL."""
    if expression == "$$.State.EnteredTime":
        return ENTERED
    if found := re.fullmatch(r"States\.Format\('\{\}', (\$[\w.]+)\)", expression):
        return str(_path(document, found.group(1)))
    if found := re.fullmatch(r"States\.Array\((\$[\w.]+)\)", expression):
        return [_path(document, found.group(1))]
    return _path(document, expression)


def substituted(parameters: Any, document: dict[str, Any]) -> Any:
    if isinstance(parameters, dict):
        return {
            k.removesuffix(".$"): _evaluate(v, document)
            if k.endswith(".$")
            else substituted(v, document)
            for k, v in parameters.items()
        }
    if isinstance(parameters, list):
        return [substituted(v, document) for v in parameters]
    return parameters


def dynamodb_tasks() -> dict[str, tuple[str, dict[str, Any]]]:
    """Each DynamoDB task of the run state machine: (the API action, its Parameters)."""
    values = dict.fromkeys(machines.STATE_MACHINE.substitutions, "unused")
    values.update({r.ASL_RUNS_TABLE: RUNS, r.ASL_JOBS_TABLE: JOBS})
    found: dict[str, tuple[str, dict[str, Any]]] = {}

    def visit(states: dict[str, Any]) -> None:
        for name, state in states.items():
            resource = state.get("Resource", "")
            if resource.startswith("arn:aws:states:::dynamodb:"):
                found[name] = (resource.rsplit(":", 1)[1], state["Parameters"])
            for branch in state.get("Branches", []):
                visit(branch["States"])
            for key in ("Iterator", "ItemProcessor"):
                if key in state:
                    visit(state[key]["States"])

    visit(json.loads(machines.STATE_MACHINE.definition(values))["States"])
    return found


def test_given_the_run_state_machines_dynamodb_tasks_when_sent_through_a_run_then_both_answer_alike(
    twin: Twin,
) -> None:
    tasks = dynamodb_tasks()
    key = {"job_id": {"S": DOCUMENT["job_id"]}}
    twin.put_item(
        TableName=JOBS,
        Item={**key, "version": {"N": "1"}, "active_runs": {"SS": [DOCUMENT["run_id"], "other"]}},
    )
    twin.put_item(
        TableName=JOBS,
        Item={
            "job_id": {"S": DOCUMENT["flow"]},
            "holders": {"M": {DOCUMENT["run_id"]: {"N": "1"}}},
        },
    )
    outcomes: list[tuple[str, str]] = []

    def step(state: str, document: dict[str, Any] = DOCUMENT) -> None:
        action, parameters = tasks[state]
        call = {"updateItem": twin.update_item, "getItem": twin.get_item}[action]
        try:
            call(**substituted(parameters, document))
            outcomes.append((state, "ok"))
        except twin.exceptions.ConditionalCheckFailedException:
            outcomes.append((state, "refused"))

    for state in ("MarkRunning", "RecordAttempt", "KeepLogs", "StillRunning", "MarkSucceeded"):
        step(state)
    for state in ("MarkFailed", "MarkTimedOut", "MarkRunning"):
        step(state)  # (the run is over: each is refused)
    step("ReleaseFlow")
    step("ReleaseJob")
    later = {**DOCUMENT, "run_id": DOCUMENT["run_id"] + "1"}
    step("MarkRunning", later)  # (a run with no record yet)
    step("MarkFailed", later)
    step("GiveBackCount")  # (no count yet: nothing to give back)
    twin.put_item(
        TableName=JOBS,
        Item={"job_id": {"S": "flow#nalice"}, "total": {"N": "2"}, "b1900000000": {"N": "2"}},
    )
    step("GiveBackCount")

    assert set(tasks) == {
        "MarkRunning",
        "MarkSucceeded",
        "KeepLogs",
        "RecordAttempt",
        "StillRunning",
        "MarkFailed",
        "MarkTimedOut",
        "ReleaseFlow",
        "ReleaseJob",
        "GiveBackCount",
    }
    assert outcomes == [
        ("MarkRunning", "ok"),
        ("RecordAttempt", "ok"),
        ("KeepLogs", "ok"),
        ("StillRunning", "ok"),
        ("MarkSucceeded", "ok"),
        ("MarkFailed", "refused"),
        ("MarkTimedOut", "refused"),
        ("MarkRunning", "refused"),
        ("ReleaseFlow", "ok"),
        ("ReleaseJob", "ok"),
        ("MarkRunning", "ok"),
        ("MarkFailed", "ok"),
        ("GiveBackCount", "refused"),
        ("GiveBackCount", "ok"),
    ]
    twin.tables_agree()


# --- requests both refuse, and other shapes ---------------------------------------------------------


RUN_KEY = {"job_id": {"S": "j"}, "run_id": {"S": "r"}}


@pytest.mark.parametrize(
    ("operation", "request_"),
    [
        ("get_item", {"TableName": "nope", "Key": {"job_id": {"S": "j"}}}),
        ("get_item", {"TableName": RUNS, "Key": {"job_id": {"S": "j"}}}),
        ("put_item", {"TableName": RUNS, "Item": {"job_id": {"S": "j"}}}),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET status = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET a = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}, ":w": {"S": "y"}},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET a = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
                "ExpressionAttributeNames": {"#n": "x"},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET a = :v, a = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET run_id = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET m.x = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        ("update_item", {"TableName": RUNS, "Key": RUN_KEY, "UpdateExpression": "SET a = b"}),
        (
            "update_item",
            {
                "TableName": RUNS,
                "Key": RUN_KEY,
                "UpdateExpression": "SET a = :v",
                "ExpressionAttributeValues": {},
            },
        ),
        (
            "put_item",
            {
                "TableName": RUNS,
                "Item": RUN_KEY,
                "ConditionExpression": "status = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
        ),
        (
            "query",
            {
                "TableName": RUNS,
                "KeyConditionExpression": "run_id = :r",
                "ExpressionAttributeValues": {":r": {"S": "r"}},
            },
        ),
    ],
)
def test_given_a_request_dynamodb_refuses_when_sent_to_both_then_both_refuse_it_alike(
    twin: Twin, operation: str, request_: dict[str, Any]
) -> None:
    with pytest.raises(ClientError) as refused:
        getattr(twin, operation)(**request_)

    assert refused.value.response["Error"]["Code"] in (
        "ValidationException",
        "ResourceNotFoundException",
    )
    twin.tables_agree()


def test_given_a_scan_filtered_with_in_and_reads_of_binary_values_when_sent_to_both_then_both_answer_alike(
    twin: Twin,
) -> None:
    for i, status in enumerate(("SCHEDULED", "RUNNING", "SUCCEEDED", "QUEUED")):
        twin.put_item(
            TableName=RUNS,
            Item={"job_id": {"S": "j"}, "run_id": {"S": f"r{i}"}, "status": {"S": status}},
        )
    twin.put_item(
        TableName=JOBS, Item={"job_id": {"S": "idem#k"}, "answer": {"B": zlib.compress(b"{}")}}
    )

    unfinished = twin.scan(
        TableName=RUNS,
        FilterExpression="#s IN (:s, :q, :r)",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={
            ":s": {"S": "SCHEDULED"},
            ":q": {"S": "QUEUED"},
            ":r": {"S": "RUNNING"},
        },
    )
    binary = twin.get_item(TableName=JOBS, Key={"job_id": {"S": "idem#k"}})
    updated = twin.update_item(
        TableName=RUNS,
        Key={"job_id": {"S": "j"}, "run_id": {"S": "r0"}},
        UpdateExpression="SET tries = if_not_exists(tries, :zero) + :one",
        ExpressionAttributeValues={":zero": {"N": "0"}, ":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )

    assert unfinished["Count"] == 3
    assert zlib.decompress(binary["Item"]["answer"]["B"]) == b"{}"
    assert updated["Attributes"] == {"tries": {"N": "1"}}
    twin.tables_agree()


def test_given_transactions_when_sent_to_both_then_both_write_all_or_nothing_alike(
    twin: Twin,
) -> None:
    usage = {"job_id": {"S": "usage#alice"}}
    run = {"job_id": {"S": "j"}, "run_id": {"S": "j_1"}}
    twin.put_item(TableName=RUNS, Item={**run, "status": {"S": "FAILED"}})
    step = {
        "Update": {
            "TableName": JOBS,
            "Key": usage,
            "UpdateExpression": "ADD #run :ids, version :one",
            "ConditionExpression": "attribute_not_exists(version)",
            "ExpressionAttributeNames": {"#run": "running#j"},
            "ExpressionAttributeValues": {":ids": {"SS": ["bf1"]}, ":one": {"N": "1"}},
        }
    }
    mark: dict[str, Any] = {
        "Update": {
            "TableName": RUNS,
            "Key": run,
            "UpdateExpression": "SET counted = :yes",
            "ConditionExpression": "#s = :s",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":yes": {"BOOL": True}, ":s": {"S": "FAILED"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }
    put = {"Put": {"TableName": RUNS, "Item": {"job_id": {"S": "j"}, "run_id": {"S": "b"}}}}
    check = {
        "ConditionCheck": {
            "TableName": RUNS,
            "Key": run,
            "ConditionExpression": "attribute_exists(run_id)",
        }
    }

    twin.transact_write_items(TransactItems=[step, mark, put])
    twin.transact_write_items(
        TransactItems=[
            {"Delete": {"TableName": RUNS, "Key": put["Put"]["Item"]}},
            check,
        ]
    )
    refused_mark = copy.deepcopy(mark)
    refused_mark["Update"]["ExpressionAttributeValues"][":s"] = {"S": "SUCCEEDED"}
    with pytest.raises(ClientError) as refused:  # the version exists; the status is another
        twin.transact_write_items(TransactItems=[step, refused_mark, put])
    assert refused.value.response["Error"]["Code"] == "TransactionCanceledException"
    with pytest.raises(ClientError):  # one item twice
        twin.transact_write_items(TransactItems=[mark, mark])

    twin.tables_agree()
    assert twin.get_item(TableName=RUNS, Key=put["Put"]["Item"]).get("Item") is None
