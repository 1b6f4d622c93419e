"""chronoq local serves its embedded AWS on a port of its own (``--aws-port``): a queue created
there with boto3 is the queue an ``sqs`` target sends to, and chronoq's own tables are seen
there too. (On the chronoq local the end-to-end tests share: its banner, the lines after the
one ``start_local`` read, is read here only.)"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3

from tests.e2e.harness import Jobs, Local, now, poll, wait_for_runs


def _aws(local: Local) -> tuple[str, dict[str, str]]:
    """The embedded AWS's address and credentials, from the banner (after the line
    ``start_local`` read)."""
    assert local.process is not None
    assert local.process.stdout is not None
    url = ""
    for _ in range(10):
        line = local.process.stdout.readline()
        if line.startswith("aws: "):
            assert "region us-east-1, account 123456789012" in line, line
            url = line.split()[1]
        if line.startswith("aws credentials: "):
            words = dict(w.split("=", 1) for w in line.split() if w.startswith("AWS_"))
            return url, {
                "aws_access_key_id": words["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": words["AWS_SECRET_ACCESS_KEY"],
            }
    raise AssertionError("the banner names no embedded AWS and its credentials")


def _client(service: str, aws: tuple[str, dict[str, str]]) -> Any:
    url, credentials = aws
    # (a session of its own: boto3's default one is left for moto to set up in this process)
    return boto3.session.Session().client(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        **credentials,
    )


def test_given_a_queue_created_through_the_aws_port_when_an_sqs_job_runs_then_its_message_is_there(
    local: Local, jobs: Jobs
) -> None:
    aws = _aws(local)
    sqs = _client("sqs", aws)
    queue_url = sqs.create_queue(QueueName="exports")["QueueUrl"]
    assert queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/exports"
    # chronoq's own tables are the engine's: nothing on the embedded AWS's port reaches them
    tables = _client("dynamodb", aws).list_tables()["TableNames"]
    assert "chronoq-local-jobs" not in tables

    job = jobs.create(
        {
            "name": "export-to-embedded-sqs",
            # (its run is triggered: when it runs is not what this test is about)
            "schedule": {"type": "at", "at": (now() + timedelta(hours=1)).isoformat()},
            "target": {"type": "sqs", "queue_url": queue_url, "message": {"full": True}},
        }
    )
    status, triggered = local.call("POST", f"/jobs/{job['id']}/trigger")
    assert status == 202, triggered
    (run,) = wait_for_runs(local, job["id"], 1, timeout=90)
    assert (run["id"], run["status"]) == (triggered["id"], "SUCCEEDED"), run

    messages = poll(
        lambda: sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"),
        30,
        "the job's message on the queue",
    )
    assert [json.loads(m["Body"]) for m in messages] == [{"full": True}]
