"""The contract of chronoq's ASL interpreter: each path of the run state machine runs once on
moto's Step Functions (executing the deployed file) and once on LocalStepFunctions (executing
the same definition with chronoq's interpreter, its tasks calling the same moto-backed
services through aws_task_handlers), from the same run and job records, and both leave the
same records in DynamoDB (instants aside) and end with the same execution status."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.execution import batches
from chronoq.execution.contract import ExecutionInput
from chronoq.local.engine.stepfunctions import LocalStepFunctions
from chronoq.local.engine.tasks import aws_task_handlers

from tests.integration.conftest import Harness
from tests.integration.test_execution import make_job
from tests.support import Sink, wait_for

#: Fields that hold instants (they differ from one run to the next).
INSTANTS = frozenset({"started_at", "finished_at"})


@pytest.fixture
def local(harness: Harness) -> Iterator[LocalStepFunctions]:
    """LocalStepFunctions with both run state machines, as deployed to moto."""
    sfn = harness.aws.client("stepfunctions")
    engine = LocalStepFunctions(harness.clock, aws_task_handlers(harness.aws.client))
    for arn in (harness.aws.state_machine_arn, harness.aws.express_state_machine_arn):
        deployed = sfn.describe_state_machine(stateMachineArn=arn)
        engine.create_state_machine(
            name=deployed["name"],
            definition=deployed["definition"],
            roleArn=deployed["roleArn"],
            type="EXPRESS" if arn == harness.aws.express_state_machine_arn else "STANDARD",
        )
    yield engine
    engine.close()


class Records:
    """The run and job items of a path, read and put back as raw DynamoDB items."""

    def __init__(self, harness: Harness, runs: list[tuple[str, str]], jobs: list[str]) -> None:
        self.ddb = harness.aws.client("dynamodb")
        self.runs_table = harness.aws.env[r.RUNS_TABLE.env]
        self.jobs_table = harness.aws.env[r.JOBS_TABLE.env]
        self.runs = runs
        self.jobs = jobs
        self.before = self.read()

    def _keys(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for job_id, run_id in self.runs:
            yield self.runs_table, {"job_id": {"S": job_id}, "run_id": {"S": run_id}}
        for job_id in self.jobs:
            yield self.jobs_table, {"job_id": {"S": job_id}}

    def read(self) -> list[dict[str, Any] | None]:
        return [
            self.ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
            for table, key in self._keys()
        ]

    def restore(self) -> None:
        """Every item as it was before the path ran."""
        for (table, key), item in zip(self._keys(), self.before, strict=True):
            if item is None:
                self.ddb.delete_item(TableName=table, Key=key)
            else:
                self.ddb.put_item(TableName=table, Item=item)


def comparable(value: Any, key: str = "") -> Any:
    """An item without its instants; texts with their numbers and ids masked (log lines
    carry durations, causes request ids); a timeout's two names as one (the runner's own,
    AttemptTimedOut, comes first unless the machine is loaded)."""
    if isinstance(value, dict):
        return {k: comparable(v, k) for k, v in value.items() if k not in INSTANTS}
    if isinstance(value, list):
        return [comparable(v, key) for v in value]
    if isinstance(value, str):
        value = value.replace("AttemptTimedOut", "States.Timeout")
        value = re.sub(
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", value
        )
        return re.sub(r"\d+", "#", value)
    return value


def execute(sfn: Any, arn: str, document: dict[str, Any]) -> str:
    """Start an execution of ``document`` and wait for its end: its status."""
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(document, sort_keys=True))

    def ended() -> str | None:
        status: str = sfn.describe_execution(executionArn=execution["executionArn"])["status"]
        return None if status == "RUNNING" else status

    status: str = wait_for(ended, timeout=60)
    return status


Setup = Callable[[], None]


def on_both(
    harness: Harness,
    local: LocalStepFunctions,
    document: dict[str, Any],
    records: Records,
    express: bool = False,
    setup: Setup = lambda: None,
) -> list[tuple[str, Any]]:
    """The path on moto, then on the interpreter from the same records: for each, the
    execution's status and the records it left."""
    moto = harness.aws.client("stepfunctions")
    arn = harness.aws.express_state_machine_arn if express else harness.aws.state_machine_arn
    found = []
    for engine in (moto, local):
        records.restore()
        setup()
        status = execute(engine, arn, document)
        found.append((status, comparable(records.read())))
    return found


def harness_at(job: Job) -> Any:
    return job.schedule.at  # type: ignore[union-attr]


def path(harness: Harness, sink: Sink, **job_options: Any) -> tuple[Job, dict[str, Any], Records]:
    service = harness.wiring()
    job, at = make_job(service, sink, seconds_ahead=1, **job_options)  # (creation may lag)
    document = ExecutionInput.of(job, ids.run_id(job.id, at), at).document()
    records = Records(harness, [(job.id, document["run_id"])], [job.id])
    return job, document, records


def test_given_a_run_that_succeeds_when_executed_on_both_then_both_leave_the_same_records(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    _, document, records = path(harness, sink)

    moto, mine = on_both(harness, local, document, records)

    assert mine == moto
    assert moto[0] == "SUCCEEDED"
    assert moto[1][0]["status"] == {"S": "SUCCEEDED"}
    assert len(sink.hits) == 2  # once per engine


def test_given_a_target_that_fails_then_succeeds_when_retried_on_both_then_both_record_the_same_attempts(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    policy = {"max_attempts": 3, "interval_seconds": 1, "backoff_rate": 2.0, "jitter": False}
    _, document, records = path(harness, sink, retry=policy)

    def fail_twice() -> None:
        sink.statuses = [500, 503]

    moto, mine = on_both(harness, local, document, records, setup=fail_twice)

    assert mine == moto
    run = moto[1][0]
    assert run["status"] == {"S": "SUCCEEDED"}
    assert [a["M"]["outcome"]["S"] for a in run["attempts"]["L"]] == [
        "TargetError",
        "TargetError",
        "SUCCEEDED",
    ]


def test_given_a_target_that_keeps_failing_when_attempts_run_out_on_both_then_both_fail_the_run_alike(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    sink.status = 500
    _, document, records = path(harness, sink, retry={"max_attempts": 2, "interval_seconds": 1})

    moto, mine = on_both(harness, local, document, records)

    assert mine == moto
    assert moto[0] == "FAILED"
    assert moto[1][0]["status"] == {"S": "FAILED"}
    assert len(moto[1][0]["attempts"]["L"]) == 2


def test_given_a_run_that_overruns_its_timeout_when_executed_on_both_then_both_time_it_out(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    sink.delay = 10
    _, document, records = path(harness, sink, timeout=1)

    moto, mine = on_both(harness, local, document, records)

    assert mine == moto
    assert moto[0] == "FAILED"
    assert moto[1][0]["status"] == {"S": "TIMED_OUT"}


@pytest.mark.parametrize("status", ["RUNNING", "CANCELLED"])
def test_given_a_run_already_running_or_cancelled_when_executed_on_both_then_neither_starts_it(
    harness: Harness, local: LocalStepFunctions, sink: Sink, status: str
) -> None:
    job, document, _ = path(harness, sink)
    key = {"job_id": {"S": job.id}, "run_id": {"S": document["run_id"]}}
    ddb = harness.aws.client("dynamodb")
    table = harness.aws.env[r.RUNS_TABLE.env]
    ddb.put_item(TableName=table, Item={**key, "status": {"S": status}, "owner": {"S": "alice"}})
    records = Records(harness, [(job.id, document["run_id"])], [job.id])

    moto, mine = on_both(harness, local, document, records)

    assert mine == moto
    assert moto[0] == "SUCCEEDED"  # NotStarted
    assert moto[1][0]["status"] == {"S": status}
    assert sink.hits == []


def test_given_an_exclusive_job_when_its_run_ends_on_both_then_both_release_the_job(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    job, document, records = path(harness, sink, concurrency="forbid")
    service = harness.wiring()
    from chronoq.domain.runs import Trigger
    from chronoq.usecases.timeindex import new_run

    def claim() -> None:
        run = new_run(job, document["run_id"], harness_at(job), Trigger.SCHEDULE)
        now = harness.now()
        assert service.store.claim_run(job, run, now, now, exclusive=True) == "claimed"

    moto, mine = on_both(harness, local, document, records, setup=claim)

    assert mine == moto
    assert document["exclusive"] is True
    assert "active_runs" not in moto[1][1]  # the claim entered it, the end took it off


def test_given_a_run_holding_flow_slots_when_it_ends_on_both_then_both_give_them_back(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    job, document, _ = path(harness, sink)
    flows = [f"flow_{job.id}_a", f"flow_{job.id}_b"]
    document["flows"] = flows
    ddb = harness.aws.client("dynamodb")
    table = harness.aws.env[r.JOBS_TABLE.env]
    for flow in flows:
        holders = {document["run_id"]: {"S": "x"}, "someone_else": {"S": "y"}}
        ddb.put_item(TableName=table, Item={"job_id": {"S": flow}, "holders": {"M": holders}})
    records = Records(harness, [(job.id, document["run_id"])], [job.id, *flows])

    moto, mine = on_both(harness, local, document, records)

    assert mine == moto
    assert [item["holders"]["M"] for item in moto[1][2:]] == [{"someone_else": {"S": "y"}}] * 2


def test_given_a_batch_of_two_runs_when_executed_on_express_on_both_then_both_record_each_run(
    harness: Harness, local: LocalStepFunctions, sink: Sink
) -> None:
    service = harness.wiring()
    at = (harness.now() + timedelta(seconds=2)).replace(microsecond=0)
    jobs = [make_job(service, sink, at=at)[0] for _ in range(2)]
    documents = [ExecutionInput.of(j, ids.run_id(j.id, at), at).document() for j in jobs]
    records = Records(
        harness, [(j.id, d["run_id"]) for j, d in zip(jobs, documents, strict=True)], []
    )

    moto, mine = on_both(harness, local, {batches.RUNS: documents}, records, express=True)

    assert mine == moto
    assert moto[0] == "SUCCEEDED"
    assert [item["status"] for item in moto[1]] == [{"S": "SUCCEEDED"}] * 2
