"""Python targets: registered tasks only, run by the runner inside the real state machine."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.local.lambdas import FunctionError

from tests.integration.conftest import Harness
from tests.support import api_event, load_event


def python_job(harness: Harness, task: str, args: dict[str, Any], **extra: Any) -> tuple[int, Any]:
    at = (harness.now() + timedelta(days=1)).replace(microsecond=0)
    return harness.api(
        api_event(
            "create_at_job",
            body={
                "name": "py",
                "schedule": {"type": "at", "at": at.isoformat()},
                "target": {"type": "python", "task": task, "args": args},
                "retry": {"max_attempts": 1},
                **extra,
            },
        )
    )


@pytest.mark.parametrize(
    "task", ["os:system", "subprocess:run", "chronoq.tasks:lookup", "builtins:eval"]
)
def test_given_a_task_that_is_not_registered_when_a_job_names_it_then_422_names_target_task(
    harness: Harness, task: str
) -> None:
    status, body = python_job(harness, task, {"cmd": "id"})

    assert status == 422
    assert body["error"] == {
        "code": "invalid_field",
        "field": "target.task",
        "message": f"{task} is not a registered task",
    }


def test_given_the_echo_task_when_run_then_its_return_value_is_the_output(harness: Harness) -> None:
    _, job = python_job(harness, "chronoq.tasks:echo", {"greeting": "hello"})

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    output = json.loads(run.output or "")["result"]
    assert output == {"args": {"greeting": "hello"}, "job_id": job["id"], "run_id": run.id}


def test_given_a_failing_task_when_run_then_the_run_fails_with_its_error(harness: Harness) -> None:
    _, job = python_job(harness, "chronoq.tasks:fail", {"message": "disk full"})

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert run.error == "RuntimeError: disk full"


def test_given_a_task_that_overruns_when_run_then_it_is_timed_out(harness: Harness) -> None:
    _, job = python_job(harness, "chronoq.tasks:sleep", {"seconds": 5}, timeout_seconds=1)

    run = harness.run(job)

    assert run.status is RunStatus.TIMED_OUT
    # the runner gives up just before the state machine's own timeout; on a loaded machine
    # the state machine's may come first
    (outcome,) = [a.outcome for a in run.attempts]
    assert outcome in ("AttemptTimedOut", "States.Timeout")
    lines = harness.wiring().runs.run_logs("alice", run.id)  # what it logged is kept
    assert any("INFO sleeping 5.0 s" in line for line in lines)
    if outcome == "AttemptTimedOut":
        assert any("raised AttemptTimedOut" in line for line in lines)


def test_given_a_deployments_own_task_module_when_configured_then_its_tasks_run(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.aws.configure(r.ENV_TASK_MODULES, "tests.example_tasks")
    status, job = python_job(harness, "tests.example_tasks:double", {"n": 21})
    assert status == 201

    run = harness.run(job)

    assert json.loads(run.output or "")["result"] == {"doubled": 42, "attempt": 1}


def test_given_an_unregistered_task_when_the_runner_is_asked_directly_then_it_refuses(
    harness: Harness,
) -> None:
    event = load_event("runner/attempt")
    event["target"] = {"type": "python", "task": "os:system", "args": {"command": "id"}}

    with pytest.raises(FunctionError) as raised:
        harness.invoke(r.RUNNER_FUNCTION, event)

    assert raised.value.payload["errorType"] == "PermanentError"


def test_given_a_task_that_fails_twice_when_retried_then_it_succeeds_on_the_third_attempt(
    harness: Harness,
) -> None:
    _, job = python_job(
        harness,
        "chronoq.tasks:flaky",
        {"succeed_on_attempt": 3},
        retry={"max_attempts": 3, "interval_seconds": 1, "jitter": False},
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    assert [a.outcome for a in run.attempts] == ["RuntimeError", "RuntimeError", "SUCCEEDED"]
    assert json.loads(run.output or "")["result"] == {"attempt": 3}


def test_given_a_task_raising_its_own_permanent_error_when_run_then_it_is_not_retried(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.aws.configure(r.ENV_TASK_MODULES, "tests.example_tasks")
    job = harness.create_job(
        {"type": "python", "task": "tests.example_tasks:misconfigured"},
        retry={"max_attempts": 3, "interval_seconds": 1},
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert [a.outcome for a in run.attempts] == ["PermanentError"]
    assert run.attempts[0].error == ("PermanentError: MissingSetting: REPORT_BUCKET is not set")
    lines = harness.wiring().runs.run_logs("alice", run.id)
    assert [line.split("] ", 1)[1] for line in lines if "line of the problem" in line] == [
        "ERROR first line of the problem",
        "second line of the problem",
    ]
    assert all("[attempt 1]" in line for line in lines)  # every line keeps its prefix
