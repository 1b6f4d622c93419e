"""What happens over minutes, end to end: a job firing once a minute, paused and resumed, runs
outlasting their period (forbid, replace), and a dispatcher outage and its catch-up.

chronoq local runs here in this process, on a clock that stands still unless the test moves it
(ClockedLocal): time jumps to the next instant something is due while chronoq local only
waits, and passes as on a wall clock while it is at work, so that minutes take seconds.
Everything in it reads that clock (its functions, the state machine's waits, SQS's delays and
visibility); it is spoken to over HTTP as any chronoq local. (How precisely runs start is
measured by make bench, not here.)"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest
from chronoq import resources as r

from tests.e2e.harness import (
    ENDED,
    FINISHED,
    ClockedLocal,
    Jobs,
    minute_of,
    parse,
    start_clocked_local,
)
from tests.support import Sink

#: Longest real wait for what the clock's passing should bring about.
PATIENCE = 120.0
#: The start deadline of the outage's ``strict`` job (the ``lenient`` one has the default).
STRICT_DEADLINE_SECONDS = 60
#: How long before its time a run of normal priority reaches a worker.
NORMAL_LEAD_SECONDS = r.DISPATCH_LEAD_SECONDS["normal"]


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedLocal]:
    with start_clocked_local(tmp_path_factory.mktemp("chronoq-clocked")) as started:
        yield started


@pytest.fixture
def jobs(clocked: ClockedLocal, sink: Sink) -> Iterator[Jobs]:
    created = Jobs(clocked)
    try:
        yield created
    finally:
        created.delete_all()


def finished_runs(local: ClockedLocal, job_id: str, count: int) -> list[dict[str, Any]]:
    """Time passes until ``count`` runs of the job have finished; they, oldest first."""

    def finished() -> list[dict[str, Any]] | None:
        done = [r for r in local.runs(job_id) if r["status"] in FINISHED]
        return done if len(done) >= count else None

    return local.run_until(
        finished, PATIENCE, lambda: f"{count} finished runs of {job_id}: {local.runs(job_id)}"
    )


def run_at(local: ClockedLocal, job_id: str, at: datetime) -> dict[str, Any] | None:
    """The job's run scheduled at ``at`` once it has ended (None before)."""
    for run in local.runs(job_id):
        if parse(run["scheduled_at"]) == at and run["status"] in ENDED:
            return run
    return None


def test_given_an_every_minute_cron_when_two_minutes_pass_then_it_fires_once_a_minute_on_the_second(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    job = jobs.create(
        {
            "name": "e2e-cron",
            "schedule": {"type": "cron", "expression": "* * * * *"},
            "target": {"type": "http", "url": f"{sink.url}/cron"},
        }
    )
    first = parse(job["next_run_at"])

    local.jump_to(first - timedelta(seconds=5))
    finished_runs(local, job["id"], 1)
    local.jump_to(first + timedelta(seconds=55))
    runs = finished_runs(local, job["id"], 2)[:2]

    scheduled = [parse(r["scheduled_at"]) for r in runs]
    assert scheduled == [first, first + timedelta(minutes=1)]
    assert all(s.second == 0 for s in scheduled)
    for run in runs:
        assert run["status"] == "SUCCEEDED", run
        assert parse(run["started_at"]) >= parse(run["scheduled_at"])  # not before its second
    called = [h.headers["X-Chronoq-Run-Id"] for h in sink.hits_to("/cron")]
    assert sorted(called) == sorted(r["id"] for r in runs)  # each called its target once


def test_given_a_job_when_paused_then_no_run_starts_and_when_resumed_the_next_future_time_runs(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked

    def every_minute_from(start: datetime) -> dict[str, Any]:
        return {"type": "rate", "every": "1 minute", "start_at": start.isoformat()}

    job = jobs.create(
        {
            "name": "pausable",
            "schedule": every_minute_from(local.whole_second_after(3600)),
            "target": {"type": "http", "url": f"{sink.url}/pausable"},
        }
    )
    status, paused = local.call("POST", f"/jobs/{job['id']}/pause")
    assert (status, paused["state"], paused["next_run_at"]) == (200, "PAUSED", None), paused
    start = local.whole_second_after(10)
    status, moved = local.call(
        "PATCH", f"/jobs/{job['id']}", body={"schedule": every_minute_from(start)}
    )
    assert (status, moved["state"], moved["next_run_at"]) == (200, "PAUSED", None), moved

    local.jump_to(start - timedelta(seconds=5))
    local.run_for(10)  # its time passes (and a run would have begun)
    assert sink.hits_to("/pausable") == []
    assert local.runs(job["id"]) == []

    asked = local.now()
    status, resumed = local.call("POST", f"/jobs/{job['id']}/resume")

    assert (status, resumed["state"]) == (200, "ACTIVE"), resumed
    following = parse(resumed["next_run_at"])  # the next future time, not the missed one
    assert asked < following <= asked + timedelta(minutes=1), (asked, following)
    assert (following - start) % timedelta(minutes=1) == timedelta(0)
    local.jump_to(following - timedelta(seconds=5))
    (run,) = finished_runs(local, job["id"], 1)
    assert parse(run["scheduled_at"]) == following
    assert run["status"] == "SUCCEEDED", run
    assert len(sink.hits_to("/pausable")) == 1


def test_given_jobs_that_outlast_their_period_when_the_next_run_is_due_then_forbid_skips_and_replace_cancels(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    start = local.whole_second_after(10)
    ids = {}
    for policy in ("forbid", "replace"):
        # Each run takes longer than the one-minute period: the sink answers only when the
        # test ends and it closes.
        sink.delays[f"/{policy}"] = PATIENCE * 2
        ids[policy] = jobs.create(
            {
                "name": policy,
                "concurrency": policy,
                "timeout_seconds": 300,
                "retry": {"max_attempts": 1},  # (no retries once the sink closes)
                "schedule": {"type": "rate", "every": "1 minute", "start_at": start.isoformat()},
                "target": {"type": "http", "url": f"{sink.url}/{policy}"},
            }
        )["id"]

    local.jump_to(start - timedelta(seconds=5))
    local.run_until(
        lambda: len(sink.hits_to("/forbid")) == len(sink.hits_to("/replace")) == 1,
        PATIENCE,
        "the first runs calling their targets",
    )
    # (to when the second runs reach the workers: the first ones, at work calling their
    # targets, keep time from passing faster than on a wall clock)
    local.jump_to(start + timedelta(minutes=1) - timedelta(seconds=NORMAL_LEAD_SECONDS))

    def second_run_decided() -> bool:
        forbid, replace = (local.runs(ids[p]) for p in ("forbid", "replace"))
        return (
            len(forbid) >= 2
            and forbid[1]["status"] == "SKIPPED"
            and len(replace) >= 2
            and replace[1]["status"] == "RUNNING"
        )

    local.run_until(
        second_run_decided,
        PATIENCE,
        lambda: (
            "the second runs decided: "
            + "; ".join(f"{p} {local.runs(ids[p])}" for p in ("forbid", "replace"))
        ),
    )

    forbid = local.runs(ids["forbid"])
    assert forbid[0]["status"] == "RUNNING", forbid[0]
    assert forbid[0]["id"] in forbid[1]["reason"]
    replace = local.runs(ids["replace"])
    assert replace[0]["status"] == "CANCELLED", replace[0]
    assert replace[1]["id"] in replace[0]["reason"]
    assert local.call("GET", f"/jobs/{ids['replace']}")[1]["active_runs"] == [replace[1]["id"]]


def test_given_a_three_minute_dispatcher_outage_when_it_ends_then_runs_within_their_deadline_run_late_and_older_ones_are_missed(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    """Two every-minute jobs: ``strict`` (start deadline 60 s) and ``lenient`` (900 s). The
    ticker stops in a minute M, once the dispatcher has opened M+1 (that one runs on time),
    and starts again three minutes and ten seconds later: the run of M+2 is then over a minute
    late (strict: missed; lenient: runs late), that of M+3 ten seconds late (both run late),
    and M+4 is dispatched ahead again."""
    created = {
        name: jobs.create(
            {
                "name": name,
                "schedule": {"type": "cron", "expression": "* * * * *"},
                "target": {"type": "http", "url": f"{sink.url}/{name}"},
                **deadline,
            }
        )
        for name, deadline in (
            ("strict", {"start_deadline_seconds": STRICT_DEADLINE_SECONDS}),
            ("lenient", {}),
        )
    }
    m = parse(created["strict"]["next_run_at"])
    minute = timedelta(minutes=1)

    def both_ended(at: datetime) -> list[dict[str, Any]] | None:
        ended = [run_at(local, job["id"], at) for job in created.values()]
        return [r for r in ended if r is not None] if all(ended) else None

    local.jump_to(m - timedelta(seconds=5))  # the ticker opens M and M+1
    local.run_until(lambda: both_ended(m), PATIENCE, f"the runs of {m}")
    stopped_at = local.now()
    assert minute_of(stopped_at) == m
    assert local.control("ticker/stop") == {"ticker": "stopped"}
    local.jump_to(m + minute - timedelta(seconds=5))  # M+1 was sent before the stop
    local.run_until(lambda: both_ended(m + minute), PATIENCE, f"the runs of {m + minute}")

    local.jump_to(m + 3 * minute + timedelta(seconds=10))  # nothing dispatched M+2, M+3
    restarted_at = local.now()
    assert local.control("ticker/start") == {"ticker": "running"}
    for late in (m + 2 * minute, m + 3 * minute):
        local.run_until(partial(both_ended, late), PATIENCE, f"the runs of {late}")
    local.jump_to(m + 4 * minute - timedelta(seconds=5))
    local.run_until(lambda: both_ended(m + 4 * minute), PATIENCE, "the runs after the restart")

    for name, job in created.items():
        runs = {parse(r["scheduled_at"]): r for r in local.runs(job["id"])}
        on_time = [runs[m], runs[m + minute], runs[m + 4 * minute]]
        assert [r["status"] for r in on_time] == ["SUCCEEDED"] * 3, (name, on_time)
        for run in on_time:
            assert parse(run["started_at"]) >= parse(run["scheduled_at"])
        over_a_minute, seconds = runs[m + 2 * minute], runs[m + 3 * minute]
        if name == "strict":  # too late when the dispatcher came back
            assert over_a_minute["status"] == "MISSED", over_a_minute
            assert "start_deadline_seconds" in over_a_minute["reason"]
        else:
            assert over_a_minute["status"] == "SUCCEEDED", over_a_minute
            assert parse(over_a_minute["started_at"]) >= restarted_at
        assert seconds["status"] == "SUCCEEDED", (name, seconds)  # a few seconds late
        assert parse(seconds["started_at"]) >= restarted_at
    hits = [h.headers["X-Chronoq-Run-Id"] for h in sink.hits]
    assert len(hits) == len(set(hits))  # each ran once
