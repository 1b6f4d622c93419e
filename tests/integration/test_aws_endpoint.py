"""The embedded AWS served on a port (chronoq.local.endpoint): what a client creates through it
is what chronoq's own in-process calls see, and the other way round."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from chronoq.local import endpoint

from tests.integration.conftest import Harness


@pytest.fixture
def aws_url(harness: Harness) -> Iterator[str]:
    server, thread = endpoint.serve("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _client(service: str, url: str) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="any",
        aws_secret_access_key="any",
    )


def test_given_the_aws_port_when_a_queue_is_created_through_it_then_chronoq_sees_it_and_it_sees_chronoqs(
    harness: Harness, aws_url: str
) -> None:
    url = _client("sqs", aws_url).create_queue(QueueName="exports")["QueueUrl"]

    assert url == "https://sqs.us-east-1.amazonaws.com/123456789012/exports"
    assert url in harness.aws.client("sqs").list_queues()["QueueUrls"]
    harness.aws.client("sqs").send_message(QueueUrl=url, MessageBody="hello")
    (message,) = _client("sqs", aws_url).receive_message(QueueUrl=url)["Messages"]
    assert message["Body"] == "hello"
    tables = _client("dynamodb", aws_url).list_tables()["TableNames"]
    assert harness.aws.env["CHRONOQ_JOBS_TABLE"] in tables
    topic = _client("sns", aws_url).create_topic(Name="reports")["TopicArn"]
    assert topic == "arn:aws:sns:us-east-1:123456789012:reports"


def test_given_an_unsigned_request_when_sent_to_the_aws_port_then_it_is_refused_with_a_reason(
    aws_url: str,
) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(aws_url + "/", timeout=10)

    assert refused.value.code == 400
    assert b"signed requests" in refused.value.read()
