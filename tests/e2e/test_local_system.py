"""chronoq local end to end, over HTTP, with a real HTTP target."""

from __future__ import annotations

import json
import subprocess
import time

from chronoq.domain.notifications import verify

from tests.e2e.harness import (
    CHRONOQ,
    Jobs,
    Local,
    parse,
    seconds_until,
    wait_for_runs,
)
from tests.support import Sink, wait_for


def test_given_an_at_job_five_seconds_ahead_when_its_time_comes_then_the_target_is_called_once_on_time(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    job, at = jobs.create_at(
        {
            "name": "e2e-at",
            "target": {"type": "http", "url": f"{sink.url}/at", "method": "POST", "body": {"n": 1}},
        },
        lead=5,
    )
    assert {"id", "owner", "state", "next_run_at"} <= job.keys()

    (run,) = wait_for_runs(local, job["id"], 1, timeout=seconds_until(at) + 60)

    assert run["status"] == "SUCCEEDED", run
    assert parse(run["scheduled_at"]) == at
    assert parse(run["started_at"]) >= at  # not before its second (how soon after: bench)
    assert parse(run["finished_at"]) >= parse(run["started_at"])
    assert len(sink.hits_to("/at")) == 1
    _, again = local.call("GET", f"/runs/{run['id']}")
    assert again["status"] == "SUCCEEDED"


def test_given_alices_job_when_bob_or_nobody_asks_then_404_and_401(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    job = jobs.create(
        {
            "name": "private",
            "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
            "target": {"type": "http", "url": f"{sink.url}/private"},
        }
    )

    assert local.call("GET", f"/jobs/{job['id']}", user="alice")[0] == 200
    assert local.call("GET", f"/jobs/{job['id']}", user="bob")[0] == 404
    assert local.call("GET", f"/jobs/{job['id']}", user=None) == (401, {"message": "Unauthorized"})
    assert job["id"] not in [j["id"] for j in local.call("GET", "/jobs", user="bob")[1]["jobs"]]


def test_given_bad_input_when_posted_then_422_names_the_field(sink: Sink, jobs: Jobs) -> None:
    status, body = jobs.post(
        {
            "name": "bad",
            "schedule": {"type": "cron", "expression": "* * *"},
            "target": {"type": "http", "url": f"{sink.url}/x"},
        }
    )

    assert status == 422, body
    assert body["error"]["field"] == "schedule.expression"


def test_given_a_python_task_that_fails_twice_when_it_runs_then_the_third_attempt_succeeds_and_its_webhook_gets_one_signed_notification(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    job, at = jobs.create_at(
        {
            "name": "flaky",
            "target": {
                "type": "python",
                "task": "chronoq.tasks:flaky",
                "args": {"succeed_on_attempt": 3},
            },
            "retry": {
                "max_attempts": 3,
                "interval_seconds": 1,
                "backoff_rate": 2.0,
                "jitter": False,
            },
            "notify": {"on": ["SUCCEEDED", "FAILED"], "webhook": sink.url + "/notify"},
        },
        lead=3,
    )

    # Three attempts, with pauses of 1 s and 2 s between them.
    (run,) = wait_for_runs(local, job["id"], 1, timeout=seconds_until(at) + 90)

    assert run["status"] == "SUCCEEDED", run
    assert [(a["attempt"], a["outcome"]) for a in run["attempts"]] == [
        (1, "RuntimeError"),
        (2, "RuntimeError"),
        (3, "SUCCEEDED"),
    ]
    assert run["attempts"][0]["error"] == "RuntimeError: attempt 1 fails; attempt 3 will succeed"
    assert run["output"] == '{"result":{"attempt":3}}'

    (hit,) = wait_for(lambda: sink.hits_to("/notify"), timeout=60)
    _, secret = local.call("GET", "/notifications/secret")
    assert verify(secret["secret"], hit.headers["X-Chronoq-Signature"], hit.body, time.time())
    notification = json.loads(hit.body)
    assert (notification["run_id"], notification["status"]) == (run["id"], "SUCCEEDED")
    assert notification["attempts"] == 3
    wait_for(lambda: local.call("GET", f"/runs/{run['id']}")[1]["notifications"], timeout=60)
    assert len(sink.hits_to("/notify")) == 1  # one notification, however often the run changed

    logs = subprocess.run(
        [CHRONOQ, "runs", "logs", run["id"], "--api", local.url, "--token", local.token("alice")],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    assert [line.split("] ", 1)[1] for line in logs if "flaky task" in line] == [
        "INFO attempt 1 of a flaky task",
        "INFO attempt 2 of a flaky task",
        "INFO attempt 3 of a flaky task",
    ]
