"""Run parameters and placeholders against chronoq local, over HTTP and the command line: a
backfill's runs each receive their own fire time in the target's body, and a trigger's
parameters reach the target's URL and body."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from tests.e2e.harness import Jobs, Local, now, parse, poll
from tests.e2e.test_run_features import cli_json, ended
from tests.support import Sink


def test_given_a_backfill_and_a_trigger_with_parameters_when_they_run_then_each_run_receives_its_own_fire_time_and_the_parameters(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    # every minute of the hour before this one: no run of its own is due for about a day
    hour = now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    job = jobs.create(
        {
            "name": "daily load",
            "schedule": {"type": "cron", "expression": f"* {hour.hour} * * *"},
            "target": {
                "type": "http",
                "url": f"{sink.url}/load/{{{{ params.day }}}}?run={{{{ run_id }}}}",
                "body": {
                    "scheduled_at": "{{ scheduled_at }}",
                    "day": "{{ params.day }}",
                    "job": "{{ job.name }}",
                    "limit": "{{ params.limit }}",
                },
            },
            "parameters": {"day": "default", "limit": 10},
        }
    )
    assert local.call("POST", f"/jobs/{job['id']}/pause")[0] == 200  # (only the backfill runs)
    to = hour + timedelta(minutes=3)

    backfill = cli_json(
        local,
        "jobs",
        "backfill",
        job["id"],
        "--from",
        hour.isoformat(),
        "--to",
        to.isoformat(),
        "--param",
        "day=2026-11-01",
    )

    def completed() -> dict[str, Any] | None:
        found = cli_json(local, "backfills", "get", job["id"], backfill["id"])
        return found if found["state"] == "COMPLETED" else None

    done = poll(completed, 180, lambda: "the backfill to complete", interval=1.0)
    assert done["runs"] == {"SUCCEEDED": 3}
    runs = local.runs(job["id"])
    hits = [h for h in sink.hits if h.path.startswith("/load/2026-11-01?run=")]
    bodies = {h.path.split("=", 1)[1]: json.loads(h.body) for h in hits}
    assert len(hits) == 3
    for run in runs:
        assert run["parameters"] == {"day": "2026-11-01", "limit": 10}
        assert bodies[run["id"]] == {
            "scheduled_at": run["scheduled_at"],
            "day": "2026-11-01",
            "job": "daily load",
            "limit": 10,
        }
    assert sorted(parse(b["scheduled_at"]) for b in bodies.values()) == [
        hour + timedelta(minutes=m) for m in range(3)
    ]

    status, run = local.call(
        "POST", f"/jobs/{job['id']}/trigger", body={"parameters": {"day": "2026-11-02"}}
    )

    assert status == 202, run
    assert ended(local, run["id"])["status"] == "SUCCEEDED"
    (hit,) = sink.hits_to(f"/load/2026-11-02?run={run['id']}")
    assert json.loads(hit.body) == {
        "scheduled_at": run["scheduled_at"],
        "day": "2026-11-02",
        "job": "daily load",
        "limit": 10,
    }
