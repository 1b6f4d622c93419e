"""Secrets on chronoq local, over HTTP as a user would use them: an http target receives the
header a secret holds, the job shows only the reference, and neither the run's logs nor its
output hold the value, though the target echoes it back; a rotated value reaches the next
run; a secret its job names cannot be deleted."""

from __future__ import annotations

import json

from tests.e2e.harness import Jobs, Local, poll
from tests.e2e.test_run_features import ended
from tests.support import Sink

FIRST = "crm-e2e-8d0f7c2a91"
SECOND = "crm-e2e-rotated-44b1"


def test_given_a_job_naming_a_secret_when_it_runs_then_the_target_gets_the_value_and_nothing_shown_holds_it(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    assert local.call("PUT", "/secrets/e2e-crm", body={"value": FIRST})[0] in (200, 201)
    sink.answer = json.dumps({"echo": f"Bearer {FIRST}"}).encode()  # (a target echoing it)
    job, _ = jobs.create_at(
        {
            "name": "secret-header",
            "target": {
                "type": "http",
                "url": f"{sink.url}/crm?key={{{{secret.e2e-crm}}}}",
                "headers": {"Authorization": "Bearer {{ secret.e2e-crm }}"},
            },
            "retry": {"max_attempts": 1},
        },
        lead=2,
    )

    first = poll(lambda: next(iter(local.runs(job["id"])), None), 60, "the run")
    run = ended(local, first["id"])

    assert run["status"] == "SUCCEEDED", run
    (hit,) = sink.hits_to(f"/crm?key={FIRST}")
    assert hit.headers["Authorization"] == f"Bearer {FIRST}"
    shown = [
        local.call("GET", f"/jobs/{job['id']}")[1],
        local.call("GET", f"/runs/{run['id']}")[1],
        local.call("GET", f"/runs/{run['id']}/logs")[1],
        local.call("GET", f"/runs/{run['id']}/output")[1],
        local.call("GET", "/secrets")[1],
    ]
    assert FIRST not in json.dumps(shown)
    assert shown[0]["target"]["headers"] == {"Authorization": "Bearer {{ secret.e2e-crm }}"}
    assert "***" in json.dumps(shown[3])

    refused = local.call("DELETE", "/secrets/e2e-crm")
    assert (refused[0], refused[1]["error"]["jobs"]) == (409, [job["id"]])
    assert local.call("PUT", "/secrets/e2e-crm", body={"value": SECOND})[1]["version"] == 2
    assert local.call("POST", f"/jobs/{job['id']}/trigger")[0] == 202
    poll(lambda: sink.hits_to(f"/crm?key={SECOND}") or None, 60, "the rotated value to arrive")
    jobs.delete_all()
    assert local.call("DELETE", "/secrets/e2e-crm")[0] == 204
