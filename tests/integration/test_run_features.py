"""Time windows, backfills, re-runs and flow control through the handlers on moto: the api
function fed the sample events of events/api, the worker fed SQS batches, the runs executed
by the real state machine (runs are due at once: no test waits for a clock)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from chronoq import resources as r
from chronoq.domain import flow, ids, windows
from chronoq.domain import limits as lim
from chronoq.domain.runs import RunMessage

from tests.builders import worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, load_event, wait_for

WINDOW = 1800


def call(
    harness: Harness, name: str, path: str, body: Any = None, method: str = "POST", **kw: Any
) -> tuple[int, Any]:
    return harness.api(api_event(name, path=path, body=body, method=method, **kw))


def cron_job(harness: Harness, sink: Sink, **extra: Any) -> dict[str, Any]:
    body = {
        "name": "every ten minutes",
        "schedule": {"type": "cron", "expression": "*/10 * * * *"},
        "target": {"type": "http", "url": f"{sink.url}/hook", "method": "POST"},
        "retry": {"max_attempts": 1},
        **extra,
    }
    status, job = harness.api(api_event("create_at_job", body=body))
    assert status == 201, job
    return dict(job)


def run_of(harness: Harness, run_id: str, user: str = "alice") -> dict[str, Any]:
    status, run = call(harness, "get_run", f"/runs/{run_id}", method="GET", user=user)
    assert status == 200, run
    return dict(run)


def ended(harness: Harness, run_id: str) -> dict[str, Any]:
    """The run once it has ended (a scheduled run has no record until it starts)."""

    def done() -> dict[str, Any] | None:
        status, run = call(harness, "get_run", f"/runs/{run_id}", method="GET")
        if status == 404:
            return None
        return run if run["status"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None

    result: dict[str, Any] = wait_for(done, timeout=60)
    return result


# --- time windows -----------------------------------------------------------------------------


def test_given_a_windowed_cron_job_when_created_and_previewed_then_its_occurrence_waits_in_the_time_index_at_its_planned_start_and_the_preview_shows_it(
    harness: Harness, sink: Sink
) -> None:
    job = cron_job(
        harness,
        sink,
        schedule={"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW},
    )

    fire = datetime.fromisoformat(job["next_run_at"])
    start = datetime.fromisoformat(job["next_start_at"])
    assert start - fire == timedelta(seconds=windows.offset(job["id"], fire, WINDOW))
    assert job["schedule"]["window_seconds"] == WINDOW
    store = harness.wiring().store
    shard = ids.shard_of(job["id"], harness.wiring().shards)
    (occurrence,) = store.occurrences_in(start, shard)
    assert (occurrence.scheduled_at, occurrence.starts_at) == (fire, start)
    status, preview = call(
        harness,
        "create_at_job",
        "/schedules/preview",
        body={"schedule": job["schedule"], "count": 2, "job_id": job["id"]},
    )
    assert status == 200, preview
    first = preview["fire_times"][0]
    assert (first["utc"], first["starts_at"]) == (job["next_run_at"], job["next_start_at"])
    # someone else's job: 404; a window longer than the gap: 422 naming it
    assert (
        call(
            harness,
            "create_at_job",
            "/schedules/preview",
            body={"schedule": job["schedule"], "job_id": job["id"]},
            user="bob",
        )[0]
        == 404
    )
    status, refused = call(
        harness,
        "create_at_job",
        "/schedules/preview",
        body={"schedule": {"type": "rate", "every": "5 minutes", "window_seconds": 301}},
    )
    assert (status, refused["error"]["field"]) == (422, "schedule.window_seconds")


def test_given_a_windowed_run_when_the_worker_starts_it_then_the_state_machine_waits_for_its_planned_start_and_records_both_times(
    harness: Harness, sink: Sink
) -> None:
    """A job (stored directly) whose fire time was 10 s ago and whose offset in its 60 s
    window plans its run 2 s from now: found by trying job ids, as offsets come from them.
    (The deployment's clock skips the wait: its times, not the wall clock's, are compared.)"""
    now = harness.now().replace(microsecond=0)
    fire = now - timedelta(seconds=10)
    job_id = next(
        j for j in (ids.new_job_id() for _ in range(100_000)) if windows.offset(j, fire, 60) == 12
    )
    spec = {
        "name": "windowed",
        "schedule": {
            "type": "rate",
            "every": "1 hour",
            "start_at": fire.isoformat(),
            "window_seconds": 60,
        },
        "target": {"type": "http", "url": f"{sink.url}/hook"},
        "retry": {"max_attempts": 1},
    }
    from chronoq.domain.jobs import Job

    job = Job.model_validate(
        {
            **spec,
            "id": job_id,
            "owner": "alice",
            "state": "ACTIVE",
            "next_run_at": fire,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
    )
    harness.wiring().store.put_new_job(job)
    planned = fire + timedelta(seconds=12)
    message = RunMessage(
        job_id=job_id, run_id=job.occurrence_id(fire), scheduled_at=fire, queued_at=now
    )
    assert message.run_id.endswith("-w12")
    assert message.starts_at == planned

    harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    run = ended(harness, message.run_id)
    assert run["status"] == "SUCCEEDED"
    assert run["scheduled_at"] == fire.strftime("%Y-%m-%dT%H:%M:%SZ")  # its fire time
    assert run["starts_at"] == planned.strftime("%Y-%m-%dT%H:%M:%SZ")  # its planned start
    assert datetime.fromisoformat(run["started_at"]) >= planned  # waited for it
    assert 0 <= run["lag_ms"] < 10_000  # counted from the planned start, not the fire time
    assert len(sink.hits_to("/hook")) == 1


# --- backfills ------------------------------------------------------------------------------


def test_given_a_job_when_backfilled_through_the_api_then_the_backfill_is_listed_its_first_runs_are_sent_and_it_can_be_cancelled(
    harness: Harness, sink: Sink
) -> None:
    job = cron_job(harness, sink)
    now = harness.now().replace(microsecond=0)
    event = load_event("api/backfill_job")
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/jobs/{job['id']}/backfill"
    event["body"] = json.dumps(
        {"from": (now - timedelta(hours=4)).isoformat(), "to": now.isoformat()}
    )
    event["headers"]["Idempotency-Key"] = "backfill-1"

    status, backfill = harness.api(event)
    replay = harness.invoke(r.API_FUNCTION, event)

    assert status == 202, backfill
    assert json.loads(replay["body"]) == backfill  # the same key: the first answer again
    assert replay["headers"]["Idempotent-Replayed"] == "true"
    assert (backfill["state"], backfill["total"], backfill["max_in_flight"]) == (
        "RUNNING",
        24,
        lim.BACKFILL_MAX_IN_FLIGHT,
    )
    sent = [m for m in harness.bodies() if m["run_id"].endswith(backfill["id"])]
    assert len(sent) == lim.BACKFILL_MAX_IN_FLIGHT  # not twice: the replay made nothing
    assert {m["trigger"] for m in sent} == {"backfill"}
    status, page = call(harness, "list_jobs", f"/jobs/{job['id']}/backfills", method="GET")
    assert (status, [b["id"] for b in page["backfills"]]) == (200, [backfill["id"]])
    status, runs = call(
        harness,
        "list_runs",
        f"/jobs/{job['id']}/runs?backfill_id={backfill['id']}",
        method="GET",
    )
    assert (status, len(runs["runs"])) == (200, lim.BACKFILL_MAX_IN_FLIGHT)
    path = f"/jobs/{job['id']}/backfills/{backfill['id']}"
    status, cancelled = call(harness, "get_job", f"{path}/cancel")
    assert status == 200, cancelled
    assert cancelled["state"] == "CANCELLED"
    harness.notify()  # the runs stream: the notifier counts the ends of its runs
    status, counted = call(harness, "get_job", path, method="GET")
    assert (counted["state"], counted["ended"], counted["runs"]) == (
        "CANCELLED",
        lim.BACKFILL_MAX_IN_FLIGHT,
        {"CANCELLED": lim.BACKFILL_MAX_IN_FLIGHT},
    )
    assert call(harness, "get_job", f"{path}/cancel")[0] == 409
    assert call(harness, "get_job", path, method="GET", user="bob")[0] == 404


def test_given_a_backfill_when_its_runs_reach_the_worker_then_they_run_on_the_state_machine_and_make_the_next_ones(
    harness: Harness, sink: Sink
) -> None:
    job = cron_job(harness, sink, concurrency="forbid")  # one at a time
    now = harness.now().replace(microsecond=0)
    status, backfill = call(
        harness,
        "backfill_job",
        f"/jobs/{job['id']}/backfill",
        body={"from": (now - timedelta(minutes=20)).isoformat(), "to": now.isoformat()},
    )
    assert status == 202, backfill
    assert backfill["max_in_flight"] == 1

    # the backfill's slot is given back by the state machine at each run's end (its last
    # state, after the run's end is recorded): the next run waits for it
    key = flow.backfill_item_key("alice", backfill["id"])
    for _ in range(backfill["total"]):
        pending = [m for m in harness.bodies() if m["run_id"].endswith(backfill["id"])]
        last = RunMessage.model_validate(pending[-1])
        harness.invoke(r.WORKER_FUNCTION, worker_event(last))
        run = ended(harness, last.run_id)
        assert (run["status"], run["trigger"], run["backfill_id"]) == (
            "SUCCEEDED",
            "backfill",
            backfill["id"],
        )
        wait_for(lambda: harness.wiring().store.get_flow(key).holders == {})
    harness.notify()  # the runs stream: the notifier counts the ends of its runs
    status, done = call(
        harness, "get_job", f"/jobs/{job['id']}/backfills/{backfill['id']}", method="GET"
    )
    assert (status, done["state"], done["runs"]) == (200, "COMPLETED", {"SUCCEEDED": 2})
    assert len(sink.hits_to("/hook")) == 2


# --- re-runs --------------------------------------------------------------------------------


def test_given_a_failed_run_when_rerun_through_the_api_then_a_new_run_of_its_fire_time_runs_and_names_it(
    harness: Harness, sink: Sink
) -> None:
    job = harness.create_job({"type": "http", "url": f"{sink.url}/hook"})
    sink.statuses = [500]
    failed = harness.run(job)
    assert failed.status.value == "FAILED"
    event = load_event("api/rerun_run")
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/runs/{failed.id}/rerun"
    event["headers"]["Idempotency-Key"] = "rerun-1"

    status, rerun = harness.api(event)
    assert harness.api(event) == (status, rerun)  # replayed: one re-run

    assert status == 202, rerun
    assert (rerun["trigger"], rerun["rerun_of"], rerun["scheduled_at"]) == (
        "rerun",
        failed.id,
        failed.scheduled_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    harness.deliver(rerun["id"])
    assert ended(harness, rerun["id"])["status"] == "SUCCEEDED"
    assert call(harness, "get_run", f"/runs/{rerun['id']}/rerun", user="bob")[0] == 404
    status, _busy = call(harness, "get_run", f"/runs/{failed.id}/rerun")
    assert status == 202  # (it ended: it may be re-run again, without a key)


def test_given_runs_of_a_range_when_the_job_is_rerun_for_failed_ones_then_only_those_are_rerun(
    harness: Harness, sink: Sink
) -> None:
    job = harness.create_job({"type": "http", "url": f"{sink.url}/hook"})
    sink.statuses = [500]
    failed = harness.run(job)
    succeeded = harness.run(job)
    assert (failed.status.value, succeeded.status.value) == ("FAILED", "SUCCEEDED")
    event = load_event("api/rerun_job")
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/jobs/{job['id']}/rerun"
    now = harness.now()
    event["body"] = json.dumps(
        {
            "from": (now - timedelta(hours=1)).isoformat(),
            "to": (now + timedelta(hours=1)).isoformat(),
            "statuses": ["FAILED"],
        }
    )

    status, answer = harness.api(event)

    assert status == 202, answer
    assert [r["rerun_of"] for r in answer["runs"]] == [failed.id]
    event["body"] = json.dumps({"from": now.isoformat(), "to": now.isoformat()})
    status, refused = harness.api(event)
    assert (status, refused["error"]["field"]) == (422, "to")


# --- flow control ---------------------------------------------------------------------------


def test_given_two_jobs_of_one_flow_when_their_runs_reach_the_worker_together_then_one_runs_the_other_waits_and_runs_once_the_slot_is_given_back(
    harness: Harness, sink: Sink
) -> None:
    limits = {"key": "partner-api", "max_running": 1}
    jobs = [
        harness.create_job({"type": "http", "url": f"{sink.url}/hook"}, flow=limits)
        for _ in range(2)
    ]
    triggered = []
    for job in jobs:
        status, run = call(harness, "get_job", f"/jobs/{job['id']}/trigger")
        assert status == 202
        triggered.append(harness.sent(run["id"]))

    harness.invoke(r.WORKER_FUNCTION, worker_event(*triggered))

    first, second = triggered
    assert ended(harness, first.run_id)["status"] == "SUCCEEDED"
    waiting = run_of(harness, second.run_id)
    assert (waiting["status"], waiting["held_at"]) == ("SCHEDULED", waiting["held_at"])
    assert waiting["held_at"] is not None
    again = harness.sent(second.run_id)  # sent again by the worker, to look again
    assert again.held_at is not None
    assert again.not_before is not None
    key = flow.item_key("alice", "partner-api")
    # the state machine gives the first run's slot back at its end (ReleaseFlows)
    wait_for(lambda: harness.wiring().store.get_flow(key).holders == {})
    harness.invoke(r.WORKER_FUNCTION, worker_event(again))
    run = ended(harness, second.run_id)
    assert run["status"] == "SUCCEEDED"
    assert run["flow_wait_ms"] is not None
    assert run["flow_wait_ms"] >= 0
    assert len(sink.hits_to("/hook")) == 2
