"""Changing, pausing, resuming, deleting and triggering jobs, and the overlap and
start-deadline rules, on moto with the real state machine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import JobPatch, JobSpec, JobState
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.fakes import FakeClock
from chronoq.local.clock import Waits

from tests.builders import Wiring, job_spec, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, wait_for


def spec(sink: Sink, schedule: dict[str, Any], **extra: Any) -> JobSpec:
    return job_spec(schedule, {"type": "http", "url": sink.url + "/hook"}, **extra)


def deliver(harness: Harness, *runs: tuple[str, str, datetime]) -> dict[str, Any]:
    """Hand the worker one SQS batch with a message per (job id, run id, scheduled_at)."""
    event = worker_event(
        *(
            RunMessage(job_id=j, run_id=run, scheduled_at=at, queued_at=harness.now())
            for j, run, at in runs
        )
    )
    answer: dict[str, Any] = harness.invoke(r.WORKER_FUNCTION, event)
    return answer


def status_of(service: Wiring, run_id: str) -> RunStatus | None:
    """The run's status, None while it has no record (a scheduled run is recorded when it
    starts)."""
    run = service.store.get_run(ids.job_id_of_run(run_id), run_id)
    return None if run is None else run.status


def executions(harness: Harness) -> dict[str, str]:
    return {e["run_id"]: e["status"] for e in harness.executions()}


#: A timeout that puts a run (of one attempt) on the STANDARD state machine.
LONGER_THAN_EXPRESS = r.EXPRESS_BUDGET_SECONDS + 1

#: The job settings that put its runs on each state machine (a default job fits EXPRESS).
ON_MACHINE: dict[str, dict[str, Any]] = {
    "EXPRESS": {},
    "STANDARD": {"timeout_seconds": LONGER_THAN_EXPRESS},
}


@pytest.fixture
def service(harness: Harness) -> Wiring:
    return harness.wiring()


# --- PATCH ----------------------------------------------------------------------------------


def test_given_a_stale_version_when_patching_then_409_and_nothing_changes(
    harness: Harness, sink: Sink
) -> None:
    _, job = harness.api(api_event("create_cron_job"))
    event = api_event(
        "create_cron_job", body={"name": "renamed", "version": 7}, path=f"/jobs/{job['id']}"
    )
    event["requestContext"]["http"]["method"] = "PATCH"

    status, body = harness.api(event)

    assert status == 409
    assert "version 1" in body["error"]["message"]
    assert (
        harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[1]["name"]
        == "every-five-minutes"
    )


def test_given_a_bad_field_when_patching_then_422_names_it(harness: Harness) -> None:
    _, job = harness.api(api_event("create_cron_job"))
    event = api_event(
        "create_cron_job",
        body={"schedule": {"type": "rate", "every": "30 seconds"}},
        path=f"/jobs/{job['id']}",
    )
    event["requestContext"]["http"]["method"] = "PATCH"

    status, body = harness.api(event)

    assert status == 422
    assert body["error"]["field"] == "schedule.every"


def test_given_a_new_target_when_patched_then_the_next_run_calls_it(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))
    service.jobs.update_job(
        "alice",
        job.id,
        JobPatch.model_validate({"target": {"type": "http", "url": sink.url + "/new"}}),
    )

    run_id = ids.run_id(job.id, at)
    deliver(harness, (job.id, run_id, at))

    wait_for(lambda: status_of(service, run_id) is RunStatus.SUCCEEDED)
    assert [h.path for h in sink.hits] == ["/new"]


# --- pause, resume, delete, trigger ---------------------------------------------------------


def test_given_a_paused_job_when_its_dispatched_run_arrives_then_it_does_not_start(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))

    paused = service.jobs.pause_job("alice", job.id)
    answer = deliver(harness, (job.id, ids.run_id(job.id, at), at))

    assert (paused.state, paused.next_run_at) == (JobState.PAUSED, None)
    assert answer == {"batchItemFailures": []}
    assert executions(harness) == {}
    assert service.runs.list_runs("alice", job.id) == []


def test_given_a_completed_job_when_paused_then_409(harness: Harness, sink: Sink) -> None:
    # a one-time job created (on a clock an hour behind) for a time now past: its schedule has
    # no fire time left, so it is COMPLETED when read (its item is not written at its end)
    an_hour_ago = FakeClock(harness.now() - timedelta(hours=1))
    at = an_hour_ago.now + timedelta(minutes=30)
    job = harness.wiring(an_hour_ago).jobs.create_job(
        "alice", spec(sink, {"type": "at", "at": at.isoformat()})
    )
    assert harness.api(api_event("get_job", path=f"/jobs/{job.id}"))[1]["state"] == "COMPLETED"

    status, body = harness.api(api_event("get_job", path=f"/jobs/{job.id}/pause", method="POST"))

    assert (status, body["error"]["message"]) == (
        409,
        f"job {job.id} is COMPLETED: it has no runs left to pause",
    )


def test_given_a_deleted_job_when_its_run_arrives_then_nothing_starts_and_the_job_is_gone(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    _, job = harness.api(api_event("create_at_job"))
    event = api_event("get_job", path=f"/jobs/{job['id']}")
    event["requestContext"]["http"]["method"] = "DELETE"

    assert harness.api(event) == (204, None)
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[0] == 404
    at = datetime(2030, 1, 1, 8, tzinfo=UTC)
    run_id = ids.run_id(job["id"], at)
    assert deliver(harness, (job["id"], run_id, at)) == {"batchItemFailures": []}
    assert executions(harness) == {}
    assert status_of(service, run_id) is None  # dropped: nothing recorded for it


def test_given_a_triggered_run_whose_job_was_deleted_when_its_message_arrives_then_its_record_is_cancelled_and_nothing_starts(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job = service.jobs.create_job("alice", spec(sink, {"type": "cron", "expression": "0 0 1 1 *"}))
    triggered = service.jobs.trigger_job("alice", job.id)  # recorded SCHEDULED at once
    service.jobs.delete_job("alice", job.id)

    harness.deliver(triggered.id)

    cancelled = service.store.get_run(job.id, triggered.id)
    assert cancelled is not None
    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, "its job was deleted")
    assert executions(harness) == {}
    assert sink.hits == []


def test_given_a_paused_job_when_triggered_then_one_run_starts_now(
    harness: Harness, sink: Sink
) -> None:
    _, job = harness.api(
        api_event(
            "create_cron_job",
            body={
                "name": "t",
                "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                "target": {"type": "http", "url": sink.url + "/manual"},
            },
        )
    )
    for action in ("pause", "trigger"):
        event = api_event("get_job", path=f"/jobs/{job['id']}/{action}")
        event["requestContext"]["http"]["method"] = "POST"
        status, body = harness.api(event)
    service = harness.wiring()

    assert status == 202
    assert body["trigger"] == "manual"
    assert body["status"] == "SCHEDULED"
    (message,) = harness.receive("normal")
    assert json.loads(message["Body"])["run_id"] == body["id"]
    harness.invoke(r.WORKER_FUNCTION, worker_event(RunMessage.model_validate_json(message["Body"])))
    wait_for(lambda: status_of(service, body["id"]) is RunStatus.SUCCEEDED)
    assert [h.path for h in sink.hits] == ["/manual"]


# --- overlap --------------------------------------------------------------------------------


def running_job(
    harness: Harness, service: Wiring, sink: Sink, concurrency: str, **extra: Any
) -> tuple[Any, str, str, datetime]:
    """A job whose first run is executing (the sink holds it) and whose second run is due
    (triggered: ``harness.deliver`` hands its message to the worker)."""
    sink.delay = 30
    now = harness.now().replace(microsecond=0) + timedelta(seconds=2)  # room to create
    job = service.jobs.create_job(
        "alice",
        spec(
            sink,
            {
                "type": "rate",
                "every": "1 minute",
                "start_at": (now + timedelta(seconds=1)).isoformat(),
            },
            concurrency=concurrency,
            **extra,
        ),
    )
    first = ids.run_id(job.id, now + timedelta(seconds=1))
    deliver(harness, (job.id, first, now + timedelta(seconds=1)))
    wait_for(lambda: status_of(service, first) is RunStatus.RUNNING and sink.hits)
    second = service.jobs.trigger_job("alice", job.id)  # a run due while the first runs
    second_at = second.scheduled_at
    return job, first, second.id, second_at


def test_given_forbid_when_a_run_is_due_while_one_is_active_then_it_is_skipped(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, second, _ = running_job(harness, service, sink, "forbid")

    harness.deliver(second)  # its message, as the API sent it

    skipped = service.runs.get_run("alice", second)
    assert skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None
    assert first in skipped.reason
    assert status_of(service, first) is RunStatus.RUNNING
    assert second not in executions(harness)
    assert service.jobs.get_job("alice", job.id).active_runs == {first}


@pytest.mark.parametrize("machine", ["EXPRESS", "STANDARD"])
def test_given_replace_when_a_run_is_due_while_one_is_active_then_the_old_one_is_cancelled_and_the_new_one_runs(
    harness: Harness, service: Wiring, sink: Sink, machine: str
) -> None:
    job, first, second, _ = running_job(harness, service, sink, "replace", **ON_MACHINE[machine])
    sink.delay = 0

    harness.deliver(second)  # its message, as the API sent it

    cancelled = service.runs.get_run("alice", first)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.reason is not None
    assert second in cancelled.reason
    wait_for(lambda: status_of(service, second) is RunStatus.SUCCEEDED)
    sink.closed.set()  # the cancelled attempt's call returns: its outcome must not count
    wait_for(lambda: executions(harness)[first] != "RUNNING")
    # STANDARD: its execution was stopped; EXPRESS (which cannot be stopped): it ran on and
    # ended without recording its outcome
    assert executions(harness)[first] == ("ABORTED" if machine == "STANDARD" else "SUCCEEDED")
    assert status_of(service, first) is RunStatus.CANCELLED
    assert service.runs.get_run("alice", first).output is None
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


def test_given_allow_when_runs_overlap_then_both_run_and_the_job_keeps_no_active_runs(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, second, _ = running_job(harness, service, sink, "allow")
    stored = service.store.get_job(job.id)

    harness.deliver(second)  # its message, as the API sent it

    wait_for(lambda: status_of(service, second) is RunStatus.RUNNING)
    assert status_of(service, first) is RunStatus.RUNNING
    # an allow job does not keep its runs: neither start nor end writes it
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()
    sink.closed.set()  # let both finish
    wait_for(
        lambda: {status_of(service, first), status_of(service, second)} == {RunStatus.SUCCEEDED},
    )
    assert service.store.get_job(job.id) == stored
    assert len(sink.hits) == 2


# --- start deadline -------------------------------------------------------------------------


def test_given_a_run_past_its_start_deadline_when_it_arrives_then_it_is_missed_not_started(
    harness: Harness, sink: Sink
) -> None:
    clock = FakeClock(harness.now())
    service = harness.wiring()
    service.clock = clock
    at = (clock.now + timedelta(seconds=5)).replace(microsecond=0)
    job = service.jobs.create_job(
        "alice", spec(sink, {"type": "at", "at": at.isoformat()}, start_deadline_seconds=60)
    )
    run_id = ids.run_id(job.id, at)

    clock.now = at + timedelta(seconds=61)
    outcome = service.starter.start_run(
        RunMessage(job_id=job.id, run_id=run_id, scheduled_at=at, queued_at=at)
    )

    missed = service.runs.get_run("alice", run_id)
    assert outcome == "missed"
    assert missed.status is RunStatus.MISSED
    assert missed.reason == "could not start within start_deadline_seconds (60 s)"
    assert executions(harness) == {}


# --- cancel ---------------------------------------------------------------------------------


def cancel(harness: Harness, run_id: str, user: str = "alice") -> tuple[int, Any]:
    event = api_event("get_run", user=user, path=f"/runs/{run_id}/cancel")
    event["requestContext"]["http"]["method"] = "POST"
    return harness.api(event)


def test_given_a_running_standard_run_when_cancelled_then_its_execution_stops_and_it_is_cancelled(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, _, _ = running_job(harness, service, sink, "allow", **ON_MACHINE["STANDARD"])
    stops = harness.record("stepfunctions", "StopExecution")

    status, run = cancel(harness, first)

    assert (status, run["status"], run["reason"]) == (200, "CANCELLED", "cancelled by alice")
    (execution,) = harness.executions()
    assert execution["machine"] == "STANDARD"
    assert [s["executionArn"] for s in stops] == [execution["arn"]]  # its execution
    assert [(a["outcome"], a["error"]) for a in run["attempts"]] == [
        ("Cancelled", "cancelled by alice")
    ]
    sink.closed.set()  # the attempt's call returns: nobody is left to record its outcome
    wait_for(lambda: executions(harness)[first] != "RUNNING")
    assert executions(harness)[first] == "ABORTED"
    assert status_of(service, first) is RunStatus.CANCELLED
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


@pytest.mark.parametrize("answer", [200, 500], ids=["attempt-succeeds", "attempt-fails"])
def test_given_a_running_express_run_when_cancelled_then_it_is_cancelled_at_once_and_the_attempt_under_way_is_neither_recorded_over_it_nor_retried(
    harness: Harness, service: Wiring, sink: Sink, answer: int
) -> None:
    retry = {"max_attempts": 3, "interval_seconds": 1, "jitter": False}
    _, first, _, _ = running_job(harness, service, sink, "allow", retry=retry)
    sink.status = answer

    status, run = cancel(harness, first)

    assert (status, run["status"], run["reason"]) == (200, "CANCELLED", "cancelled by alice")
    assert [(a["outcome"], a["error"]) for a in run["attempts"]] == [
        ("Cancelled", "cancelled by alice")
    ]
    (execution,) = harness.executions()
    assert (execution["machine"], execution["status"]) == ("EXPRESS", "RUNNING")  # not stopped
    sink.closed.set()  # the attempt under way answers, and its execution goes on to its end
    wait_for(lambda: executions(harness)[first] != "RUNNING")
    assert executions(harness)[first] == "SUCCEEDED"  # (an EXPRESS batch ends so)
    # the run's own end: its outcome's write refused (MarkSucceeded, or RecordAttempt)
    assert harness.end_state(first) == ("Succeeded" if answer == 200 else "Failed")
    assert harness.states_entered(execution["arn"], first).count("RunTarget") == 1  # no retry
    assert len(sink.hits) == 1
    kept = service.runs.get_run("alice", first)
    assert (kept.status, kept.output, kept.finished_at) == (
        RunStatus.CANCELLED,
        None,
        datetime.fromisoformat(run["finished_at"]),
    )
    assert [(a.outcome, a.error) for a in kept.attempts] == [("Cancelled", "cancelled by alice")]
    # nothing written after the cancellation gave it another status (the runner may have
    # added a failed attempt's log lines)
    writes = harness.run_writes(first)
    after = writes[writes.index(("MODIFY", "CANCELLED")) :]
    assert set(after) == {("MODIFY", "CANCELLED")}


@pytest.mark.parametrize("waits", [Waits.HELD], ids=["held"])  # the clock moves when told
def test_given_an_express_run_waiting_to_retry_when_cancelled_then_no_further_attempt_starts(
    harness: Harness, service: Wiring, sink: Sink, waits: Waits
) -> None:
    sink.status = 500
    # 2 attempts of 60 s and a wait of 10 s: EXPRESS; the wait is the test's time to cancel
    retry = {"max_attempts": 2, "interval_seconds": 10, "jitter": False}
    at = (harness.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job(
        "alice", spec(sink, {"type": "at", "at": at.isoformat()}, retry=retry)
    )
    run_id = ids.run_id(job.id, at)
    deliver(harness, (job.id, run_id, at))
    harness.clock.advance_to(at)  # its second comes

    def waiting() -> bool:
        run = service.store.get_run(job.id, run_id)
        return run is not None and run.status is RunStatus.RUNNING and len(run.attempts) == 1

    wait_for(waiting)  # the first attempt failed and is recorded: the execution waits
    status, run = cancel(harness, run_id)

    assert (status, run["status"]) == (200, "CANCELLED")
    assert run["attempts"][0]["outcome"] == "TargetError"
    (execution,) = harness.executions()
    assert execution["machine"] == "EXPRESS"
    assert executions(harness)[run_id] == "RUNNING"  # still waiting
    harness.clock.advance(10)  # its wait ends
    # after its wait, the execution reads the run (StillRunning) and starts no other attempt
    wait_for(lambda: executions(harness)[run_id] != "RUNNING")
    states = harness.states_entered(execution["arn"], run_id)
    assert "StillRunning" in states
    assert states.count("RunTarget") == 1
    assert harness.end_state(run_id) == "Failed"
    assert len(sink.hits) == 1
    assert status_of(service, run_id) is RunStatus.CANCELLED


@pytest.mark.parametrize("machine", ["EXPRESS", "STANDARD"])
def test_given_a_running_run_when_cancelled_then_what_its_attempt_logged_is_kept(
    harness: Harness, service: Wiring, sink: Sink, machine: str
) -> None:
    _, first, _, _ = running_job(harness, service, sink, "allow", **ON_MACHINE[machine])

    assert cancel(harness, first)[0] == 200
    sink.closed.set()  # the attempt's call returns (HTTP 200)
    wait_for(lambda: executions(harness)[first] != "RUNNING")

    # what the cancelled attempt logged is kept (the runner has it when the call returns)
    wait_for(
        lambda: any("POST" in line for line in service.runs.run_logs("alice", first)),
    )


def test_given_a_future_occurrence_when_cancelled_then_404_and_it_still_runs(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))
    run_id = ids.run_id(job.id, at)

    # not recorded before it starts: nothing to cancel (pause or delete the job instead)
    assert cancel(harness, run_id)[0] == 404
    deliver(harness, (job.id, run_id, at))

    wait_for(lambda: status_of(service, run_id) is RunStatus.SUCCEEDED)
    assert len(sink.hits) == 1


def test_given_a_triggered_run_not_yet_started_when_cancelled_then_it_never_starts(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job = service.jobs.create_job("alice", spec(sink, {"type": "cron", "expression": "0 0 1 1 *"}))
    triggered = service.jobs.trigger_job("alice", job.id)  # recorded SCHEDULED at once

    status, run = cancel(harness, triggered.id)
    harness.deliver(triggered.id)  # its message, as the API sent it

    assert (status, run["status"]) == (200, "CANCELLED")
    # (an execution the worker started for it ends at its first write, the run CANCELLED)
    assert harness.times_run(triggered.id) == 0
    assert status_of(service, triggered.id) is RunStatus.CANCELLED
    assert sink.hits == []


def test_given_a_finished_run_or_someone_elses_when_cancelled_then_409_or_404(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))
    run_id = ids.run_id(job.id, at)
    deliver(harness, (job.id, run_id, at))
    wait_for(lambda: status_of(service, run_id) is RunStatus.SUCCEEDED)

    assert cancel(harness, run_id, user="bob")[0] == 404
    status, body = cancel(harness, run_id)
    assert (status, body["error"]["message"]) == (409, f"run {run_id} is already SUCCEEDED")
