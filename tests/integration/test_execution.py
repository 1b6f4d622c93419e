"""Worker, runner and the run state machine on moto: Step Functions executes the real ASL and
invokes the real runner through the local Lambda runtime; targets are a real HTTP server."""

from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import JobSpec
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.local.lambdas import FunctionError

from tests.builders import Wiring, message_for, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, load_event, wait_for


def make_job(
    service: Wiring,
    sink: Sink,
    *,
    seconds_ahead: int = 2,
    timeout: int = 300,
    path: str = "/hook",
    retry: dict[str, Any] | None = None,
) -> tuple[Any, datetime]:
    # a whole second at least ``seconds_ahead`` ahead, with room for a slow creation
    at = (datetime.now(UTC) + timedelta(seconds=seconds_ahead + 1)).replace(microsecond=0)
    job = service.jobs.create_job(
        "alice",
        JobSpec.model_validate(
            {
                "name": "t",
                "schedule": {"type": "at", "at": at.isoformat()},
                "target": {"type": "http", "url": sink.url + path, "body": {"hello": "world"}},
                "timeout_seconds": timeout,
                "retry": retry or {"max_attempts": 1},
            }
        ),
    )
    return job, at


def due_run(service: Wiring, sink: Sink) -> tuple[Any, RunMessage]:
    """A job whose run is due in two seconds, and the message that asks a worker to start it."""
    job, at = make_job(service, sink)
    message = RunMessage(
        job_id=job.id, run_id=ids.run_id(job.id, at), scheduled_at=at, queued_at=datetime.now(UTC)
    )
    return job, message


def executions(harness: Harness) -> list[dict[str, Any]]:
    return harness.executions()


def execution_status(harness: Harness, run_id: str) -> str:
    return harness.execution_status(run_id)


def finished_run(service: Wiring, run_id: str, timeout: float = 20) -> Any:
    def done() -> Any:
        run = service.runs.get_run("alice", run_id)
        return (
            run
            if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT)
            else None
        )

    return wait_for(done, timeout=timeout)


# --- worker ---------------------------------------------------------------------------------


def test_given_a_due_run_when_the_worker_gets_it_then_it_claims_it_and_starts_one_execution_named_by_the_run(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    _job, message = due_run(service, sink)

    answer = harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    assert answer == {"batchItemFailures": []}
    assert [e["run_id"] for e in executions(harness)] == [message.run_id]
    assert service.runs.get_run("alice", message.run_id).status in (
        RunStatus.QUEUED,
        RunStatus.RUNNING,
    )
    run = finished_run(service, message.run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert len(sink.hits) == 1


def test_given_duplicate_deliveries_when_the_worker_gets_them_then_the_run_executes_once(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    _job, message = due_run(service, sink)

    harness.invoke(r.WORKER_FUNCTION, worker_event(message, message))  # twice in one batch
    finished_run(service, message.run_id)
    answer = harness.invoke(r.WORKER_FUNCTION, worker_event(message))  # and again later

    assert answer == {"batchItemFailures": []}
    assert len(executions(harness)) == 1
    assert len(sink.hits) == 1


def test_given_a_worker_that_died_after_claiming_when_the_message_comes_back_then_the_run_still_starts(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, at = make_job(service, sink)
    run_id = ids.run_id(job.id, at)
    run = service.store.get_run(job.id, run_id)
    assert run is not None
    lapsed = datetime.now(UTC) - timedelta(seconds=r.CLAIM_LEASE_SECONDS)
    claimed = service.store.claim_run(job, run, lapsed, lapsed, exclusive=False)
    assert claimed == "claimed"  # claimed a lease ago, never started

    harness.invoke(
        r.WORKER_FUNCTION,
        worker_event(
            RunMessage(job_id=job.id, run_id=run_id, scheduled_at=at, queued_at=datetime.now(UTC))
        ),
    )

    assert finished_run(service, run_id).status is RunStatus.SUCCEEDED
    assert len(sink.hits) == 1


def test_given_a_malformed_record_when_the_worker_gets_a_batch_then_only_that_record_fails(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, at = make_job(service, sink)
    good = RunMessage(
        job_id=job.id, run_id=ids.run_id(job.id, at), scheduled_at=at, queued_at=datetime.now(UTC)
    )
    event = worker_event(good, good)
    event["Records"][1]["body"] = "{garbage"

    answer = harness.invoke(r.WORKER_FUNCTION, event)

    assert answer == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [e["run_id"] for e in executions(harness)] == [good.run_id]


# --- runner ---------------------------------------------------------------------------------


def runner_event(sink: Sink, **target: Any) -> dict[str, Any]:
    event = load_event("runner/attempt")
    event["target"] = {**event["target"], "url": sink.url + "/hook", **target}
    return event


def test_given_an_http_target_when_the_runner_calls_it_then_the_request_carries_the_body_headers_and_run_id(
    harness: Harness, sink: Sink
) -> None:
    result = harness.invoke(r.RUNNER_FUNCTION, runner_event(sink))

    assert json.loads(result["output"]) == {"status_code": 200, "body": '{"ok": true}'}
    assert result["output_location"] == ""
    (hit,) = sink.hits
    assert (hit.method, hit.path, json.loads(hit.body)) == ("POST", "/hook", {"report": "daily"})
    assert hit.headers["X-Chronoq-Run-Id"] == "job_0123456789abcdef_20300101T080000Z"
    assert hit.headers["X-Team"] == "data"
    assert hit.headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, "TargetError"),
        (302, "TargetError"),
        (429, "TargetError"),
        (408, "TargetError"),
        (404, "PermanentError"),
    ],
)
def test_given_a_non_2xx_answer_when_the_runner_calls_then_the_attempt_fails(
    harness: Harness, sink: Sink, status: int, error: str
) -> None:
    sink.status = status

    with pytest.raises(FunctionError) as raised:
        harness.invoke(r.RUNNER_FUNCTION, runner_event(sink))

    assert raised.value.payload["errorType"] == error
    assert f"HTTP {status}" in raised.value.payload["errorMessage"]
    assert len(sink.hits) == 1  # no redirect followed, no retry


def test_given_a_large_answer_when_the_runner_calls_then_only_an_excerpt_is_kept(
    harness: Harness, sink: Sink
) -> None:
    sink.answer = b"x" * 100_000

    result = harness.invoke(r.RUNNER_FUNCTION, runner_event(sink))

    assert len(json.loads(result["output"])["body"]) == r.OUTPUT_EXCERPT_BYTES


def test_given_a_slow_endpoint_when_the_runner_calls_then_it_gives_up_at_the_timeout(
    harness: Harness, sink: Sink
) -> None:
    sink.delay = 5
    event = runner_event(sink)
    event["timeout_seconds"] = 1

    with pytest.raises(FunctionError) as raised:
        harness.invoke(r.RUNNER_FUNCTION, event)

    assert raised.value.payload["errorType"] == "AttemptTimedOut"  # recorded TIMED_OUT


def test_given_an_unreachable_endpoint_when_the_runner_calls_then_the_attempt_fails(
    harness: Harness,
) -> None:
    event = load_event("runner/attempt")
    event["target"]["url"] = "http://127.0.0.1:9/closed"

    with pytest.raises(FunctionError, match="failed"):
        harness.invoke(r.RUNNER_FUNCTION, event)


# --- the state machine ----------------------------------------------------------------------


def start(harness: Harness, service: Wiring, job: Any, at: datetime) -> str:
    """Start the run's execution: the worker's use case, given the run's message."""
    run = service.store.get_run(job.id, ids.run_id(job.id, at))
    assert run is not None
    assert service.starter.start_run(message_for(run)) == "started"
    return run.id


def test_given_a_run_delivered_early_when_the_worker_takes_it_then_it_starts_at_its_second_and_succeeds(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, message = due_run(service, sink)
    at = message.scheduled_at

    harness.invoke(r.WORKER_FUNCTION, worker_event(message))
    run = finished_run(service, message.run_id)

    assert run.status is RunStatus.SUCCEEDED
    assert run.started_at is not None
    assert run.finished_at is not None
    assert at <= run.started_at < at + timedelta(seconds=10)  # (precision: make bench)
    assert run.started_at <= run.finished_at
    assert json.loads(run.output or "") == {"status_code": 200, "body": '{"ok": true}'}
    assert at <= sink.hits[0].at < at + timedelta(seconds=10)
    assert execution_status(harness, run.id) == "SUCCEEDED"
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


def test_given_a_failing_target_when_executed_then_the_run_is_failed_with_the_error(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.status = 503
    job, at = make_job(service, sink, seconds_ahead=1)

    run = finished_run(service, start(harness, service, job, at))

    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.startswith("TargetError: POST")
    assert "HTTP 503" in run.error
    assert execution_status(harness, run.id) == "FAILED"


def test_given_a_run_that_overruns_its_timeout_when_executed_then_it_is_killed_and_timed_out(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.delay = 10
    job, at = make_job(service, sink, seconds_ahead=1, timeout=1)

    run = finished_run(service, start(harness, service, job, at), timeout=8)

    assert run.status is RunStatus.TIMED_OUT
    assert run.finished_at is not None
    assert run.started_at is not None
    # the runner gives up just before the state machine would
    assert timedelta(seconds=0.9) <= run.finished_at - run.started_at < timedelta(seconds=8)
    assert run.error == "States.Timeout: the run exceeded its timeout_seconds"
    assert execution_status(harness, run.id) == "FAILED"


# --- retries --------------------------------------------------------------------------------


def test_given_a_target_that_fails_twice_when_retried_with_backoff_then_the_third_attempt_succeeds(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.statuses = [500, 503]
    policy = {"max_attempts": 3, "interval_seconds": 1, "backoff_rate": 2.0, "jitter": False}
    job, at = make_job(service, sink, seconds_ahead=1, retry=policy)

    run = finished_run(service, start(harness, service, job, at), timeout=30)

    assert run.status is RunStatus.SUCCEEDED
    assert [(a.attempt, a.outcome) for a in run.attempts] == [
        (1, "TargetError"),
        (2, "TargetError"),
        (3, "SUCCEEDED"),
    ]
    assert "HTTP 500" in (run.attempts[0].error or "")
    waits = [
        (b.started_at - a.finished_at).total_seconds() for a, b in itertools.pairwise(run.attempts)
    ]
    assert 1 <= waits[0] < 2  # interval_seconds
    assert 2 <= waits[1] < 3  # interval_seconds x backoff_rate
    assert len(sink.hits) == 3
    assert execution_status(harness, run.id) == "SUCCEEDED"


def test_given_a_target_that_keeps_failing_when_attempts_run_out_then_the_run_fails(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.status = 500
    job, at = make_job(
        service, sink, seconds_ahead=1, retry={"max_attempts": 2, "interval_seconds": 1}
    )

    run = finished_run(service, start(harness, service, job, at), timeout=30)

    assert run.status is RunStatus.FAILED
    assert [a.attempt for a in run.attempts] == [1, 2]
    assert len(sink.hits) == 2


@pytest.mark.parametrize("status", [400, 404, 410])
def test_given_a_client_error_when_the_target_answers_then_the_run_fails_at_once(
    harness: Harness, sink: Sink, status: int
) -> None:
    service = harness.wiring()
    sink.status = status
    job, at = make_job(
        service, sink, seconds_ahead=1, retry={"max_attempts": 5, "interval_seconds": 1}
    )

    run = finished_run(service, start(harness, service, job, at), timeout=30)

    assert run.status is RunStatus.FAILED
    assert run.error is not None
    assert run.error.startswith("PermanentError")
    assert len(run.attempts) == 1
    assert len(sink.hits) == 1


def test_given_attempts_that_time_out_when_retried_then_each_is_killed_and_the_run_times_out(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.delay = 10
    job, at = make_job(
        service, sink, seconds_ahead=1, timeout=1, retry={"max_attempts": 2, "interval_seconds": 1}
    )

    run = finished_run(service, start(harness, service, job, at), timeout=30)

    assert run.status is RunStatus.TIMED_OUT
    assert [a.outcome for a in run.attempts] == ["AttemptTimedOut", "AttemptTimedOut"]
    assert all(0.9 <= (a.finished_at - a.started_at).total_seconds() < 8 for a in run.attempts)


def test_given_two_workers_getting_the_same_run_at_once_when_they_start_it_then_it_executes_once(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    _job, message = due_run(service, sink)
    barrier = threading.Barrier(2)

    def worker() -> Any:
        barrier.wait()
        return harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda _: worker(), range(2)))

    # one starts it; the other finds it started, or finds the first one's claim and hands
    # the message back for later (which of the two depends on timing)
    assert sorted(len(a["batchItemFailures"]) for a in answers) in ([0, 0], [0, 1])
    assert finished_run(service, message.run_id).status is RunStatus.SUCCEEDED
    assert len(executions(harness)) == 1
    assert len(sink.hits) == 1
