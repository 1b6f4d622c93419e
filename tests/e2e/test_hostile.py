"""An attacker holding an ordinary (non-admin) token against one ``chronoq local``, started as
on a shared machine (``--block-private-targets``, with loopback itself allowed, so that only
chronoq's own rules stand between a job and chronoq): targets that reach chronoq itself, the
embedded AWS's port, the SSRF guard's forms, options smuggled to docker, and what a fuzzer or
a busy client sends. Every request gets an answer: no 5xx, no closed connection, no 2xx for
what must be refused."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.e2e.harness import API_TIMEOUT_SECONDS, Local, now, start_local

USER = "mallory"


@pytest.fixture(scope="module")
def hostile(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Local, str, dict[str, str]]]:
    """chronoq local, its embedded AWS's address and its credentials (from the banner)."""
    data = tmp_path_factory.mktemp("chronoq-hostile")
    with start_local(
        data, "--block-private-targets", "--allowed-target-networks", "127.0.0.0/8,::1/128"
    ) as local:
        assert local.process is not None
        assert local.process.stdout is not None
        url, credentials = "", dict[str, str]()
        while not credentials:
            line = local.process.stdout.readline()
            assert line, "the banner names no embedded AWS and its credentials"
            if line.startswith("aws: "):
                url = line.split()[1]
            if line.startswith("aws credentials: "):
                words = dict(w.split("=", 1) for w in line.split() if w.startswith("AWS_"))
                credentials = {
                    "aws_access_key_id": words["AWS_ACCESS_KEY_ID"],
                    "aws_secret_access_key": words["AWS_SECRET_ACCESS_KEY"],
                }
        yield local, url, credentials


def _job(target: dict[str, Any], **extra: Any) -> dict[str, Any]:
    at = (now() + timedelta(days=1)).replace(microsecond=0)
    return {
        "name": f"probe-{uuid.uuid4().hex[:8]}",  # (names are unique per owner)
        "schedule": {"type": "at", "at": at.isoformat()},
        "target": target,
        **extra,
    }


def _refused(local: Local, body: dict[str, Any], field: str) -> str:
    status, answer = local.call("POST", "/jobs", user=USER, body=body)
    assert status == 422, (status, answer)
    assert answer["error"]["field"] == field, answer
    return str(answer["error"]["message"])


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


# --- 1. targets that reach chronoq itself --------------------------------------------------------


def _as_bob(path: str) -> dict[str, Any]:
    """An API Gateway event claiming bob's identity: what the attack's job sends."""
    return {
        "version": "2.0",
        "routeKey": "ANY /{proxy+}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "authorizer": {"jwt": {"claims": {"sub": "bob"}, "scopes": None}},
            "http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
            "requestId": "x",
            "routeKey": "ANY /{proxy+}",
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize(
    "function", ["api", "runner", "worker", "dispatcher", "notifier", "console"]
)
def test_given_a_lambda_target_naming_a_chronoq_function_when_created_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]], function: str
) -> None:
    local, _, _ = hostile
    target = {
        "type": "lambda",
        "function_arn": f"arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-{function}",
        "payload": _as_bob("/notifications/secret"),
    }

    assert "chronoq itself" in _refused(local, _job(target), "target.function_arn")


@pytest.mark.parametrize(
    ("target", "field"),
    [
        (
            {
                "type": "sqs",
                "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-runshigh",
            },
            "target.queue_url",
        ),
        (
            {
                "type": "sns",
                "topic_arn": "arn:aws:sns:us-east-1:123456789012:chronoq-local-runnotifications",
            },
            "target.topic_arn",
        ),
        ({"type": "eventbridge", "event_bus": "chronoq-local-bus"}, "target.event_bus"),
    ],
)
def test_given_a_target_naming_a_chronoq_queue_topic_or_bus_when_created_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]], target: dict[str, Any], field: str
) -> None:
    local, _, _ = hostile

    assert "chronoq itself" in _refused(local, _job(target), field)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "2130706433",
        "0x7f.1",
        "127.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "127.0.0.2",
    ],
)
@pytest.mark.parametrize("which", ["api", "aws"])
def test_given_an_http_target_or_webhook_at_chronoq_locals_own_ports_when_created_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]], host: str, which: str
) -> None:
    local, aws_url, _ = hostile
    port = _port(local.url if which == "api" else aws_url)
    url = f"http://{host}:{port}/"
    as_target = _job({"type": "http", "url": url, "method": "POST"})
    as_webhook = _job(
        {"type": "python", "task": "chronoq.tasks:echo"}, notify={"on": ["FAILED"], "webhook": url}
    )

    assert "chronoq's own endpoint" in _refused(local, as_target, "target.url")
    assert "chronoq's own endpoint" in _refused(local, as_webhook, "notify.webhook")


def test_given_loopback_allowed_when_another_local_port_is_named_then_it_is_accepted(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    local, _, _ = hostile

    status, job = local.call(
        "POST", "/jobs", user=USER, body=_job({"type": "http", "url": "http://127.0.0.1:9/"})
    )

    assert status == 201, job
    assert local.call("DELETE", f"/jobs/{job['id']}", user=USER)[0] == 204


# --- 2. the embedded AWS's port: signed with the local credentials, or refused -------------------


def _aws_client(service: str, url: str, credentials: dict[str, str]) -> Any:
    # (a session of its own: boto3's default one is left for moto to set up in this process)
    session = boto3.session.Session()
    return session.client(service, endpoint_url=url, region_name="us-east-1", **credentials)  # type: ignore[call-overload]


def test_given_an_unsigned_dynamodb_scan_when_sent_to_the_aws_port_then_it_is_refused_as_aws_refuses(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    _, aws_url, _ = hostile
    request = urllib.request.Request(
        aws_url + "/",
        data=json.dumps({"TableName": "chronoq-local-jobs"}).encode(),
        headers={
            "X-Amz-Target": "DynamoDB_20120810.Scan",
            "Content-Type": "application/x-amz-json-1.0",
            "Authorization": "AWS4-HMAC-SHA256 Credential=any/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature="
            + "0" * 64,
            "X-Amz-Date": "20260101T000000Z",
        },
    )

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=API_TIMEOUT_SECONDS)

    assert refused.value.code == 403
    assert json.loads(refused.value.read())["__type"] == "UnrecognizedClientException"


@pytest.mark.parametrize("service", ["dynamodb", "lambda", "sqs"])
def test_given_any_credentials_but_the_local_ones_when_the_aws_port_is_called_then_403(
    hostile: tuple[Local, str, dict[str, str]], service: str
) -> None:
    _, aws_url, _ = hostile
    client = _aws_client(
        service, aws_url, {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    )
    calls = {
        "dynamodb": lambda: client.scan(TableName="chronoq-local-jobs"),
        "lambda": lambda: client.create_function(
            FunctionName="evil",
            Runtime="python3.12",
            Role="arn:aws:iam::123456789012:role/x",
            Handler="app.handler",
            Code={"ZipFile": b"PK"},
        ),
        "sqs": lambda: client.list_queues(),
    }

    with pytest.raises(ClientError) as refused:
        calls[service]()

    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert refused.value.response["Error"]["Code"] == "UnrecognizedClientException"


def test_given_the_local_credentials_from_the_banner_when_the_aws_port_is_called_then_it_answers(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    _, aws_url, credentials = hostile

    queues = _aws_client("sqs", aws_url, credentials).list_queues()
    tables = _aws_client("dynamodb", aws_url, credentials).list_tables()["TableNames"]

    assert queues["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert "chronoq-local-jobs" not in tables  # (chronoq's own tables are the engine's)


# --- 3. the SSRF guard's forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "192.0.2.1",
        "198.51.100.1",
        "203.0.113.1",
        "192.88.99.1",
        "[2001:db8::1]",
        "[64:ff9b::7f00:1]",
        "[64:ff9b::a9fe:a9fe]",
        "[::ffff:0:7f00:1]",
        "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
        "[2002:a9fe:a9fe::]",
        "169.254.169.254",
        "10.0.0.1",
    ],
)
def test_given_the_guard_on_when_a_target_or_webhook_names_a_non_global_literal_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]], host: str
) -> None:
    local, _, _ = hostile
    url = f"http://{host}/hook"

    _refused(local, _job({"type": "http", "url": url}), "target.url")
    _refused(
        local,
        _job({"type": "python", "task": "chronoq.tasks:echo"}, notify={"webhook": url}),
        "notify.webhook",
    )


# --- 4. docker mode: nothing from the job is an option -----------------------------------------


@pytest.mark.parametrize("image", ["-v=/:/host", "--privileged", "busybox --privileged", "Busybox"])
def test_given_an_image_that_is_no_image_reference_when_created_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]], image: str
) -> None:
    local, _, _ = hostile

    _refused(local, _job({"type": "container", "image": image, "command": ["id"]}), "target.image")


def test_given_an_environment_name_that_is_no_name_when_created_then_it_is_refused(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    local, _, _ = hostile
    target = {
        "type": "container",
        "image": "busybox:1.36",
        "command": ["id"],
        "environment": {"--privileged": "1"},
    }

    _refused(local, _job(target), "target.environment")


# --- 5. rough edges --------------------------------------------------------------------------


def _raw(
    local: Local,
    method: str,
    target: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> http.client.HTTPResponse:
    parts = urlsplit(local.url)
    connection = http.client.HTTPConnection(
        parts.hostname or "", parts.port, timeout=API_TIMEOUT_SECONDS
    )
    connection.putrequest(method, target, skip_accept_encoding=True)
    for name, value in {"Authorization": f"Bearer {local.token(USER)}", **(headers or {})}.items():
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(len(body or b"")))
    connection.endheaders(body)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer


@pytest.mark.parametrize("method", ["OPTIONS", "HEAD", "TRACE", "CONNECT", "PROPFIND"])
@pytest.mark.parametrize(
    ("path", "allowed"), [("/jobs", "GET, POST"), ("/jobs/job_x/pause", "POST")]
)
def test_given_a_method_no_route_takes_when_sent_then_405_with_allow(
    hostile: tuple[Local, str, dict[str, str]], method: str, path: str, allowed: str
) -> None:
    local, _, _ = hostile

    answer = _raw(local, method, path)

    assert answer.status == 405
    assert answer.getheader("Allow") == allowed


@pytest.mark.parametrize(
    "path", ["/console/%00", "/console/" + "a" * 300, "/console/" + "a/" * 200, "/console/%ff%fe"]
)
def test_given_a_console_path_the_file_system_cannot_take_when_got_then_404(
    hostile: tuple[Local, str, dict[str, str]], path: str
) -> None:
    local, _, _ = hostile

    assert _raw(local, "GET", path).status == 404


def test_given_fifty_concurrent_creates_when_sent_at_once_then_each_gets_an_answer(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    local, _, _ = hostile
    start = threading.Barrier(50)
    statuses: list[object] = []
    answers: list[object] = []
    lock = threading.Lock()

    def create(n: int) -> None:
        start.wait()
        status: object
        try:
            status, answer = local.call(
                "POST",
                "/jobs",
                user="crowd",
                body=_job({"type": "python", "task": "chronoq.tasks:echo"}, name=f"c{n}"),
            )
        except OSError as error:  # (a reset connection)
            status = answer = f"{type(error).__name__}: {error}"
        with lock:
            statuses.append(status)
            if status != 201:
                answers.append(answer)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == [201] * 50, answers
    status, page = local.call("GET", "/jobs?limit=100", user="crowd")
    assert status == 200
    for job in page["jobs"]:
        local.call("DELETE", f"/jobs/{job['id']}", user="crowd")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "\x1b[2J\x1b[1;31mYOUR JOBS WERE DELETED"}, "name"),
        ({"name": "report\u202eexe.pdf"}, "name"),
        ({"name": "nul\x00byte"}, "name"),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://example.com/",
                    "headers": {"X-Team": "équipe ☃"},
                }
            },
            "target.headers.X-Team",
        ),
    ],
)
def test_given_text_that_cannot_be_shown_or_sent_when_created_then_422_names_the_field(
    hostile: tuple[Local, str, dict[str, str]], changes: dict[str, Any], field: str
) -> None:
    local, _, _ = hostile
    body = {**_job({"type": "python", "task": "chronoq.tasks:echo"}), **changes}

    _refused(local, body, field)


@pytest.mark.parametrize(
    "content_type", ["application/merge-patch+json", "application/vnd.chronoq+json; charset=utf-8"]
)
def test_given_a_json_content_type_the_docs_accept_when_created_then_201(
    hostile: tuple[Local, str, dict[str, str]], content_type: str
) -> None:
    local, _, _ = hostile
    body = json.dumps(_job({"type": "python", "task": "chronoq.tasks:echo"})).encode()

    answer = _raw(local, "POST", "/jobs", {"Content-Type": content_type}, body)

    assert answer.status == 201


def test_given_a_body_that_is_not_utf8_when_created_then_400_malformed_json(
    hostile: tuple[Local, str, dict[str, str]],
) -> None:
    local, _, _ = hostile

    answer = _raw(
        local, "POST", "/jobs", {"Content-Type": "application/json"}, b'{"name": "caf\xe9"}'
    )

    assert answer.status == 400
