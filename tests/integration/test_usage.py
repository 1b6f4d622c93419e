"""chronoq local counts what a workload would cost on AWS: one run counted by hand against the
usage document, and the endpoint and ``chronoq cost`` that serve it."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.cli.main import main
from chronoq.domain import ids
from chronoq.local import tokens
from chronoq.local.system import LocalSystem
from chronoq.local.usage import PRICES, per_million_runs, uncounted

from tests.builders import unique_name, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, load_event, wait_for


def test_given_one_http_run_when_counted_then_every_request_unit_and_execution_is_as_counted_by_hand(
    harness: Harness, sink: Sink
) -> None:
    # concurrency allow and the default timeout (1 attempt of 60 s): the run fits EXPRESS
    job = harness.create_job({"type": "http", "url": sink.url + "/x"})
    # executions of earlier tests still ending in this process would be counted too
    with uncounted():
        wait_for(
            lambda: not any(e["status"] == "RUNNING" for e in harness.executions()), timeout=120
        )
    harness.aws.reset_usage()

    status, run = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )
    assert status == 202
    harness.invoke(r.WORKER_FUNCTION, worker_event(harness.sent(run["id"])))
    with uncounted():  # the test's own waiting is not the workload's
        wait_for(
            lambda: harness.wiring().runs.get_run("alice", run["id"]).status.value == "SUCCEEDED"
        )
        # (and the execution's end: its duration is billed)
        wait_for(lambda: harness.execution_status(run["id"]) == "SUCCEEDED")
    harness.notify()  # its end, as the notifier hears of it (the runs table's stream)
    usage = harness.aws.usage_document()

    # By hand, from the handlers and the ASL:
    # - api (POST /jobs/{id}/trigger): reads the job (GetItem), counts its triggers not
    #   started yet (Query of its runs of its last start deadline: none), records the run
    #   SCHEDULED (PutItem), queues it (SendMessageBatch) and adds the trigger to the job's
    #   audit trail (ExecuteStatement: a PartiQL INSERT): 5.
    # - worker: reads the jobs of the runs due in that second (BatchGetItem, one consistent
    #   read: here one job); a run asked for (here a manual trigger) goes through its
    #   owner's runs asked for under way: its record read (GetItem: it takes no slot if it
    #   ran), the owner's flow item read and written (GetItem, UpdateItem: its slot); it
    #   counts the run among its owner's runs in flight (UpdateItem, one per owner and
    #   batch); it neither claims it (an allow job); starts the EXPRESS execution of the
    #   batch (StartExecution: here a batch of one run): 6.
    # - statemachine (the EXPRESS batch's Map runs the run's states): MarkRunning
    #   (UpdateItem, noting its slots), RunTarget (lambda:Invoke of the runner), MarkSucceeded
    #   (UpdateItem: outcome, attempt, output and log lines in one write); ReleaseFlows gives
    #   the slot back (UpdateItem); ReleaseIfExclusive skips ReleaseJob (not an exclusive
    #   job): 4.
    # - runner: the output and the log are small: both go back to the state machine,
    #   nothing written (so it makes no request).
    # - notifier (the run's end, from the runs table's stream: its slots name the owner's
    #   flow item and its count): gives the count back (UpdateItem, one per owner and stream
    #   batch: no run is parked on it, so nothing more); reads the owner's flow item
    #   (GetItem) and looks for runs parked on it (Query): 3. (The event source mapping's
    #   reads of the stream, DescribeStream and GetRecords, are free.)
    assert usage["aws_requests_by_caller"] == {
        "api": 5,
        "worker": 6,
        "statemachine": 4,
        "notifier": 3,
        "event-source-mappings": 4,
    }
    assert usage["aws_requests"] == {
        "dynamodb:BatchGetItem": 1,
        "dynamodb:ExecuteStatement": 1,
        "dynamodb:GetItem": 4,
        "dynamodb:PutItem": 1,
        "dynamodb:Query": 2,
        "dynamodb:UpdateItem": 6,
        "dynamodbstreams:DescribeStream": 2,
        "dynamodbstreams:GetRecords": 2,
        "lambda:Invoke": 1,
        "sqs:SendMessageBatch": 1,
        "stepfunctions:StartExecution": 1,
    }
    # Writes, 1 KB each (every version of the run item is under 1 KB; the waiting index
    # holds only parked runs): the run SCHEDULED (1), RUNNING (1), SUCCEEDED (1); the owner's
    # flow item, its slot taken (1) and given back (1); the owner's count of runs in flight,
    # taken (1) and given back (1); the trigger's audit entry (1: a change, not a run's:
    # nothing of the run's own path writes the trail) and its entry in the audit table's
    # owner index (1); the job is not written.
    # Reads, strongly consistent, under 4 KB (1 each): the job twice (api, worker), the run
    # and the owner's flow item (worker), the owner's flow item again (notifier); the api's
    # query of the job's triggers and the notifier's of the runs parked on the flow item,
    # eventually consistent, finding none (0.5 each, the least a query costs).
    assert usage["dynamodb"] == {"write_units": 9.0, "read_units": 6.0}
    assert {n: u["invocations"] for n, u in usage["lambda"].items()} == {
        "api": 1,
        "worker": 1,
        "runner": 1,
        "notifier": 1,
    }
    assert {n: u["memory_mb"] for n, u in usage["lambda"].items()} == {
        f.name: f.memory_mb
        for f in (r.API_FUNCTION, r.WORKER_FUNCTION, r.RUNNER_FUNCTION, r.NOTIFIER_FUNCTION)
    }
    # One EXPRESS execution (the worker's batch), billed by its duration (rounded up to
    # 100 ms, at 64 MB); no STANDARD execution and so no state transition billed.
    assert usage["stepfunctions"]["standard"] == {"executions": 0, "transitions": 0}
    express = usage["stepfunctions"]["express"]
    assert (express["executions"], express["memory_mb"]) == (1, r.EXPRESS_MEMORY_MB)
    assert express["billed_ms"] > 0
    assert express["billed_ms"] % r.EXPRESS_BILLING_STEP_MS == 0
    assert usage["sqs"] == {"requests": 1}
    assert usage["sns"] == {"publishes": 0}  # a success nobody asked to hear of
    assert usage["runs_finished"] == 1
    # $1.00 per million executions, and $0.00001667 per GB-second of their duration
    gb_seconds = Decimal(r.EXPRESS_MEMORY_MB) / 1024 * Decimal(express["billed_ms"]) / 1000
    assert per_million_runs(usage)["stepfunctions"] == (
        Decimal(1) + gb_seconds * PRICES["express_gb_second"] * 1_000_000
    )


def test_given_chronoq_local_when_its_usage_is_asked_for_then_it_is_served_priced_and_reset(
    tmp_path: Path, sink: Sink, capsys: pytest.CaptureFixture[str]
) -> None:
    system = LocalSystem(port=0, data_dir=tmp_path).start()
    try:
        token = tokens.mint(tmp_path, "alice", admin=True)  # its controls need one
        api = ["--api", system.url, "--token", token]
        job_status, _ = _post_job(system.url, token, sink)
        assert job_status == 201

        assert main(["cost", *api, "--json"]) == 0
        document = _printed(capsys.readouterr().out)
        assert document["usage"]["aws_requests"]["dynamodb:PutItem"] >= 1
        assert document["usage"]["lambda"]["api"]["invocations"] >= 1

        assert main(["cost", *api, "--reset"]) == 0
        printed = capsys.readouterr().out
        assert "runs finished: 0" in printed
        assert main(["cost", *api, "--json"]) == 0
        after = _printed(capsys.readouterr().out)["usage"]
        assert after["lambda"].get("api", {"invocations": 0})["invocations"] == 0
        assert main(["cost", "--api", system.url, "--token", "not-a-token"]) == 1
        assert "HTTP 401" in capsys.readouterr().err
    finally:
        system.stop()


def _printed(out: str) -> Any:
    """The document ``chronoq cost --json`` printed (chronoq local, in this process, prints
    its functions' log lines on the same stdout meanwhile: one JSON line each)."""
    return json.loads("\n".join(x for x in out.splitlines() if not x.startswith('{"level"')))


def _post_job(url: str, token: str, sink: Sink) -> tuple[int, object]:
    import urllib.request

    body = {
        "name": unique_name(),
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


def _one_counted_run(harness: Harness, job: dict[str, Any]) -> dict[str, Any]:
    """The usage of one triggered run of ``job``, from its trigger to the notifier hearing of
    its success, counted alone: what ran before it ended and heard first, uncounted."""
    with uncounted():
        wait_for(
            lambda: not any(e["status"] == "RUNNING" for e in harness.executions()),
            timeout=120,
        )
        harness.notify()
    harness.aws.reset_usage()
    status, run = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )
    assert status == 202
    harness.invoke(r.WORKER_FUNCTION, worker_event(harness.sent(run["id"])))
    with uncounted():
        wait_for(
            lambda: harness.wiring().runs.get_run("alice", run["id"]).status.value == "SUCCEEDED"
        )
        wait_for(lambda: harness.execution_status(run["id"]) == "SUCCEEDED")
    harness.notify()
    return harness.aws.usage_document()


def test_given_a_job_with_expect_when_its_run_succeeds_then_the_notifier_adds_two_writes_and_nothing_else(
    harness: Harness, sink: Sink
) -> None:
    """What ``expect`` costs per success (docs/api/notifications.md, "Silence"), measured beside the
    same run of a job without it: the notifier moves the job's expectation on (UpdateItem) and
    writes its next deadline to the time index (BatchWriteItem): two requests, two write units (both
    items are under 1 KB); nothing else on the run's path changes (the run's record names the
    expectation among its ``slots``, a few bytes within the same write unit)."""

    def one_run(**extra: Any) -> dict[str, Any]:
        job = harness.create_job({"type": "http", "url": sink.url + "/x"}, **extra)
        return _one_counted_run(harness, job)

    plain = one_run()
    expecting = one_run(expect={"success_within_seconds": 3600})

    def added(name: str) -> dict[str, Any]:
        return {
            k: expecting[name].get(k, 0) - plain[name].get(k, 0)
            for k in {*plain[name], *expecting[name]}
            if expecting[name].get(k, 0) != plain[name].get(k, 0)
        }

    assert added("aws_requests_by_caller") == {"notifier": 2}
    assert added("aws_requests") == {"dynamodb:UpdateItem": 1, "dynamodb:BatchWriteItem": 1}
    assert added("dynamodb") == {"write_units": 2.0}
    assert expecting["sqs"] == plain["sqs"]
    assert expecting["sns"] == plain["sns"] == {"publishes": 0}


def test_given_a_job_with_expect_when_it_goes_silent_and_recovers_then_each_costs_what_the_docs_say(
    harness: Harness, sink: Sink
) -> None:
    """What a silence and its end cost (docs/api/notifications.md, "Silence"), the job telling the
    topic only: the dispatcher's tick that finds the silence beside the next one (which finds
    nothing), the notifier's part apart."""
    # (the clock at the start of a minute: each tick then opens exactly one minute, however
    # long the test takes on a loaded machine, short of a minute)
    harness.clock.advance_to(ids.minute_of(harness.now()) + timedelta(minutes=1, seconds=1))
    harness.nothing_to_catch_up()
    job = harness.create_job(
        {"type": "http", "url": sink.url + "/x"}, expect={"success_within_seconds": 60}
    )

    def tick() -> tuple[int, dict[str, Any]]:
        harness.clock.advance(60)
        harness.aws.reset_usage()
        silent = harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))["silent"]
        return silent, harness.aws.usage_document()

    ticks = [tick() for _ in range(5)]
    assert [silent for silent, _ in ticks].count(1) == 1
    found = next(n for n, (silent, _) in enumerate(ticks) if silent)
    assert found < 4
    (_, silence), (_, quiet) = ticks[found], ticks[found + 1]
    # the dispatcher: the deadline's expectation read (BatchGetItem, eventually consistent,
    # 0.5), its job read (BatchGetItem, consistent: 1), the job marked silent with its SILENT
    # record (TransactWriteItems of two items under 1 KB: 2 units each; the silent index's
    # write: 1)
    assert _added(quiet, silence, "aws_requests") == {
        "dynamodb:BatchGetItem": 2,
        "dynamodb:TransactWriteItems": 1,
    }
    assert _added(quiet, silence, "dynamodb") == {"read_units": 1.5, "write_units": 5.0}

    harness.aws.reset_usage()
    harness.notify()
    told = harness.aws.usage_document()
    # the notifier: the record's job read (GetItem), its notes (GetItem), the topic told
    # (Publish), how it went noted on the record (UpdateItem); the stream's reads are free
    assert told["aws_requests_by_caller"]["notifier"] == 4
    assert told["sns"] == {"publishes": 1}
    assert told["dynamodb"] == {"read_units": 2.0, "write_units": 1.0}

    harness.aws.reset_usage()
    status, run = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )
    assert status == 202
    harness.invoke(r.WORKER_FUNCTION, worker_event(harness.sent(run["id"])))
    with uncounted():
        wait_for(
            lambda: harness.wiring().runs.get_run("alice", run["id"]).status.value == "SUCCEEDED"
        )
        wait_for(lambda: harness.execution_status(run["id"]) == "SUCCEEDED")
    harness.notify()
    harness.notify()
    recovery = harness.aws.usage_document()
    # the notifier, on the success: its usual 3 (the count of runs in flight given back, the
    # flow item read, the parked runs looked for); the expectation's write refused
    # (UpdateItem: the job is silent; a refused write is billed), the expectation read
    # (GetItem), the silence ended with its RECOVERED record (TransactWriteItems), the next
    # deadline written (BatchWriteItem): 7; on the RECOVERED record, as on the SILENT: 4
    assert recovery["aws_requests_by_caller"]["notifier"] == 11
    assert recovery["aws_requests"]["dynamodb:TransactWriteItems"] == 1
    assert recovery["sns"] == {"publishes": 1}
    # units: the run's own (9 written, 6 read: see the first test, its trigger's audit entry
    # and owner index entry included) and the recovery's: the
    # refused write (1), the transaction (2 items: 4) and its index write (1), the deadline
    # (1), the note (1); the expectation, the record's job and its notes read (1 each)
    assert recovery["dynamodb"] == {"write_units": 9.0 + 8.0, "read_units": 6.0 + 3.0}


def _added(before: dict[str, Any], after: dict[str, Any], name: str) -> dict[str, Any]:
    """What ``after`` holds more of than ``before`` (a usage document's part ``name``)."""
    return {
        k: after[name].get(k, 0) - before[name].get(k, 0)
        for k in {*before[name], *after[name]}
        if after[name].get(k, 0) != before[name].get(k, 0)
    }


def test_given_a_job_one_after_job_follows_when_its_run_succeeds_then_the_notifier_adds_a_read_a_write_and_a_send(
    harness: Harness, sink: Sink
) -> None:
    """What a downstream run of one upstream costs (docs/guides/pipelines.md), measured beside the
    same run of a job nothing follows: the notifier reads the follower (GetItem), creates its run
    (PutItem) and sends it (one SQS request); nothing else on the upstream run's path changes (its
    record names the follower among its ``slots``, a few bytes within the same write unit). A job
    nothing follows costs nothing more: that is ``plain``."""

    def one_run(followed: bool) -> tuple[dict[str, Any], str]:
        job = harness.create_job({"type": "http", "url": sink.url + "/x"})
        if followed:
            status, follower = harness.api(
                api_event(
                    "create_at_job",
                    body={
                        "name": unique_name(),
                        "schedule": {"type": "after", "jobs": [job["id"]]},
                        "target": {"type": "http", "url": sink.url + "/y"},
                    },
                )
            )
            assert status == 201, follower
        return _one_counted_run(harness, job), follower["id"] if followed else ""

    plain, _ = one_run(followed=False)
    following, follower_id = one_run(followed=True)

    def added(name: str) -> dict[str, Any]:
        return {
            k: following[name].get(k, 0) - plain[name].get(k, 0)
            for k in {*plain[name], *following[name]}
            if following[name].get(k, 0) != plain[name].get(k, 0)
        }

    # (the stream's records are read by the event source mapping at no charge on AWS: the new
    # run's record may take chronoq local's poller one read more)
    assert added("aws_requests_by_caller").get("notifier") == 3
    assert {k: v for k, v in added("aws_requests").items() if "streams:" not in k} == {
        "dynamodb:GetItem": 1,
        "dynamodb:PutItem": 1,
        "sqs:SendMessageBatch": 1,
    }
    assert added("dynamodb") == {"read_units": 1.0, "write_units": 1.0}
    (made,) = harness.wiring().store.list_runs(follower_id, 10)
    assert made.trigger.value == "after"
