"""The embedded AWS served on a port (chronoq.local.endpoint): what a client creates through it
is what chronoq's own in-process calls see, and the other way round."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from chronoq.local import endpoint
from chronoq.local.sigv4 import Credentials

from tests.integration.conftest import Harness

#: The local deployment's credentials, which the port serves (and no others).
CREDENTIALS = Credentials("AKIACHRONOQLOCALTEST", "the-local-secret-key")


@pytest.fixture
def aws_url(harness: Harness) -> Iterator[str]:
    server, thread = endpoint.serve("127.0.0.1", 0, CREDENTIALS)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _client(service: str, url: str, credentials: Credentials = CREDENTIALS) -> Any:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=credentials.access_key,
        aws_secret_access_key=credentials.secret_key,
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


def test_given_an_unsigned_request_when_sent_to_the_aws_port_then_it_is_refused_as_aws_would(
    aws_url: str,
) -> None:
    request = urllib.request.Request(
        aws_url + "/",
        data=b"{}",
        headers={
            "X-Amz-Target": "DynamoDB_20120810.Scan",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)

    assert refused.value.code == 403
    assert json.loads(refused.value.read())["__type"] == "MissingAuthenticationTokenException"


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        (
            "dynamodb",
            lambda c: c.scan(TableName="chronoq-local-jobs"),
            "UnrecognizedClientException",
        ),
        ("lambda", lambda c: c.list_functions(), "UnrecognizedClientException"),
        ("sqs", lambda c: c.list_queues(), "UnrecognizedClientException"),
        ("sns", lambda c: c.list_topics(), "InvalidClientTokenId"),
        ("s3", lambda c: c.list_buckets(), "InvalidAccessKeyId"),
    ],
)
def test_given_other_credentials_when_a_request_is_signed_with_them_then_the_service_refuses_it_in_its_own_shape(
    aws_url: str, service: str, call: Any, code: str
) -> None:
    other = Credentials("AKIASOMEONEELSE00000", "any")

    with pytest.raises(ClientError) as refused:
        call(_client(service, aws_url, other))

    assert refused.value.response["Error"]["Code"] == code
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        ("dynamodb", lambda c: c.scan(TableName="chronoq-local-jobs"), "InvalidSignatureException"),
        ("lambda", lambda c: c.list_functions(), "InvalidSignatureException"),
        ("sns", lambda c: c.list_topics(), "SignatureDoesNotMatch"),
        ("s3", lambda c: c.list_buckets(), "SignatureDoesNotMatch"),
    ],
)
def test_given_the_right_key_with_a_wrong_secret_when_signed_then_the_signature_is_refused(
    aws_url: str, service: str, call: Any, code: str
) -> None:
    forged = Credentials(CREDENTIALS.access_key, "a-guess")

    with pytest.raises(ClientError) as refused:
        call(_client(service, aws_url, forged))

    assert refused.value.response["Error"]["Code"] == code
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_given_the_local_credentials_when_an_object_is_put_and_read_through_the_port_then_it_round_trips(
    aws_url: str,
) -> None:
    s3 = _client("s3", aws_url)
    s3.create_bucket(Bucket="exports")
    s3.put_object(Bucket="exports", Key="a/b c.txt", Body=b"hello")

    assert s3.get_object(Bucket="exports", Key="a/b c.txt")["Body"].read() == b"hello"
