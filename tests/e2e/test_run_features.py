"""Time windows, backfills, re-runs and flow control against chronoq local, over HTTP (and
the command line), as a user would use them."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from typing import Any

from chronoq.cli.main import cli
from click.testing import CliRunner

from tests.e2e.harness import (
    ENDED,
    FINISHED,
    Jobs,
    Local,
    now,
    parse,
    poll,
    wait_for_runs,
    whole_second_after,
)
from tests.support import Sink

#: The window of the windowed job (its start falls anywhere in it: the test waits for it).
WINDOW_SECONDS = 4


def ended(local: Local, run_id: str, timeout: float = 120) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status, run = local.call("GET", f"/runs/{run_id}")
        return run if status == 200 and run["status"] in FINISHED else None

    result: dict[str, Any] = poll(done, timeout, lambda: f"run {run_id} to end", interval=0.5)
    return result


def cli_json(local: Local, *args: str) -> Any:
    """``chronoq ARGS -o json`` against chronoq local, as alice (no profile)."""
    env = {
        "CHRONOQ_URL": local.url,
        "CHRONOQ_TOKEN": local.token("alice"),
        "CHRONOQ_CONFIG": str(local.data_dir / "cli-profile.json"),
    }
    result = CliRunner().invoke(cli, [*args, "-o", "json"], env=env)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


def test_given_a_job_with_a_window_when_its_fire_time_comes_then_its_run_starts_at_its_planned_start_within_the_window(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    fire = whole_second_after(4)
    job = jobs.create(
        {
            "name": "windowed",
            "schedule": {
                "type": "rate",
                "every": "1 hour",
                "start_at": fire.isoformat(),
                "window_seconds": WINDOW_SECONDS,
            },
            "target": {"type": "http", "url": f"{sink.url}/windowed"},
        }
    )
    planned = parse(job["next_start_at"])
    assert fire <= planned < fire + timedelta(seconds=WINDOW_SECONDS)
    status, preview = local.call(
        "POST",
        "/schedules/preview",
        body={"schedule": job["schedule"], "count": 1, "job_id": job["id"]},
    )
    assert (status, preview["fire_times"][0]["starts_at"]) == (200, job["next_start_at"])

    (run,) = wait_for_runs(local, job["id"], 1, timeout=120)

    assert run["status"] == "SUCCEEDED"
    assert (parse(run["scheduled_at"]), parse(run["starts_at"])) == (fire, planned)
    assert planned <= parse(run["started_at"])  # (how soon after: make bench)
    assert run["lag_ms"] >= 0
    assert sink.hits_to("/windowed")[0].at >= planned


def test_given_a_paused_job_when_backfilled_then_each_past_fire_time_runs_once_one_at_a_time_and_the_backfill_completes(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    # every minute of the hour before this one: no run of its own is due for about a day, so
    # none can be under way (and skip a backfill run) whenever the job is created and paused
    hour = now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    job = jobs.create(
        {
            "name": "backfilled",
            "schedule": {"type": "cron", "expression": f"* {hour.hour} * * *"},
            "target": {"type": "http", "url": f"{sink.url}/backfilled"},
            "concurrency": "forbid",  # its backfill runs one at a time
        }
    )
    assert local.call("POST", f"/jobs/{job['id']}/pause")[0] == 200  # (only the backfill runs)
    to = hour + timedelta(minutes=5)

    backfill = cli_json(
        local,
        "jobs",
        "backfill",
        job["id"],
        "--from",
        (to - timedelta(minutes=5)).isoformat(),
        "--to",
        to.isoformat(),
    )

    assert (backfill["state"], backfill["total"], backfill["max_in_flight"]) == ("RUNNING", 5, 1)

    def completed() -> dict[str, Any] | None:
        found = cli_json(local, "backfills", "get", job["id"], backfill["id"])
        return found if found["state"] == "COMPLETED" else None

    done = poll(completed, 180, lambda: "the backfill to complete", interval=1.0)
    assert done["runs"] == {"SUCCEEDED": 5}
    runs = sorted(local.runs(job["id"]), key=lambda r: r["scheduled_at"])
    assert [parse(r["scheduled_at"]) for r in runs] == [
        to - timedelta(minutes=m) for m in range(5, 0, -1)
    ]
    assert {(r["trigger"], r["backfill_id"]) for r in runs} == {("backfill", backfill["id"])}
    for earlier, later in itertools.pairwise(runs):  # never two under way at once
        assert parse(later["started_at"]) >= parse(earlier["finished_at"])
    assert len(sink.hits_to("/backfilled")) == 5
    listed = cli_json(local, "backfills", "list", job["id"])["backfills"]
    assert [b["id"] for b in listed] == [backfill["id"]]


def test_given_a_backfill_when_cancelled_then_no_further_run_is_made(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    sink.delays["/slow"] = 5.0
    job = jobs.create(
        {
            "name": "cancelled backfill",
            "schedule": {"type": "cron", "expression": "* * * * *"},
            "target": {"type": "http", "url": f"{sink.url}/slow"},
            "concurrency": "forbid",
        }
    )
    local.call("POST", f"/jobs/{job['id']}/pause")
    to = now().replace(second=0, microsecond=0)
    status, backfill = local.call(
        "POST",
        f"/jobs/{job['id']}/backfill",
        body={"from": (to - timedelta(minutes=30)).isoformat(), "to": to.isoformat()},
    )
    assert status == 202, backfill

    status, cancelled = local.call("POST", f"/jobs/{job['id']}/backfills/{backfill['id']}/cancel")

    assert (status, cancelled["state"]) == (200, "CANCELLED")
    assert set(cancelled["runs"]) <= {"CANCELLED", "SUCCEEDED"}
    poll(
        lambda: all(r["status"] in ENDED for r in local.runs(job["id"])),
        60,
        lambda: "its runs to end",
    )
    assert len(local.runs(job["id"])) <= 2  # (the first, and the one it had made)


def test_given_a_failed_run_when_rerun_with_a_key_then_one_new_run_of_its_fire_time_succeeds_and_a_range_rerun_finds_the_failure(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    sink.statuses = [500]
    job, at = jobs.create_at(
        {
            "name": "rerun",
            "target": {"type": "http", "url": f"{sink.url}/rerun"},
            "retry": {"max_attempts": 1},
        },
        lead=3,
    )
    (failed,) = wait_for_runs(local, job["id"], 1, timeout=120)
    assert failed["status"] == "FAILED"

    first = cli_json(local, "runs", "rerun", failed["id"], "--idempotency-key", "e2e-rerun")
    again = cli_json(local, "runs", "rerun", failed["id"], "--idempotency-key", "e2e-rerun")

    assert first == again  # one re-run, whatever the retries
    assert (first["trigger"], first["rerun_of"], parse(first["scheduled_at"])) == (
        "rerun",
        failed["id"],
        at,
    )
    assert ended(local, first["id"])["status"] == "SUCCEEDED"
    reruns = cli_json(
        local,
        "jobs",
        "rerun",
        job["id"],
        "--from",
        (at - timedelta(minutes=1)).isoformat(),
        "--to",
        (at + timedelta(minutes=1)).isoformat(),
        "--status",
        "FAILED",
    )["runs"]
    assert [r["rerun_of"] for r in reruns] == [failed["id"]]
    assert ended(local, reruns[0]["id"])["status"] == "SUCCEEDED"


def test_given_two_jobs_of_one_flow_with_max_running_1_when_due_in_the_same_second_then_the_second_starts_after_the_first_ended_and_its_wait_is_recorded(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    sink.delays["/flow"] = 2.0
    at = whole_second_after(5)
    made = [
        jobs.create(
            {
                "name": f"flow-{i}",
                "schedule": {"type": "at", "at": at.isoformat()},
                "target": {"type": "http", "url": f"{sink.url}/flow"},
                "flow": {"key": "e2e-partner", "max_running": 1},
            }
        )
        for i in range(2)
    ]

    runs = [wait_for_runs(local, job["id"], 1, timeout=180)[0] for job in made]

    assert {r["status"] for r in runs} == {"SUCCEEDED"}
    first, second = sorted(runs, key=lambda r: r["started_at"])
    assert parse(second["started_at"]) >= parse(first["finished_at"])  # never both at once
    assert second["held_at"] is not None
    assert second["flow_wait_ms"] >= 2000
    assert second["lag_ms"] >= second["flow_wait_ms"]
    hits = sink.hits_to("/flow")
    assert len(hits) == 2
    assert hits[1].at - hits[0].at >= timedelta(seconds=2)
