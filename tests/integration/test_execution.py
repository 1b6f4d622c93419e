"""Worker, runner and the run state machines on moto: Step Functions executes the real ASL
(EXPRESS for runs that fit it, STANDARD for the others) and invokes the real runner through
the local Lambda runtime; targets are a real HTTP server.

Why this module is long: the worker, the runner, the state machine and its retries are one path
of a run, each tested where it hands over to the next, with the same target servers and
helpers."""

from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids, inflight
from chronoq.domain.jobs import Job, JobSpec
from chronoq.domain.runs import RunMessage, RunStatus, Trigger
from chronoq.execution.contract import ExecutionInput
from chronoq.local.lambdas import FunctionError
from chronoq.metrics import TIMEOUTS
from chronoq.usecases.timeindex import new_run

from tests.builders import Wiring, unique_name, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, load_event, wait_for

#: A timeout that puts a run (of one attempt) on the STANDARD state machine.
LONGER_THAN_EXPRESS = r.EXPRESS_BUDGET_SECONDS + 1

#: The job settings that put its runs on each state machine (a default job fits EXPRESS).
ON_MACHINE: dict[str, dict[str, Any]] = {
    "EXPRESS": {},
    "STANDARD": {"timeout": LONGER_THAN_EXPRESS},
}


def make_job(
    service: Wiring,
    sink: Sink,
    *,
    seconds_ahead: int = 2,
    timeout: int | None = None,
    path: str = "/hook",
    retry: dict[str, Any] | None = None,
    at: datetime | None = None,
    **extra: Any,
) -> tuple[Job, datetime]:
    """A one-time http job due on a whole second at least ``seconds_ahead`` ahead (with room
    for a slow creation), or ``at``, with the default timeout unless ``timeout`` says: its
    runs fit EXPRESS."""
    if at is None:
        at = (service.clock() + timedelta(seconds=seconds_ahead + 1)).replace(microsecond=0)
    job = service.jobs.create_job(
        "alice",
        JobSpec.model_validate(
            {
                "name": unique_name(),
                "schedule": {"type": "at", "at": at.isoformat()},
                "target": {"type": "http", "url": sink.url + path, "body": {"hello": "world"}},
                "retry": retry or {"max_attempts": 1},
                **({} if timeout is None else {"timeout_seconds": timeout}),
                **extra,
            }
        ),
    )
    return job, at


def message_of(job: Job, at: datetime) -> RunMessage:
    """The message that asks a worker to start the job's scheduled run at ``at`` (the run
    has no record before it starts: the time index carries it)."""
    return RunMessage(job_id=job.id, run_id=ids.run_id(job.id, at), scheduled_at=at, queued_at=at)


def due_run(service: Wiring, sink: Sink, **extra: Any) -> tuple[Job, RunMessage]:
    """A job whose run is due in two seconds, and the message that asks a worker to start it."""
    job, at = make_job(service, sink, **extra)
    return job, message_of(job, at)


def in_its_last_second(harness: Harness, at: datetime) -> None:
    """The deployment's clock on to when SQS would deliver a run due at ``at``: the second
    before it is due (the worker waits at most that second for it)."""
    harness.clock.advance_to(at - timedelta(seconds=1))


def executions(harness: Harness) -> list[dict[str, Any]]:
    return harness.executions()


def execution_status(harness: Harness, run_id: str) -> str:
    return harness.execution_status(run_id)


def finished_run(service: Wiring, run_id: str, timeout: float = 60) -> Any:
    """The run once it has ended (it may have no record yet: it is recorded when it starts)."""

    def done() -> Any:
        run = service.store.get_run(ids.job_id_of_run(run_id), run_id)
        ended = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT)
        return run if run is not None and run.status in ended else None

    return wait_for(done, timeout=timeout)


# --- worker ---------------------------------------------------------------------------------


def test_given_a_due_run_of_an_allow_job_when_the_worker_gets_it_then_it_starts_one_express_execution_without_writing_and_the_state_machine_records_the_run(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, message = due_run(service, sink)  # concurrency allow and the default timeout
    before = service.store.get_job(job.id)

    answer = harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    assert answer == {"batchItemFailures": []}
    assert [(e["run_id"], e["machine"]) for e in executions(harness)] == [
        (message.run_id, "EXPRESS")
    ]
    run = finished_run(service, message.run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert len(sink.hits) == 1
    # No claim: the run's record is created RUNNING by the state machine's first state, and
    # its outcome is written with the attempt's log lines in one more write.
    assert harness.run_writes(run.id) == [("INSERT", "RUNNING"), ("MODIFY", "SUCCEEDED")]
    # (what the message carried: the state machine wrote it from the execution's input)
    assert (run.trigger, run.scheduled_at, run.generation) == (
        Trigger.SCHEDULE,
        message.scheduled_at,
        1,
    )
    assert run.queued_at is not None
    assert abs(run.queued_at - message.queued_at) < timedelta(milliseconds=1)
    assert [(a.attempt, a.outcome) for a in run.attempts] == [(1, "SUCCEEDED")]
    assert any("[attempt 1] POST" in line for line in service.runs.run_logs("alice", run.id))
    # nor any write to the job: it never lists the run as active
    assert service.store.get_job(job.id) == before
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


@pytest.mark.parametrize("concurrency", ["forbid", "replace"])
def test_given_a_due_run_of_an_exclusive_job_when_the_worker_gets_it_then_it_claims_it_queued_among_the_jobs_active_runs_and_starts_one_execution(
    harness: Harness, sink: Sink, concurrency: str
) -> None:
    service = harness.wiring()
    sink.delay = 30  # the attempt is held until the test lets it answer
    job, message = due_run(service, sink, concurrency=concurrency)

    answer = harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    assert answer == {"batchItemFailures": []}
    assert [e["run_id"] for e in executions(harness)] == [message.run_id]
    wait_for(lambda: sink.hits)
    assert service.runs.get_run("alice", message.run_id).status is RunStatus.RUNNING
    assert service.jobs.get_job("alice", job.id).active_runs == {message.run_id}
    sink.closed.set()  # the attempt answers
    assert finished_run(service, message.run_id).status is RunStatus.SUCCEEDED
    # the claim recorded it QUEUED; the state machine RUNNING, then its outcome
    assert harness.run_writes(message.run_id) == [
        ("INSERT", "QUEUED"),
        ("MODIFY", "RUNNING"),
        ("MODIFY", "SUCCEEDED"),
    ]
    # and at its end took it off the job's active runs
    wait_for(lambda: service.jobs.get_job("alice", job.id).active_runs == frozenset())
    assert len(sink.hits) == 1


@pytest.mark.parametrize("machine", ["EXPRESS", "STANDARD"])
def test_given_duplicate_deliveries_when_the_worker_gets_them_then_the_run_executes_once(
    harness: Harness, sink: Sink, machine: str
) -> None:
    service = harness.wiring()
    _job, message = due_run(service, sink, **ON_MACHINE[machine])

    # twice in one batch: the worker claims nothing for an allow job, so it may start both
    first = harness.invoke(r.WORKER_FUNCTION, worker_event(message, message))
    finished_run(service, message.run_id)
    again = harness.invoke(r.WORKER_FUNCTION, worker_event(message))  # and again later

    assert first == again == {"batchItemFailures": []}
    # STANDARD runs one execution per name (the run id); on EXPRESS each copy may start (in
    # the batch's execution, or in one of its own later), and of those only one gets past
    # recording the run RUNNING: the target is called once and the run recorded once
    assert {e["machine"] for e in executions(harness)} == {machine}
    if machine == "STANDARD":
        assert len(executions(harness)) == 1
    assert harness.times_run(message.run_id) == 1
    assert len(sink.hits) == 1
    # (on STANDARD the runner keeps the attempt's log lines itself: a stopped execution
    # would not write them with the outcome)
    logs_kept = [("MODIFY", "RUNNING")] if machine == "STANDARD" else []
    assert harness.run_writes(message.run_id) == [
        ("INSERT", "RUNNING"),
        *logs_kept,
        ("MODIFY", "SUCCEEDED"),
    ]


def test_given_two_executions_of_one_express_run_when_both_start_then_only_one_gets_past_recording_it_running_and_the_target_is_called_once(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, at = make_job(service, sink, seconds_ahead=1)  # (creation may lag)
    run_id = ids.run_id(job.id, at)
    # each start counted among alice's runs in flight, as a worker would
    key, bucket = inflight.item_key("alice"), inflight.end_bucket(harness.now(), 600)
    assert service.store.take_in_flight(key, {bucket: 2}, 10, harness.now()) is not None
    document = ExecutionInput.of(job, run_id, at, in_flight=(key, bucket))
    assert document.fits_express()

    # (EXPRESS starts at least once: AWS may run an execution twice, or it is started again)
    assert [service.executor.start(run_id, document) for _ in range(2)] == [True, True]

    both = executions(harness)
    assert [(e["run_id"], e["machine"]) for e in both] == [(run_id, "EXPRESS")] * 2
    assert both[0]["arn"] != both[1]["arn"]
    assert finished_run(service, run_id).status is RunStatus.SUCCEEDED
    assert harness.times_run(run_id) == 1
    # the other found the run recorded, gave its count back, and ended at once
    ends = sorted(harness.states_entered(e["arn"], run_id)[-1] for e in both)
    assert ends == ["NotStarted", "Succeeded"]
    # (each first waits for the run's second, OnItsSecond)
    assert ["OnItsSecond", "MarkRunning", "GiveBackIfCounted", "GiveBackCount", "NotStarted"] in [
        harness.states_entered(e["arn"], run_id) for e in both
    ]
    # and the run that ran gives its own back as its end reaches the notifier
    assert service.store.get_in_flight(key).total == 1
    harness.notify()
    assert service.store.get_in_flight(key).total == 0
    assert harness.run_writes(run_id) == [("INSERT", "RUNNING"), ("MODIFY", "SUCCEEDED")]
    assert len(sink.hits) == 1


def test_given_a_worker_that_died_after_claiming_when_the_message_comes_back_then_the_run_still_starts(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, at = make_job(service, sink, concurrency="forbid")  # (only these are claimed)
    run = new_run(job, ids.run_id(job.id, at), at, Trigger.SCHEDULE)
    lapsed = harness.now() - timedelta(seconds=r.CLAIM_LEASE_SECONDS)
    claimed = service.store.claim_run(job, run, lapsed, lapsed, exclusive=True)
    assert claimed == "claimed"  # claimed a lease ago, never started
    assert service.runs.get_run("alice", run.id).status is RunStatus.QUEUED

    harness.invoke(r.WORKER_FUNCTION, worker_event(message_of(job, at)))

    assert finished_run(service, run.id).status is RunStatus.SUCCEEDED
    assert len(sink.hits) == 1
    assert [e["run_id"] for e in executions(harness)] == [run.id]
    wait_for(lambda: service.jobs.get_job("alice", job.id).active_runs == frozenset())


def test_given_a_malformed_record_when_the_worker_gets_a_batch_then_only_that_record_fails(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    job, at = make_job(service, sink)
    good = message_of(job, at)
    event = worker_event(good, good)
    event["Records"][1]["body"] = "{garbage"

    answer = harness.invoke(r.WORKER_FUNCTION, event)

    assert answer == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert [e["run_id"] for e in executions(harness)] == [good.run_id]


# --- runner ---------------------------------------------------------------------------------


def runner_event(sink: Sink, **target: Any) -> dict[str, Any]:
    event = load_event("runner/attempt")  # (its target: a python task, called offline)
    event["target"] = {**HTTP_TARGET, "url": sink.url + "/hook", **target}
    return event


#: An http target like the sample's task: a POST with a header and a JSON body.
HTTP_TARGET = {
    "type": "http",
    "method": "POST",
    "headers": {"X-Team": "data"},
    "body": {"report": "daily"},
}


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
    event["target"] = {**HTTP_TARGET, "url": "http://127.0.0.1:9/closed"}

    with pytest.raises(FunctionError, match="failed"):
        harness.invoke(r.RUNNER_FUNCTION, event)


# --- the state machine ----------------------------------------------------------------------


def start(harness: Harness, service: Wiring, job: Job, at: datetime) -> str:
    """Start the run's execution: the worker's use case, given the run's message."""
    message = message_of(job, at)
    assert service.starter.start_run(message) == "started"
    return message.run_id


@pytest.mark.parametrize("machine", ["EXPRESS", "STANDARD"])
def test_given_a_run_delivered_early_when_the_worker_takes_it_then_it_starts_at_its_second_and_succeeds(
    harness: Harness, sink: Sink, machine: str
) -> None:
    service = harness.wiring()
    job, message = due_run(service, sink, **ON_MACHINE[machine])
    at = message.scheduled_at

    in_its_last_second(harness, at)
    harness.invoke(r.WORKER_FUNCTION, worker_event(message))
    run = finished_run(service, message.run_id)

    assert run.status is RunStatus.SUCCEEDED
    assert run.started_at is not None
    assert run.finished_at is not None
    assert at <= run.started_at  # not before its second (how soon after: make bench)
    assert run.started_at <= run.finished_at
    assert json.loads(run.output or "") == {"status_code": 200, "body": '{"ok": true}'}
    assert len(sink.hits) == 1
    (execution,) = executions(harness)
    assert execution["machine"] == machine
    if machine == "STANDARD":  # named by the run: starting it again starts nothing more
        assert execution["arn"].endswith(f":{run.id}")
    assert execution_status(harness, run.id) == "SUCCEEDED"
    assert harness.end_state(run.id) == "Succeeded"
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


def test_given_a_batch_of_runs_due_in_the_same_second_when_the_worker_takes_it_then_those_that_fit_express_start_in_one_execution_and_each_runs_once_on_time(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    at = (harness.now() + timedelta(seconds=4)).replace(microsecond=0)
    express = [make_job(service, sink, at=at)[0] for _ in range(2)]
    (standard, _) = make_job(service, sink, at=at, **ON_MACHINE["STANDARD"])
    messages = [message_of(job, at) for job in [*express, standard]]

    in_its_last_second(harness, at)
    answer = harness.invoke(r.WORKER_FUNCTION, worker_event(*messages))

    assert answer == {"batchItemFailures": []}
    runs = [finished_run(service, m.run_id) for m in messages]
    assert [run.status for run in runs] == [RunStatus.SUCCEEDED] * 3
    for run in runs:
        assert run.started_at is not None
        assert at <= run.started_at
    started = {e["run_id"]: e for e in executions(harness)}
    assert {run_id: (e["machine"], e["batch"]) for run_id, e in started.items()} == {
        messages[0].run_id: ("EXPRESS", 2),
        messages[1].run_id: ("EXPRESS", 2),
        messages[2].run_id: ("STANDARD", 1),
    }
    assert started[messages[0].run_id]["arn"] == started[messages[1].run_id]["arn"]  # together
    assert [harness.times_run(m.run_id) for m in messages] == [1, 1, 1]
    assert sorted(hit.headers["X-Chronoq-Run-Id"] for hit in sink.hits) == sorted(
        m.run_id for m in messages
    )


def test_given_a_failing_target_when_executed_then_the_run_is_failed_with_the_error_and_the_attempts_log(
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
    assert harness.end_state(run.id) == "Failed"  # (an EXPRESS batch itself succeeds)
    # the runner kept the failed attempt's log itself (the state machine writes only a
    # succeeded attempt's)
    assert any("HTTP 503" in line for line in service.runs.run_logs("alice", run.id))


def test_given_a_run_that_overruns_its_timeout_when_executed_then_it_is_killed_and_timed_out(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.delay = 10
    job, at = make_job(service, sink, seconds_ahead=1, timeout=1)

    run = finished_run(service, start(harness, service, job, at))

    assert run.status is RunStatus.TIMED_OUT
    assert run.finished_at is not None
    assert run.started_at is not None
    # the runner gives up just before the state machine would, not before its timeout's end
    assert run.finished_at - run.started_at >= timedelta(seconds=0.9)
    assert run.error == "States.Timeout: the run exceeded its timeout_seconds"
    assert harness.end_state(run.id) == "TimedOut"


# --- retries --------------------------------------------------------------------------------


def test_given_a_target_that_fails_twice_when_retried_with_backoff_then_the_third_attempt_succeeds(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.statuses = [500, 503]
    policy = {"max_attempts": 3, "interval_seconds": 1, "backoff_rate": 2.0, "jitter": False}
    job, at = make_job(service, sink, seconds_ahead=1, retry=policy)

    run = finished_run(service, start(harness, service, job, at))

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
    # interval_seconds, then interval_seconds x backoff_rate (the upper bounds leave room
    # for a loaded machine, and still tell these from the default 10 s interval)
    assert 1 <= waits[0] < 5
    assert 2 <= waits[1] < 6
    assert len(sink.hits) == 3
    assert harness.end_state(run.id) == "Succeeded"
    # each attempt's log lines are kept: the failed ones by the runner, the succeeded one by
    # the state machine with the outcome
    logs = service.runs.run_logs("alice", run.id)
    assert [n for n in (1, 2, 3) if any(f"[attempt {n}] POST" in line for line in logs)] == [
        1,
        2,
        3,
    ]


def test_given_a_target_that_keeps_failing_when_attempts_run_out_then_the_run_fails(
    harness: Harness, sink: Sink
) -> None:
    service = harness.wiring()
    sink.status = 500
    job, at = make_job(
        service, sink, seconds_ahead=1, retry={"max_attempts": 2, "interval_seconds": 1}
    )

    run = finished_run(service, start(harness, service, job, at))

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

    run = finished_run(service, start(harness, service, job, at))

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

    run = finished_run(service, start(harness, service, job, at))

    assert run.status is RunStatus.TIMED_OUT
    # each attempt ends at its timeout: the runner gives up a tenth of a second before the
    # state machine's own timeout would (AttemptTimedOut); on a loaded machine the state
    # machine's may come first (States.Timeout). Either is the attempt's timeout, retried.
    assert len(run.attempts) == 2
    assert all(a.outcome in TIMEOUTS for a in run.attempts), run.attempts
    assert all((a.finished_at - a.started_at).total_seconds() >= 0.9 for a in run.attempts)


@pytest.mark.parametrize(
    ("machine", "concurrency"),
    [("EXPRESS", "allow"), ("STANDARD", "allow"), ("EXPRESS", "forbid")],
)
def test_given_two_workers_getting_the_same_run_at_once_when_they_start_it_then_it_executes_once(
    harness: Harness, sink: Sink, machine: str, concurrency: str
) -> None:
    service = harness.wiring()
    _job, message = due_run(service, sink, concurrency=concurrency, **ON_MACHINE[machine])
    barrier = threading.Barrier(2)

    def worker() -> Any:
        barrier.wait()
        return harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda _: worker(), range(2)))

    # allow: both may start it (nothing is claimed); forbid: one claims and starts it, the
    # other finds it started, or finds the claim and hands the message back for later
    assert sorted(len(a["batchItemFailures"]) for a in answers) in ([0, 0], [0, 1])
    assert finished_run(service, message.run_id).status is RunStatus.SUCCEEDED
    started = len(executions(harness))
    # STANDARD runs one execution per name; EXPRESS one per start (two workers, two
    # starts); a claim lets one worker start it
    assert started == 1 if (machine, concurrency) != ("EXPRESS", "allow") else started in (1, 2)
    assert harness.times_run(message.run_id) == 1
    assert len(sink.hits) == 1
