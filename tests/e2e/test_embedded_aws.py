"""chronoq local serves its embedded AWS on a port of its own (``--aws-port``): a queue created
there with boto3 is the queue an ``sqs`` target sends to, and chronoq's own tables are seen
there too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3

from tests.e2e.harness import Jobs, Local, poll, start_local, wait_for_runs


def _aws_url(local: Local) -> str:
    """The embedded AWS's address, from the banner (after the line ``start_local`` read)."""
    assert local.process is not None
    assert local.process.stdout is not None
    for _ in range(10):
        line = local.process.stdout.readline()
        if line.startswith("aws: "):
            assert "region us-east-1, account 123456789012" in line, line
            return line.split()[1]
    raise AssertionError("the banner names no embedded AWS")


def _client(service: str, url: str) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def test_given_a_queue_created_through_the_aws_port_when_an_sqs_job_runs_then_its_message_is_there(
    tmp_path: Path,
) -> None:
    with start_local(tmp_path) as local:
        url = _aws_url(local)
        sqs = _client("sqs", url)
        queue_url = sqs.create_queue(QueueName="exports")["QueueUrl"]
        assert queue_url == "https://sqs.us-east-1.amazonaws.com/123456789012/exports"
        tables = _client("dynamodb", url).list_tables()["TableNames"]
        assert "chronoq-local-jobs" in tables

        jobs = Jobs(local)
        job, _ = jobs.create_at(
            {
                "name": "export",
                "target": {"type": "sqs", "queue_url": queue_url, "message": {"full": True}},
            },
            lead=3,
        )
        (run,) = wait_for_runs(local, job["id"], 1, timeout=90)
        assert run["status"] == "SUCCEEDED", run

        messages = poll(
            lambda: sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"),
            30,
            "the job's message on the queue",
        )
        assert [json.loads(m["Body"]) for m in messages] == [{"full": True}]
        jobs.delete_all()
