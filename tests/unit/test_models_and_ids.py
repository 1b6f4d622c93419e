from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobSpec, JobState, Priority
from chronoq.domain.targets import HttpTarget
from chronoq.domain.time import format_instant
from chronoq.execution.contract import ExecutionInput, describe_error
from chronoq.usecases.delays import delay_seconds
from pydantic import ValidationError

SPEC = {
    "name": "report",
    "schedule": {"type": "cron", "expression": "*/5 * * * *"},
    "target": {"type": "http", "url": "https://example.com/hook"},
}


def test_given_a_minimal_spec_when_validated_then_defaults_apply() -> None:
    spec = JobSpec.model_validate(SPEC)
    assert spec.priority is Priority.NORMAL
    assert spec.timeout_seconds == 60
    assert isinstance(spec.target, HttpTarget)
    assert spec.target.method == "POST"


def test_given_a_container_target_without_timeout_when_validated_then_its_default_is_longer() -> (
    None
):
    container = {"type": "container", "image": "busybox", "command": ["true"]}
    assert JobSpec.model_validate({**SPEC, "target": container}).timeout_seconds == 300
    given = {**SPEC, "target": container, "timeout_seconds": 30}
    assert JobSpec.model_validate(given).timeout_seconds == 30


def _input(**spec: object) -> ExecutionInput:
    job = Job.model_validate(
        {
            **SPEC,
            **spec,
            "id": "j1",
            "owner": "alice",
            "state": JobState.ACTIVE,
            "version": 1,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC),
            "updated_at": datetime(2026, 1, 1, tzinfo=UTC),
        }
    )
    return ExecutionInput.of(job, "r1", datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("spec", "express"),
    [
        ({}, True),  # the defaults: 3 attempts of 60 s, waits of 10 and 20 s = 210 s
        ({"timeout_seconds": 70}, True),  # 210 + 30 = 240 s: the budget exactly
        ({"timeout_seconds": 71}, False),
        ({"timeout_seconds": 200, "retry": {"max_attempts": 1}}, True),
        ({"retry": {"max_attempts": 4}}, False),  # 240 + 10 + 20 + 40
        (
            {"target": {"type": "container", "image": "b", "command": ["x"]}, "timeout_seconds": 5},
            False,
        ),
    ],
)
def test_given_a_run_when_its_worst_case_is_counted_then_express_only_within_the_budget(
    spec: dict[str, object], express: bool
) -> None:
    assert _input(**spec).fits_express() is express


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"priority": "urgent"}, "priority"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"timeout_seconds": 901}, "timeout_seconds"),
        ({"name": ""}, "name"),
        ({"target": {"type": "http", "url": "file:///etc/passwd"}}, "url"),
        ({"target": {"type": "http", "url": "https://x.example", "method": "TRACE"}}, "method"),
        ({"owner": "mallory"}, "owner"),
    ],
)
def test_given_a_bad_field_when_validated_then_the_error_names_it(
    change: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        JobSpec.model_validate({**SPEC, **change})
    assert field in json.dumps([e["loc"] for e in raised.value.errors()])


def test_given_a_job_and_an_instant_when_making_run_ids_then_they_are_deterministic_and_time_ordered() -> (
    None
):
    first = ids.run_id("job_00000000000000aa", datetime(2026, 11, 25, 21, 48, tzinfo=UTC))
    again = ids.run_id("job_00000000000000aa", datetime(2026, 11, 25, 22, 48, tzinfo=UTC))
    assert first == ids.run_id("job_00000000000000aa", datetime(2026, 11, 25, 21, 48, tzinfo=UTC))
    assert first < again
    assert ids.job_id_of_run(first) == "job_00000000000000aa"


@pytest.mark.parametrize("bad", ["", "nope", "job_x", "x_20261125T214800Z", "job_ab_2026"])
def test_given_something_that_is_not_a_run_id_when_parsed_then_it_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a run id"):
        ids.job_id_of_run(bad)


def test_given_many_jobs_when_sharded_then_every_shard_is_used_and_a_job_always_maps_the_same() -> (
    None
):
    jobs = [ids.new_job_id() for _ in range(400)]
    shards = {ids.shard_of(j, 8) for j in jobs}
    assert shards == set(range(8))
    assert all(ids.shard_of(j, 8) == ids.shard_of(j, 8) for j in jobs)


def test_given_an_instant_when_bucketed_then_the_key_is_its_minute_and_shard() -> None:
    key = ids.bucket(datetime(2026, 11, 25, 21, 48, 59, tzinfo=UTC), 7)
    assert key == "202611252148#07"
    assert ids.minute_of_bucket(key) == datetime(2026, 11, 25, 21, 48, tzinfo=UTC)


def test_given_due_times_when_computing_the_sqs_delay_then_runs_arrive_in_the_second_before_within_sqs_limits() -> (
    None
):
    now = datetime(2026, 11, 25, 21, 48, 0, 400000, tzinfo=UTC)
    due = datetime(2026, 11, 25, 21, 49, tzinfo=UTC)
    # visible at 21:48:59.4: the worker waits 0.6 s for the run's second
    for priority in Priority:
        lead = r.DISPATCH_LEAD_SECONDS[priority.value]
        assert delay_seconds(due, now, priority) == 59 - lead
    assert delay_seconds(datetime(2026, 11, 25, 21, 48, 1, tzinfo=UTC), now, Priority.NORMAL) == 0
    assert delay_seconds(datetime(2026, 11, 25, 21, 40, tzinfo=UTC), now, Priority.NORMAL) == 0
    assert delay_seconds(datetime(2026, 11, 26, tzinfo=UTC), now, Priority.LOW) == 900


def test_given_step_functions_errors_when_described_then_the_message_is_readable() -> None:
    cause = json.dumps({"errorType": "TargetError", "errorMessage": "HTTP 500", "stackTrace": []})
    assert describe_error("TargetError", cause) == "TargetError: HTTP 500"
    assert (describe_error("States.Timeout", "") or "").startswith("States.Timeout")
    assert (
        describe_error("Lambda.ServiceException", "throttled")
        == "Lambda.ServiceException: throttled"
    )
    assert describe_error(None, None) is None


def test_given_a_job_when_building_the_execution_input_then_it_is_the_same_every_time() -> None:
    now = datetime(2026, 11, 25, 21, 48, tzinfo=UTC)
    job = Job.model_validate(
        {
            **SPEC,
            "id": "job_00000000000000aa",
            "owner": "alice",
            "state": JobState.ACTIVE,
            "next_run_at": now,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
    )
    run = ids.run_id(job.id, now)
    assert (
        ExecutionInput.of(job, run, now).document() == ExecutionInput.of(job, run, now).document()
    )
    assert (
        ExecutionInput.of(job, run, now).document()["scheduled_at"]
        == format_instant(now)
        == "2026-11-25T21:48:00Z"
    )
    assert (
        ExecutionInput.of(job, run, now).document()["target"]["url"] == "https://example.com/hook"
    )


CONTAINER = {"type": "container", "image": "alpine", "command": ["true"]}


def test_given_a_container_target_when_its_timeout_is_hours_then_it_is_accepted() -> None:
    spec = JobSpec.model_validate({**SPEC, "target": CONTAINER, "timeout_seconds": 6 * 3600})

    assert spec.timeout_seconds == 6 * 3600


@pytest.mark.parametrize(
    "target",
    [
        SPEC["target"],
        {"type": "python", "task": "chronoq.tasks:echo"},
        {"type": "lambda", "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:f"},
    ],
)
def test_given_a_target_run_by_lambda_when_its_timeout_exceeds_900_then_it_is_refused(
    target: dict[str, object],
) -> None:
    with pytest.raises(ValidationError) as raised:
        JobSpec.model_validate({**SPEC, "target": target, "timeout_seconds": 901})

    assert [e["loc"] for e in raised.value.errors()] == [("timeout_seconds",)]


def test_given_message_targets_when_prepared_then_strings_go_as_they_are_and_the_rest_as_json() -> (
    None
):
    job = Job.model_validate(
        {
            **SPEC,
            "target": {"type": "sqs", "queue_url": "https://q/123456789012/q", "message": "hi"},
            "id": "job_0123456789abcdef",
            "owner": "alice",
            "state": JobState.ACTIVE,
            "version": 1,
            "created_at": datetime(2030, 1, 1, tzinfo=UTC),
            "updated_at": datetime(2030, 1, 1, tzinfo=UTC),
        }
    )
    at = datetime(2030, 1, 1, 8, tzinfo=UTC)

    assert ExecutionInput.of(job, "r", at).document()["delivery"] == {"message": "hi"}
    as_json = job.model_copy(update={"target": job.target.model_copy(update={"message": {"a": 1}})})
    assert ExecutionInput.of(as_json, "r", at).document()["delivery"] == {"message": '{"a": 1}'}
    container = job.model_copy(
        update={"target": JobSpec.model_validate({**SPEC, "target": CONTAINER}).target}
    )
    assert ExecutionInput.of(container, "r", at).document()["delivery"] == {}


def test_given_a_heartbeat_not_shorter_than_the_timeout_when_validated_then_timeout_is_refused() -> (
    None
):
    target = {**CONTAINER, "heartbeat_seconds": 60}

    with pytest.raises(ValidationError) as raised:
        JobSpec.model_validate({**SPEC, "target": target, "timeout_seconds": 60})

    assert [e["loc"] for e in raised.value.errors()] == [("timeout_seconds",)]
    assert JobSpec.model_validate({**SPEC, "target": target, "timeout_seconds": 61})
