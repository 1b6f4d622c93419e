"""An attacker holding an ordinary token, against the api function as deployed (its handler
invoked through the Lambda runtime) and the run path (worker, state machine, runner) on the
embedded AWS: one user never acts as another through chronoq's own functions, and bad input
gets a 4xx naming the field, never a 5xx nor a wrong 2xx."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from chronoq import resources as r
from chronoq.domain.jobs import JobSpec
from chronoq.origin import target_client_context

from tests.integration.conftest import Harness
from tests.integration.test_api_handler import assert_error, job_body, nothing_stored
from tests.support import api_event

ARN = "arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-"


def _bobs_secret_request() -> dict[str, Any]:
    """What the attacker's job sends: an API Gateway event claiming to be bob."""
    return api_event("list_jobs", user="bob", path="/notifications/secret")


@pytest.mark.parametrize(
    ("target", "field"),
    [
        *(
            (
                {"type": "lambda", "function_arn": ARN + f.name, "payload": _bobs_secret_request()},
                "target.function_arn",
            )
            for f in r.FUNCTIONS
        ),
        (
            {
                "type": "sqs",
                "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-runshigh",
            },
            "target.queue_url",
        ),
        (
            {
                "type": "sqs",
                "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-deadletters",
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
        ({"type": "eventbridge", "event_bus": "chronoq-local-events"}, "target.event_bus"),
    ],
)
def test_given_a_target_naming_chronoq_itself_when_a_job_is_created_then_422_names_the_field(
    harness: Harness, target: dict[str, Any], field: str
) -> None:
    status, body = harness.api(api_event("create_at_job", body=job_body(target=target)))

    assert status == 422
    assert_error(body, "invalid_field", field)
    assert "chronoq itself" in body["error"]["message"]
    assert nothing_stored(harness)


def _stored_around_the_api(harness: Harness, target: dict[str, Any]) -> dict[str, Any]:
    """A job stored without the API's check (as one stored before it held would be)."""
    spec = JobSpec.model_validate(job_body(target=target, retry={"max_attempts": 1}))
    job = harness.wiring().jobs.create_job("mallory", spec)
    return {"id": job.id, "owner": job.owner}


def test_given_a_stored_job_targeting_the_api_function_when_it_runs_then_the_call_is_denied_and_bob_is_not_read(
    harness: Harness,
) -> None:
    harness.api(api_event("create_at_job", user="bob", body=job_body(name="bobs")))
    job = _stored_around_the_api(
        harness,
        {"type": "lambda", "function_arn": ARN + "api", "payload": _bobs_secret_request()},
    )

    run = harness.run(job)

    assert run.status.value == "FAILED"
    assert "AccessDenied" in (run.error or ""), run.error
    assert len(run.attempts) == 1  # (refused: not retried)
    logs = "\n".join(harness.wiring().runs.run_logs("mallory", run.id))
    assert '"secret"' not in logs


def test_given_the_denial_gone_when_a_job_invokes_the_api_function_then_the_api_refuses_the_invocation(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.aws.emulation, "own_prefix", None)  # as if IAM let it through
    harness.api(api_event("create_at_job", user="bob", body=job_body(name="bobs")))
    job = _stored_around_the_api(
        harness,
        {"type": "lambda", "function_arn": ARN + "api", "payload": _bobs_secret_request()},
    )

    run = harness.run(job)

    assert run.status.value == "FAILED"
    assert "ForeignInvocation" in (run.error or ""), run.error
    logs = "\n".join(harness.wiring().runs.run_logs("mallory", run.id))
    assert '"secret"' not in logs  # (bob's signing secret never came back)


@pytest.mark.parametrize("function", [f for f in r.FUNCTIONS if f is not r.API_FUNCTION])
def test_given_a_client_context_when_any_chronoq_function_is_invoked_then_it_refuses(
    harness: Harness, function: r.Function
) -> None:
    lam = harness.aws.client("lambda")
    event: dict[str, Any] = {"decide": {}} if function is r.RUNNER_FUNCTION else {"Records": []}

    answer = lam.invoke(
        FunctionName=f"chronoq-local-{function.name}",
        Payload=json.dumps(event).encode(),
        ClientContext=target_client_context("job_x", "run_x"),
    )

    assert answer.get("FunctionError"), function.name
    assert json.loads(answer["Payload"].read())["errorType"] == "ForeignInvocation"


def test_given_a_forged_attempt_for_bobs_run_when_the_runner_gets_it_from_a_target_then_it_writes_nothing(
    harness: Harness,
) -> None:
    lam = harness.aws.client("lambda")
    attempt = {
        "job_id": "job_bob",
        "run_id": "job_bob_20300101T000000Z",
        "scheduled_at": "2030-01-01T00:00:00Z",
        "timeout_seconds": 10,
        "target": {"type": "python", "task": "chronoq.tasks:echo"},
    }

    answer = lam.invoke(
        FunctionName="chronoq-local-runner",
        Payload=json.dumps(attempt).encode(),
        ClientContext=target_client_context("job_mallory", "run_mallory"),
    )

    assert json.loads(answer["Payload"].read())["errorType"] == "ForeignInvocation"
    item = harness.aws.client("dynamodb").get_item(
        TableName="chronoq-local-runs",
        Key={"job_id": {"S": "job_bob"}, "run_id": {"S": "job_bob_20300101T000000Z"}},
    )
    assert "Item" not in item


def test_given_the_runner_when_it_invokes_a_users_function_then_the_function_sees_the_runs_ids(
    harness: Harness,
) -> None:
    import io
    import zipfile

    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr(
            "app.py",
            "def handler(event, context):\n    return context.client_context.custom\n",
        )
    lam = harness.aws.client("lambda")
    arn = lam.create_function(
        FunctionName="whoami",
        Runtime="python3.12",
        Role="arn:aws:iam::123456789012:role/chronoq-local-role",
        Handler="app.handler",
        Code={"ZipFile": code.getvalue()},
    )["FunctionArn"]
    job = harness.create_job({"type": "lambda", "function_arn": arn})

    run = harness.run(job)

    assert run.status.value == "SUCCEEDED", run.error
    output = json.loads(harness.wiring().runs.run_output(job["owner"], run.id) or "{}")
    assert output == {"chronoq_job_id": job["id"], "chronoq_run_id": run.id}


def test_given_an_event_that_is_not_api_gateways_when_the_api_function_gets_it_then_it_refuses(
    harness: Harness,
) -> None:
    lam = harness.aws.client("lambda")

    answer = lam.invoke(
        FunctionName="chronoq-local-api", Payload=json.dumps({"claims": {"sub": "bob"}}).encode()
    )

    assert json.loads(answer["Payload"].read())["errorType"] == "ForeignInvocation"


# --- rough edges through the handler ------------------------------------------------------------


@pytest.mark.parametrize("method", ["OPTIONS", "HEAD", "TRACE", "CONNECT"])
def test_given_a_method_no_route_takes_when_called_then_405_with_allow(
    harness: Harness, method: str
) -> None:
    status, body = harness.api(api_event("list_jobs", method=method))

    assert status == 405
    assert_error(body, "method_not_allowed", None)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "\x1b[2J\x1b[31mpwned"}, "name"),
        ({"name": "invoice\u202efdp.exe"}, "name"),
        ({"name": "a\x00b"}, "name"),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://example.com/",
                    "headers": {"X-Team": "données ✓"},
                }
            },
            "target.headers.X-Team",
        ),
        (
            {"target": {"type": "container", "image": "-v=/:/host", "command": ["id"]}},
            "target.image",
        ),
        (
            {"target": {"type": "container", "image": "--privileged", "command": ["id"]}},
            "target.image",
        ),
        (
            {
                "target": {
                    "type": "container",
                    "image": "busybox",
                    "command": ["id"],
                    "environment": {"A=B": "1"},
                }
            },
            "target.environment",
        ),
    ],
)
def test_given_hostile_text_when_a_job_is_created_then_422_names_the_field(
    harness: Harness, changes: dict[str, Any], field: str
) -> None:
    status, body = harness.api(api_event("create_at_job", body=job_body(**changes)))

    assert status == 422, body
    assert_error(body, "invalid_field", field)
    assert nothing_stored(harness)


@pytest.mark.parametrize(
    "content_type", ["application/merge-patch+json", "application/vnd.api+json", "APPLICATION/JSON"]
)
def test_given_a_json_content_type_the_docs_accept_when_a_job_is_created_then_201(
    harness: Harness, content_type: str
) -> None:
    event = api_event("create_at_job", body=job_body())
    event["headers"]["content-type"] = content_type

    status, body = harness.api(event)

    assert status == 201, body


def test_given_a_body_that_is_not_utf8_when_a_job_is_created_then_400_malformed_json(
    harness: Harness,
) -> None:
    event = api_event("create_at_job")
    event["body"] = base64.b64encode(b'{"name": "caf\xe9"}').decode()
    event["isBase64Encoded"] = True

    status, body = harness.api(event)

    assert status == 400
    assert_error(body, "malformed_json", None)


def test_given_the_iam_denial_when_the_runner_invokes_chronoqs_function_directly_then_access_is_denied(
    harness: Harness,
) -> None:
    from chronoq.local.usage import calling_as

    with calling_as(r.RUNNER_FUNCTION.name), pytest.raises(ClientError) as denied:
        harness.aws.client("lambda").invoke(FunctionName="chronoq-local-api", Payload=b"{}")

    assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
