"""chronoq local counts what a workload would cost on AWS: one run counted by hand against the
usage document, and the endpoint and ``chronoq cost`` that serve it."""

from __future__ import annotations

import json
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from chronoq import resources as r
from chronoq.cli.main import main
from chronoq.local import tokens
from chronoq.local.system import LocalSystem
from chronoq.local.usage import per_million_runs, uncounted

from tests.builders import message_for, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, wait_for


def test_given_one_http_run_when_counted_then_every_request_unit_and_transition_is_as_counted_by_hand(
    harness: Harness, sink: Sink
) -> None:
    job = harness.create_job({"type": "http", "url": sink.url + "/x"})
    # executions of earlier tests still ending in this process would be counted too
    wait_for(
        lambda: not any(t.name.endswith("(_exec_and_notify)") for t in threading.enumerate()),
        timeout=120,
    )
    harness.aws.reset_usage()

    status, run = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )
    assert status == 202
    with uncounted():  # (the test reads the run to write its message)
        kept = harness.wiring().store.get_run(job["id"], run["id"])
    assert kept is not None
    harness.invoke(r.WORKER_FUNCTION, worker_event(message_for(kept)))
    with uncounted():  # the test's own waiting is not the workload's
        wait_for(
            lambda: harness.wiring().runs.get_run("alice", run["id"]).status.value == "SUCCEEDED"
        )
    usage = harness.aws.usage_document()

    # By hand: the api reads the job, records the run and queues it; the worker reads the job
    # and the run, claims it (the job's active runs, the run QUEUED) and starts its execution;
    # the state machine marks it RUNNING, invokes the runner (which keeps the attempt's log),
    # marks it SUCCEEDED and releases the job: 8 transitions.
    assert usage["aws_requests_by_caller"] == {
        "api": 3,
        "worker": 5,
        "statemachine": 4,
        "runner": 1,
    }
    assert usage["aws_requests"] == {
        "dynamodb:GetItem": 3,
        "dynamodb:PutItem": 1,
        "dynamodb:UpdateItem": 6,
        "lambda:Invoke": 1,
        "sqs:SendMessageBatch": 1,
        "stepfunctions:StartExecution": 1,
    }
    # Writes, 1 KB each: the run (1), the claim on the job (1; its owner index entry holds
    # keys only and is not rewritten), the run QUEUED (1), RUNNING (1), the log (1),
    # SUCCEEDED (1), the job released (1). Reads: 3 strongly consistent reads of items under
    # 4 KB.
    assert usage["dynamodb"] == {"write_units": 7.0, "read_units": 3.0}
    assert {n: u["invocations"] for n, u in usage["lambda"].items()} == {
        "api": 1,
        "worker": 1,
        "runner": 1,
    }
    assert {n: u["memory_mb"] for n, u in usage["lambda"].items()} == {
        f.name: f.memory_mb for f in (r.API_FUNCTION, r.WORKER_FUNCTION, r.RUNNER_FUNCTION)
    }
    assert usage["stepfunctions"]["standard"] == {"executions": 1, "transitions": 8}
    assert usage["sqs"] == {"requests": 1}
    assert usage["runs_finished"] == 1
    assert per_million_runs(usage)["stepfunctions"] == Decimal(200)  # 8 x $25 per million


def test_given_chronoq_local_when_its_usage_is_asked_for_then_it_is_served_priced_and_reset(
    tmp_path: Path, sink: Sink, capsys: pytest.CaptureFixture[str]
) -> None:
    system = LocalSystem(port=0, data_dir=tmp_path).start()
    try:
        token = tokens.mint(tmp_path, "alice")
        api = ["--api", system.url, "--token", token]
        job_status, _ = _post_job(system.url, token, sink)
        assert job_status == 201

        assert main(["cost", *api, "--json"]) == 0
        document = json.loads(capsys.readouterr().out)
        assert document["usage"]["aws_requests"]["dynamodb:PutItem"] >= 1
        assert document["usage"]["lambda"]["api"]["invocations"] >= 1

        assert main(["cost", *api, "--reset"]) == 0
        printed = capsys.readouterr().out
        assert "runs finished: 0" in printed
        assert main(["cost", *api, "--json"]) == 0
        after = json.loads(capsys.readouterr().out)["usage"]
        assert after["lambda"].get("api", {"invocations": 0})["invocations"] == 0
        assert main(["cost", "--api", system.url, "--token", "not-a-token"]) == 1
        assert "HTTP 401" in capsys.readouterr().err
    finally:
        system.stop()


def _post_job(url: str, token: str, sink: Sink) -> tuple[int, object]:
    import urllib.request

    body = {
        "name": "t",
        "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
        "target": {"type": "http", "url": sink.url},
    }
    request = urllib.request.Request(
        f"{url}/jobs",
        method="POST",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, json.load(answer)
