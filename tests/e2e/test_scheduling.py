"""Scheduling semantics of chronoq local end to end, on the wall clock: a run triggered by
hand. (What happens over minutes, on a clock the tests move: test_over_minutes.py.)"""

from __future__ import annotations

from tests.e2e.harness import Jobs, Local
from tests.support import Sink, wait_for


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
