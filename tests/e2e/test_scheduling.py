"""Scheduling semantics of chronoq local end to end: lifecycle, overlap, priority under a
burst, and catch-up after a dispatcher outage."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from typing import Any

from tests.e2e.harness import (
    ON_TIME,
    Background,
    Jobs,
    Local,
    minute_of,
    now,
    parse,
    seconds_until,
    sleep_until,
    wait_for_runs,
    whole_second_after,
)
from tests.e2e.scenarios import STRICT_DEADLINE_SECONDS, BurstScenario, OutageScenario
from tests.support import Sink, wait_for

#: Longest wait for a background scenario to end, once its test has come up (it started
#: before the first end-to-end test; it normally ends within a few minutes of that).
SCENARIO_TIMEOUT = 1200.0


def test_given_a_job_when_paused_then_no_run_starts_and_when_resumed_the_next_future_time_runs(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    def every_minute_from(start: datetime) -> dict[str, Any]:
        return {"type": "rate", "every": "1 minute", "start_at": start.isoformat()}

    job = jobs.create(
        {
            "name": "pausable",
            "schedule": every_minute_from(whole_second_after(3600)),
            "target": {"type": "http", "url": f"{sink.url}/pausable"},
        }
    )
    status, paused = local.call("POST", f"/jobs/{job['id']}/pause")
    assert (status, paused["state"], paused["next_run_at"]) == (200, "PAUSED", None), paused
    # Its start is chosen once it is paused, so that it comes while it is, however slow the
    # calls above were.
    start = whole_second_after(2)
    status, moved = local.call(
        "PATCH", f"/jobs/{job['id']}", body={"schedule": every_minute_from(start)}
    )
    assert (status, moved["state"], moved["next_run_at"]) == (200, "PAUSED", None), moved

    sleep_until(start + timedelta(seconds=5))  # its time passes (and a run would have begun)
    assert sink.hits_to("/pausable") == []
    assert local.runs(job["id"]) == []

    asked = now()
    status, resumed = local.call("POST", f"/jobs/{job['id']}/resume")
    answered = now()

    assert (status, resumed["state"]) == (200, "ACTIVE"), resumed
    following = parse(resumed["next_run_at"])  # the next future time, not the missed one
    assert asked < following <= answered + timedelta(minutes=1), (asked, following, answered)
    assert (following - start) % timedelta(minutes=1) == timedelta(0)
    (run,) = wait_for_runs(local, job["id"], 1, timeout=seconds_until(following) + 60)
    assert parse(run["scheduled_at"]) == following
    assert run["status"] == "SUCCEEDED", run
    assert len(sink.hits_to("/pausable")) == 1


def test_given_a_job_when_triggered_then_one_extra_run_happens_now(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    job = jobs.create(
        {
            "name": "yearly",
            "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
            "target": {"type": "http", "url": f"{sink.url}/triggered"},
        }
    )

    status, run = local.call("POST", f"/jobs/{job['id']}/trigger")

    assert status == 202, run
    assert run["trigger"] == "manual"
    wait_for(lambda: local.call("GET", f"/runs/{run['id']}")[1]["status"] == "SUCCEEDED", 60)
    assert len(sink.hits_to("/triggered")) == 1
    assert local.call("GET", f"/jobs/{job['id']}")[1]["next_run_at"] == job["next_run_at"]


def test_given_jobs_that_outlast_their_period_when_the_next_run_is_due_then_forbid_skips_and_replace_cancels(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    ids = {}
    for policy in ("forbid", "replace"):
        # Each run takes longer than the one-minute period: the sink answers after 150 s (or
        # when the test ends and it closes).
        sink.delays[f"/{policy}"] = 150
        ids[policy] = jobs.create(
            {
                "name": policy,
                "concurrency": policy,
                "timeout_seconds": 300,
                # (Should the request take longer than 5 s, the first run is a minute later.)
                "schedule": {
                    "type": "rate",
                    "every": "1 minute",
                    "start_at": whole_second_after(5).isoformat(),
                },
                "target": {"type": "http", "url": f"{sink.url}/{policy}"},
            }
        )["id"]

    def second_run_decided() -> bool:
        forbid, replace = (local.runs(ids[p]) for p in ("forbid", "replace"))
        return (
            len(forbid) >= 2
            and forbid[1]["status"] == "SKIPPED"
            and len(replace) >= 2
            and replace[1]["status"] == "RUNNING"
        )

    wait_for(second_run_decided, timeout=5 + 60 + 60 + 2 * ON_TIME.total_seconds(), interval=0.5)

    forbid = local.runs(ids["forbid"])
    assert forbid[0]["status"] == "RUNNING", forbid[0]
    assert forbid[0]["id"] in forbid[1]["reason"]
    replace = local.runs(ids["replace"])
    assert replace[0]["status"] == "CANCELLED", replace[0]
    assert replace[1]["id"] in replace[0]["reason"]
    assert local.call("GET", f"/jobs/{ids['replace']}")[1]["active_runs"] == [replace[1]["id"]]


# --- long scenarios, each on a chronoq local of its own (see conftest.py) ---------------------


def test_given_a_burst_of_300_runs_due_in_one_second_when_they_start_then_higher_priorities_start_first(
    burst: Background[BurstScenario],
) -> None:
    scenario = burst.result(SCENARIO_TIMEOUT)
    starts: dict[str, list[float]] = {"high": [], "normal": [], "low": []}
    for job_id, priority in scenario.priorities.items():
        (run,) = scenario.runs[job_id]
        assert run["status"] == "SUCCEEDED", run
        assert parse(run["scheduled_at"]) == scenario.burst_at
        starts[priority].append(run["lag_ms"])

    assert len(scenario.priorities) == scenario.size == 300
    called = [h.headers["X-Chronoq-Run-Id"] for h in scenario.hits]
    assert len(called) == len(set(called)) == 300  # each run called its target once
    assert min(min(v) for v in starts.values()) >= 0  # none before its second
    median = {p: statistics.median(v) for p, v in starts.items()}
    assert median["high"] < median["normal"] < median["low"], median
    # Queues are taken strictly in priority order; only batches already in flight overlap.
    assert statistics.quantiles(starts["high"], n=10)[8] <= min(starts["low"]), starts


def test_given_a_three_minute_dispatcher_outage_when_it_ends_then_runs_within_their_deadline_run_late_and_older_ones_are_missed(
    outage: Background[OutageScenario],
) -> None:
    scenario = outage.result(SCENARIO_TIMEOUT)
    # The dispatcher had opened the minute after the stop: that one runs on time.
    on_time_through = minute_of(scenario.stopped_at) + timedelta(minutes=1)
    last = minute_of(scenario.restarted_at) + timedelta(minutes=1)
    expected = []
    minute = on_time_through
    while minute <= last:
        expected.append(minute)
        minute += timedelta(minutes=1)
    # Runs still within their deadline may yet miss it by how long the first tick after the
    # restart, and a worker, take: no verdict for those due this close to it.
    slack = ON_TIME.total_seconds()

    for name, deadline in (("strict", STRICT_DEADLINE_SECONDS), ("lenient", 900)):
        runs = {parse(r["scheduled_at"]): r for r in scenario.runs[name]}
        assert sorted(m for m in runs if on_time_through <= m <= last) == expected  # none dropped
        outcomes = []
        for minute in expected:
            run = runs[minute]
            late_by = (scenario.restarted_at - minute).total_seconds()
            if minute == on_time_through or late_by < 0:  # dispatched before the stop, or after
                assert run["status"] == "SUCCEEDED", (name, minute, run)
                lag = parse(run["started_at"]) - minute
                assert timedelta(0) <= lag <= ON_TIME, (name, minute, run)
                outcomes.append("on time")
            elif late_by > deadline:  # when the dispatcher came back, it was already too late
                assert run["status"] == "MISSED", (name, minute, run)
                assert "start_deadline_seconds" in run["reason"]
                outcomes.append("missed")
            elif late_by < deadline - slack:
                assert run["status"] == "SUCCEEDED", (name, minute, run)
                # not before the dispatcher came back (the clock's resolution aside)
                assert parse(run["started_at"]) >= scenario.restarted_at - timedelta(seconds=1)
                outcomes.append("late")
            else:
                assert run["status"] in ("SUCCEEDED", "MISSED"), (name, minute, run)
        if deadline == 900:
            assert outcomes.count("late") >= 2, outcomes  # every minute of the outage ran, late
            assert "missed" not in outcomes, outcomes
        else:
            assert outcomes.count("missed") >= 1, outcomes
