"""Scheduling semantics of chronoq local end to end: lifecycle, overlap, priority under a
burst, and catch-up after a dispatcher outage."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta

from tests.e2e.conftest import Local, wait_for_runs
from tests.e2e.scenarios import OutageScenario, parse, runs_of
from tests.support import Sink, wait_for


def test_given_a_job_when_paused_then_no_run_starts_and_when_resumed_the_next_future_time_runs(
    local: Local, sink: Sink
) -> None:
    start = (datetime.now(UTC) + timedelta(seconds=8)).replace(microsecond=0)
    _, job = local.call(
        "POST",
        "/jobs",
        body={
            "name": "pausable",
            "schedule": {"type": "rate", "every": "1 minute", "start_at": start.isoformat()},
            "target": {"type": "http", "url": f"{sink.url}/pausable"},
        },
    )

    status, paused = local.call("POST", f"/jobs/{job['id']}/pause")
    assert (status, paused["state"], paused["next_run_at"]) == (200, "PAUSED", None)
    time.sleep(max(0.0, (start - datetime.now(UTC)).total_seconds() + 3))  # its time passes
    assert sink.hits_to("/pausable") == []
    assert runs_of(local, job["id"]) == []

    status, resumed = local.call("POST", f"/jobs/{job['id']}/resume")

    assert (status, resumed["state"]) == (200, "ACTIVE")
    assert parse(resumed["next_run_at"]) == start + timedelta(minutes=1)  # not the missed one
    (run,) = wait_for_runs(local, job["id"], 1, timeout=75)
    assert parse(run["scheduled_at"]) == start + timedelta(minutes=1)
    assert run["status"] == "SUCCEEDED"
    assert len(sink.hits_to("/pausable")) == 1
    local.call("DELETE", f"/jobs/{job['id']}")


def test_given_a_job_when_triggered_then_one_extra_run_happens_now(
    local: Local, sink: Sink
) -> None:
    _, job = local.call(
        "POST",
        "/jobs",
        body={
            "name": "yearly",
            "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
            "target": {"type": "http", "url": f"{sink.url}/triggered"},
        },
    )

    status, run = local.call("POST", f"/jobs/{job['id']}/trigger")

    assert status == 202
    assert run["trigger"] == "manual"
    wait_for(lambda: local.call("GET", f"/runs/{run['id']}")[1]["status"] == "SUCCEEDED")
    assert len(sink.hits_to("/triggered")) == 1
    assert local.call("GET", f"/jobs/{job['id']}")[1]["next_run_at"] == job["next_run_at"]


def test_given_jobs_that_outlast_their_period_when_the_next_run_is_due_then_forbid_skips_and_replace_cancels(
    local: Local, sink: Sink
) -> None:
    start = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    jobs = {}
    for policy in ("forbid", "replace"):
        sink.delays[f"/{policy}"] = 80  # each run takes longer than the one-minute period
        _, jobs[policy] = local.call(
            "POST",
            "/jobs",
            body={
                "name": policy,
                "concurrency": policy,
                "timeout_seconds": 120,
                "schedule": {"type": "rate", "every": "1 minute", "start_at": start.isoformat()},
                "target": {"type": "http", "url": f"{sink.url}/{policy}"},
            },
        )

    def second_run_decided() -> bool:
        forbid, replace = (runs_of(local, jobs[p]["id"]) for p in ("forbid", "replace"))
        return (
            len(forbid) >= 2
            and forbid[1]["status"] == "SKIPPED"
            and len(replace) >= 2
            and replace[1]["status"] == "RUNNING"
        )

    wait_for(second_run_decided, timeout=90, interval=0.5)

    forbid = runs_of(local, jobs["forbid"]["id"])
    assert forbid[0]["status"] == "RUNNING"
    assert forbid[0]["id"] in forbid[1]["reason"]
    replace = runs_of(local, jobs["replace"]["id"])
    assert replace[0]["status"] == "CANCELLED"
    assert replace[1]["id"] in replace[0]["reason"]
    assert local.call("GET", f"/jobs/{jobs['replace']['id']}")[1]["active_runs"] == [
        replace[1]["id"]
    ]
    for job in jobs.values():
        assert local.call("DELETE", f"/jobs/{job['id']}")[0] == 204


# --- a second chronoq local: a burst, then a dispatcher outage --------------------------------


def finished(scenario: OutageScenario) -> OutageScenario:
    assert scenario.done.wait(timeout=480), "the outage scenario did not finish"
    if scenario.error is not None:
        raise scenario.error
    return scenario


def test_given_a_burst_of_300_runs_due_in_one_second_when_they_start_then_higher_priorities_start_first(
    outage: OutageScenario,
) -> None:
    scenario = finished(outage)
    starts: dict[str, list[float]] = {"high": [], "normal": [], "low": []}
    for job_id, priority in scenario.burst_jobs.items():
        (run,) = runs_of(scenario.local, job_id)
        assert run["status"] == "SUCCEEDED"
        assert parse(run["scheduled_at"]) == scenario.burst_at
        starts[priority].append(run["lag_ms"])

    assert len(scenario.sink.hits_to("/burst")) == 300
    assert min(min(v) for v in starts.values()) >= 0  # none before its second
    median = {p: statistics.median(v) for p, v in starts.items()}
    assert median["high"] < median["normal"] < median["low"]
    # Queues are taken strictly in priority order; only batches already in flight overlap.
    assert statistics.quantiles(starts["high"], n=10)[8] <= min(starts["low"])
    assert (
        statistics.quantiles(starts["normal"], n=10)[8]
        <= statistics.quantiles(starts["low"], n=10)[0] + 1000
    )


def test_given_a_three_minute_dispatcher_outage_when_it_ends_then_runs_within_their_deadline_run_late_and_older_ones_are_missed(
    outage: OutageScenario,
) -> None:
    scenario = finished(outage)
    # The last tick before the stop dispatched through the following minute: that runs on time.
    on_time_through = scenario.stopped_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
    last = scenario.restarted_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
    expected = []
    minute = on_time_through
    while minute <= last:
        expected.append(minute)
        minute += timedelta(minutes=1)

    for job, deadline in ((scenario.strict, 30), (scenario.lenient, 900)):
        runs = {parse(r["scheduled_at"]): r for r in runs_of(scenario.local, job["id"])}
        assert sorted(m for m in runs if on_time_through <= m <= last) == expected  # none dropped
        outcomes = []
        for minute in expected:
            run = runs[minute]
            late_by = (scenario.restarted_at - minute).total_seconds()
            if minute == on_time_through or late_by < -1:  # dispatched before the stop, or after
                assert run["status"] == "SUCCEEDED", (job["name"], minute, run)
                assert run["lag_ms"] < 2000  # on time (this chronoq local also runs the burst)
                outcomes.append("on time")
            elif late_by > deadline + 3:
                assert run["status"] == "MISSED", (job["name"], minute, run)
                assert "start_deadline_seconds" in run["reason"]
                outcomes.append("missed")
            elif late_by < deadline - 3:
                assert run["status"] == "SUCCEEDED", (job["name"], minute, run)
                assert run["lag_ms"] >= (late_by - 3) * 1000
                outcomes.append("late")
        if deadline == 900:
            assert outcomes.count("late") >= 2  # every minute of the outage ran, late
            assert "missed" not in outcomes
        else:
            assert outcomes.count("missed") >= 1
