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

from tests.builders import Wiring, job_spec, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, wait_for


def spec(sink: Sink, schedule: dict[str, Any], **extra: Any) -> JobSpec:
    return job_spec(schedule, {"type": "http", "url": sink.url + "/hook"}, **extra)


def deliver(harness: Harness, *runs: tuple[str, str, datetime]) -> dict[str, Any]:
    """Hand the worker one SQS batch with a message per (job id, run id, scheduled_at)."""
    event = worker_event(
        *(
            RunMessage(job_id=j, run_id=run, scheduled_at=at, queued_at=datetime.now(UTC))
            for j, run, at in runs
        )
    )
    answer: dict[str, Any] = harness.invoke(r.WORKER_FUNCTION, event)
    return answer


def status_of(service: Wiring, run_id: str) -> RunStatus:
    return service.runs.get_run("alice", run_id).status


def executions(harness: Harness) -> dict[str, str]:
    return {e["run_id"]: e["status"] for e in harness.executions()}


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
    assert "version 1" in body["message"]
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
    assert body["errors"][0]["field"] == "schedule.rate.every"


def test_given_a_new_target_when_patched_then_the_next_run_calls_it(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
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
    at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))

    paused = service.jobs.pause_job("alice", job.id)
    answer = deliver(harness, (job.id, ids.run_id(job.id, at), at))

    assert (paused.state, paused.next_run_at) == (JobState.PAUSED, None)
    assert answer == {"batchItemFailures": []}
    assert executions(harness) == {}
    assert service.runs.list_runs("alice", job.id) == []


def test_given_a_completed_job_when_paused_then_409(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    _, job = harness.api(api_event("create_at_job"))
    service.store.advance_job(service.jobs.get_job("alice", job["id"]), None, datetime.now(UTC))
    event = api_event("get_job", path=f"/jobs/{job['id']}/pause")
    event["requestContext"]["http"]["method"] = "POST"

    assert harness.api(event)[0] == 409


def test_given_a_deleted_job_when_its_run_arrives_then_nothing_starts_and_the_job_is_gone(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    _, job = harness.api(api_event("create_at_job"))
    event = api_event("get_job", path=f"/jobs/{job['id']}")
    event["requestContext"]["http"]["method"] = "DELETE"

    assert harness.api(event) == (204, None)
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[0] == 404
    at = datetime(2030, 1, 1, 8, tzinfo=UTC)
    assert deliver(harness, (job["id"], ids.run_id(job["id"], at), at)) == {"batchItemFailures": []}
    assert executions(harness) == {}


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
    deliver(harness, (job["id"], body["id"], datetime.fromisoformat(body["scheduled_at"])))
    wait_for(lambda: status_of(service, body["id"]) is RunStatus.SUCCEEDED)
    assert json.loads(message["Body"])["run_id"] == body["id"]
    assert [h.path for h in sink.hits] == ["/manual"]


# --- overlap --------------------------------------------------------------------------------


def running_job(
    harness: Harness, service: Wiring, sink: Sink, concurrency: str
) -> tuple[Any, str, str, datetime]:
    """A job whose first run is executing (the sink holds it) and whose second run is due."""
    sink.delay = 30
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)  # room to create
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
    job, first, second, at = running_job(harness, service, sink, "forbid")

    deliver(harness, (job.id, second, at))

    skipped = service.runs.get_run("alice", second)
    assert skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None
    assert first in skipped.reason
    assert status_of(service, first) is RunStatus.RUNNING
    assert second not in executions(harness)


def test_given_replace_when_a_run_is_due_while_one_is_active_then_the_old_one_is_cancelled_and_the_new_one_runs(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, second, at = running_job(harness, service, sink, "replace")
    sink.delay = 0

    deliver(harness, (job.id, second, at))

    cancelled = service.runs.get_run("alice", first)
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.reason is not None
    assert second in cancelled.reason
    wait_for(lambda: status_of(service, second) is RunStatus.SUCCEEDED)
    sink.closed.set()  # the cancelled attempt's call returns: its outcome must not count
    wait_for(lambda: executions(harness)[first] != "RUNNING")
    assert executions(harness)[first] in ("ABORTED", "SUCCEEDED")
    assert status_of(service, first) is RunStatus.CANCELLED
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()


def test_given_allow_when_runs_overlap_then_both_run_and_the_job_lists_them_as_active(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, second, at = running_job(harness, service, sink, "allow")

    deliver(harness, (job.id, second, at))

    wait_for(lambda: status_of(service, second) is RunStatus.RUNNING)
    assert service.jobs.get_job("alice", job.id).active_runs == {first, second}
    sink.closed.set()  # let both finish
    wait_for(lambda: service.jobs.get_job("alice", job.id).active_runs == frozenset(), timeout=30)
    assert {status_of(service, first), status_of(service, second)} == {RunStatus.SUCCEEDED}


# --- start deadline -------------------------------------------------------------------------


def test_given_a_run_past_its_start_deadline_when_it_arrives_then_it_is_missed_not_started(
    harness: Harness, sink: Sink
) -> None:
    clock = FakeClock(datetime.now(UTC))
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


def test_given_a_running_run_when_cancelled_then_its_execution_stops_and_it_is_cancelled(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    job, first, _, _ = running_job(harness, service, sink, "allow")
    stops = harness.record("stepfunctions", "StopExecution")

    status, run = cancel(harness, first)

    assert (status, run["status"], run["reason"]) == (200, "CANCELLED", "cancelled by alice")
    assert service.jobs.get_job("alice", job.id).active_runs == frozenset()
    assert [s["executionArn"].rsplit(":", 1)[1] for s in stops] == [first]  # its execution
    assert [(a["outcome"], a["error"]) for a in run["attempts"]] == [
        ("Cancelled", "cancelled by alice")
    ]
    sink.closed.set()
    wait_for(lambda: executions(harness)[first] != "RUNNING")
    assert status_of(service, first) is RunStatus.CANCELLED
    # what the cancelled attempt logged is kept (the runner keeps it when the call returns)
    wait_for(lambda: any("POST" in line for line in service.runs.run_logs("alice", first)))


def test_given_a_scheduled_run_when_cancelled_then_it_never_starts(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))
    run_id = ids.run_id(job.id, at)

    assert cancel(harness, run_id)[1]["status"] == "CANCELLED"
    deliver(harness, (job.id, run_id, at))

    assert executions(harness) == {}
    assert sink.hits == []


def test_given_a_finished_run_or_someone_elses_when_cancelled_then_409_or_404(
    harness: Harness, service: Wiring, sink: Sink
) -> None:
    at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    job = service.jobs.create_job("alice", spec(sink, {"type": "at", "at": at.isoformat()}))
    run_id = ids.run_id(job.id, at)
    deliver(harness, (job.id, run_id, at))
    wait_for(lambda: status_of(service, run_id) is RunStatus.SUCCEEDED)

    assert cancel(harness, run_id, user="bob")[0] == 404
    status, body = cancel(harness, run_id)
    assert (status, body["message"]) == (409, f"run {run_id} is already SUCCEEDED")
