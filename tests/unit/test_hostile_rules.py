"""What an attacker holding an ordinary token tries, refused by the pure rules: targets naming
chronoq's own resources or endpoints, addresses the SSRF guard must not let through in any
form, invocations that did not come from a function's own source, requests to the embedded
AWS not signed with its credentials, text that would rewrite a terminal or table.

Why this module is long: it is one threat model, attack by attack (the SSRF guard's address
forms, chronoq's own endpoints and resources, invocations from elsewhere, the local IAM denials,
the embedded AWS's signatures, text and headers), most a parametrized table of the forms an
attacker tries."""

from __future__ import annotations

import base64
import datetime
import json
from email.message import Message
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from chronoq import origin
from chronoq import resources as r
from chronoq.domain.access import ANY_TARGET, OwnResources, own_prefix
from chronoq.domain.jobs import JobPatch, JobSpec
from chronoq.domain.network import NetworkPolicy, OwnEndpoints
from chronoq.domain.targets import HttpTarget, LambdaTarget
from chronoq.execution import contract
from chronoq.execution.egress import BlockedTarget, Egress
from chronoq.http_api import as_json_body, check_body, is_http_api_event
from chronoq.local import denials, sigv4
from chronoq.local.usage import STATE_MACHINE
from chronoq.settings import ApiSettings
from pydantic import ValidationError

GUARD = NetworkPolicy()
LOCAL = OwnResources("chronoq-local-")
OWN_PORTS = OwnEndpoints.of([8080, 4566], [])

# --- the SSRF guard: only globally routable addresses, in every form --------------------------


@pytest.mark.parametrize(
    "host",
    [
        "192.0.2.10",  # documentation (TEST-NET-1)
        "198.51.100.7",  # TEST-NET-2
        "203.0.113.9",  # TEST-NET-3
        "192.88.99.1",  # 6to4 relay anycast
        "[2001:db8::1]",  # documentation
        "[64:ff9b::7f00:1]",  # NAT64 of loopback
        "[64:ff9b::a9fe:a9fe]",  # NAT64 of the metadata address
        "[64:ff9b:1::a00:1]",  # local-use NAT64
        "[::ffff:0:7f00:1]",  # IPv4-translated loopback
        "[::7f00:1]",  # IPv4-compatible loopback
        "[::8.8.8.8]",  # IPv4-compatible (deprecated, never global)
        "[2002:7f00:1::]",  # 6to4 of loopback
        "[2002:a9fe:a9fe::]",  # 6to4 of the metadata address
        "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",  # Teredo
        "[2001:0:53aa:64c:0:0:f7f7:f7f7]",  # Teredo whose client is public
        "224.0.0.1",  # multicast
        "255.255.255.255",  # broadcast
        "[3fff::1]",  # documentation (2024)
    ],
)
def test_given_the_guard_on_when_a_url_names_a_non_global_address_in_any_form_then_it_is_refused(
    host: str,
) -> None:
    assert GUARD.url_refusal(f"http://{host}/")


@pytest.mark.parametrize(
    "host", ["8.8.8.8", "[64:ff9b::808:808]", "[2002:808:808::]", "[::ffff:8.8.8.8]"]
)
def test_given_the_guard_on_when_a_form_embeds_a_global_address_then_it_passes(host: str) -> None:
    assert GUARD.url_refusal(f"http://{host}/") is None


@pytest.mark.parametrize("address", ["192.0.2.10", "64:ff9b::7f00:1", "2001:db8::5"])
def test_given_a_name_resolving_to_a_non_global_address_when_called_then_the_call_is_refused(
    address: str,
) -> None:
    with pytest.raises(BlockedTarget, match="network policy"):
        Egress(GUARD, resolve=lambda host, port: [address]).address("rebind.example", 80)


# --- chronoq's own endpoints: never called, guard on or off ------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/jobs",
        "http://localhost:4566/",
        "http://LOCALHOST.:4566/",
        "http://api.localhost:8080/",
        "http://2130706433:8080/",
        "http://0x7f.1:4566/",
        "http://127.1:4566/",
        "http://0.0.0.0:8080/",
        "http://0:8080/",
        "http://[::1]:4566/",
        "http://[::]:4566/",
        "http://[::ffff:127.0.0.1]:8080/",
        "http://[::ffff:0:7f00:1]:8080/",
        "http://[64:ff9b::7f00:1]:4566/",
        "http://127.0.0.2:8080/",
    ],
)
@pytest.mark.parametrize("guard", [False, True])
def test_given_chronoq_locals_own_ports_when_a_url_names_them_in_any_spelling_then_it_is_refused(
    url: str, guard: bool
) -> None:
    policy = NetworkPolicy.of(guard, ["127.0.0.0/8", "::/0", "0.0.0.0/0"], OWN_PORTS)

    refusal = policy.url_refusal(url)

    assert refusal is not None
    assert "chronoq's own endpoint" in refusal


def test_given_chronoq_locals_own_ports_when_another_port_of_loopback_is_named_then_it_passes() -> (
    None
):
    policy = NetworkPolicy.of(False, [], OWN_PORTS)

    assert policy.url_refusal("http://127.0.0.1:9000/") is None


def test_given_chronoq_local_bound_to_all_addresses_when_the_machines_own_address_is_named_then_it_is_refused() -> (
    None
):
    policy = NetworkPolicy.of(False, [], OwnEndpoints.of([8080], ["10.1.2.3"]))

    assert policy.url_refusal("http://10.1.2.3:8080/")
    assert policy.url_refusal("http://10.1.2.3:8081/") is None


def test_given_a_name_resolving_to_chronoq_locals_port_when_called_then_the_call_is_refused_with_the_guard_off() -> (
    None
):
    egress = Egress(NetworkPolicy.of(False, [], OWN_PORTS), resolve=lambda h, p: ["127.0.0.1"])

    with pytest.raises(BlockedTarget, match="chronoq's own endpoint"):
        egress.address("my-laptop.example", 8080)
    assert str(egress.address("my-laptop.example", 9000)) == "127.0.0.1"


# --- chronoq's own functions, queues, topic and buses: never a target --------------------------


@pytest.mark.parametrize(
    "names",
    [
        ["chronoq-local-jobs", "chronoq-local-schedule", "chronoq-local-runshigh"],
        ["Chronoq-StorageJobs1A2B-XYZ", "Chronoq-StorageRuns3C4D-UVW", "Chronoq-QueuesRunsLow-Q"],
    ],
)
def test_given_a_deployments_resource_names_when_read_then_their_prefix_is_the_stacks(
    names: list[str],
) -> None:
    assert own_prefix(names) == names[0].split("-")[0] + (
        "-local-" if names[0].startswith("chronoq-local") else "-"
    )


@pytest.mark.parametrize(
    ("target", "field"),
    [
        (
            {
                "type": "lambda",
                "function_arn": f"arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-{f.name}",
            },
            "target.function_arn",
        )
        for f in r.FUNCTIONS
    ]
    + [
        (
            {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-api:$LATEST",
            },
            "target.function_arn",
        ),
        (
            {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:eu-west-1:999999999999:function:chronoq-local-runner",
            },
            "target.function_arn",
        ),
        (
            {
                "type": "sqs",
                "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-runsnormal",
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
        (
            {
                "type": "eventbridge",
                "event_bus": "arn:aws:events:us-east-1:123456789012:event-bus/chronoq-local-x",
            },
            "target.event_bus",
        ),
    ],
)
def test_given_any_allow_list_when_a_target_names_chronoqs_own_resource_then_it_is_refused(
    target: dict[str, Any], field: str
) -> None:
    policy = ANY_TARGET.__class__(own=LOCAL)  # every list: anything
    spec = JobSpec.model_validate(
        {"name": "x", "schedule": {"type": "rate", "every": "1 minute"}, "target": target}
    )

    refused = policy.refusal(spec.target, 60)

    assert refused is not None
    assert refused[0] == field
    assert "chronoq itself" in refused[1]


def test_given_any_allow_list_when_a_target_names_a_users_own_function_then_it_passes() -> None:
    policy = ANY_TARGET.__class__(own=LOCAL)
    target = LambdaTarget(
        type="lambda", function_arn="arn:aws:lambda:us-east-1:123456789012:function:reports"
    )

    assert policy.refusal(target, 60) is None


def test_given_the_api_settings_of_a_deployment_when_read_then_they_know_its_own_resources() -> (
    None
):
    env = {
        r.ENV_JOBS_TABLE: "Chronoq-StorageJobsA1-X",
        r.ENV_SCHEDULE_TABLE: "Chronoq-StorageScheduleB2-Y",
        r.ENV_RUNS_TABLE: "Chronoq-StorageRunsC3-Z",
        r.ENV_AUDIT_TABLE: "Chronoq-StorageAuditD4-W",
        r.ENV_SHARDS: "4",
        r.ENV_STATE_MACHINE_ARN: "arn:sm",
        r.ENV_OUTPUT_BUCKET: "out",
        r.ENV_ARCHIVE_BUCKET: "archive",
        r.ENV_SIGNING_SECRET_ARN: "arn:secret",
        r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
        r.ENV_LAMBDA_TARGETS: "*",
        **{
            name: f"https://sqs.eu-west-1.amazonaws.com/123456789012/Chronoq-QueuesRuns{p}-Q"
            for p, name in r.ENV_QUEUE_URLS.items()
        },
    }
    policy = ApiSettings.from_env(env).targets
    own = LambdaTarget(
        type="lambda",
        function_arn="arn:aws:lambda:eu-west-1:123456789012:function:Chronoq-ApiFunction6BF8-AbC",
    )

    assert policy.refusal(own, 60) is not None


# --- chronoq's functions refuse what did not come from their own source ------------------------


def test_given_a_lambda_target_when_the_runner_invokes_it_then_it_carries_the_runs_client_context() -> (
    None
):
    document = json.loads(base64.b64decode(origin.target_client_context("job_1", "run_1")))

    assert document == {"custom": {"chronoq_job_id": "job_1", origin.MARKER: "run_1"}}


def test_given_a_client_context_when_a_chronoq_function_is_invoked_then_it_refuses() -> None:
    with pytest.raises(origin.ForeignInvocation, match="never as a job's target"):
        origin.refuse_client_context(SimpleNamespace(client_context=SimpleNamespace(custom={})))
    origin.refuse_client_context(SimpleNamespace(client_context=None))  # its own sources


@pytest.mark.parametrize(
    "event",
    [
        {"job_id": "j", "run_id": "r"},
        [],
        "decide",
        {"version": "1.0", "requestContext": {"http": {"method": "GET"}}, "rawPath": "/jobs"},
        {"version": "2.0", "rawPath": "/jobs"},
    ],
)
def test_given_an_event_that_is_not_api_gateways_when_the_api_reads_it_then_it_is_no_http_event(
    event: Any,
) -> None:
    assert not is_http_api_event(event)


@pytest.mark.parametrize(
    "event",
    [
        {"decide": {}, "job_id": "bob's"},
        {"collect_container": {}, "prepare_container": {}},
        [],
    ],
)
def test_given_a_request_the_state_machine_never_sends_when_the_runner_reads_it_then_it_refuses(
    event: Any,
) -> None:
    with pytest.raises(contract.NotARunnerRequest):
        contract.check_request(event)


def test_given_an_attempt_with_fields_the_state_machine_never_sends_when_parsed_then_it_is_refused() -> (
    None
):
    attempt = {
        "job_id": "j",
        "run_id": "r",
        "scheduled_at": "2026-01-01T00:00:00Z",
        "timeout_seconds": 60,
        "target": {"type": "python", "task": "chronoq.tasks:echo"},
        "role": "admin",
    }

    with pytest.raises(ValidationError, match="role"):
        contract.AttemptRequest.model_validate(attempt)


# --- the local IAM denials ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caller", "operation", "url", "body"),
    [
        (
            r.RUNNER_FUNCTION.name,
            "lambda:Invoke",
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/chronoq-local-api/invocations",
            b"{}",
        ),
        (
            r.RUNNER_FUNCTION.name,
            "lambda:Invoke",
            "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/"
            "arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Achronoq-local-runner/invocations",
            b"{}",
        ),
        (
            STATE_MACHINE,
            "sqs:SendMessage",
            "https://sqs.us-east-1.amazonaws.com/",
            json.dumps(
                {
                    "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-runshigh"
                }
            ).encode(),
        ),
        (
            STATE_MACHINE,
            "sns:Publish",
            "https://sns.us-east-1.amazonaws.com/",
            b"Action=Publish&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3Achronoq-local-x",
        ),
        (
            STATE_MACHINE,
            "events:PutEvents",
            "https://events.us-east-1.amazonaws.com/",
            json.dumps({"Entries": [{"EventBusName": "chronoq-local-bus"}]}).encode(),
        ),
    ],
)
def test_given_chronoqs_own_resource_when_its_role_calls_it_as_a_target_then_the_call_is_denied(
    caller: str, operation: str, url: str, body: bytes
) -> None:
    why = denials.denial("chronoq-local-", caller, operation, url, body)

    assert why is not None
    status, _, answer = denials.denied_answer(operation, why)
    assert status == 403
    assert b"AccessDenied" in answer or b"AuthorizationError" in answer


def test_given_the_state_machine_when_it_invokes_the_runner_then_that_is_its_own_right() -> None:
    url = "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/chronoq-local-runner/invocations"

    assert denials.denial("chronoq-local-", STATE_MACHINE, "lambda:Invoke", url, b"{}") is None
    assert (
        denials.denial(
            "chronoq-local-",
            r.RUNNER_FUNCTION.name,
            "lambda:Invoke",
            url.replace("chronoq-local-runner", "reports"),
            b"{}",
        )
        is None
    )


# --- the embedded AWS's port: signed with the local credentials only ---------------------------

CREDENTIALS = sigv4.Credentials("AKIAEXAMPLELOCAL0000", "local-secret")
NOW = datetime.datetime(2026, 11, 25, 21, 48, tzinfo=datetime.UTC)


def _signed(
    credentials: sigv4.Credentials = CREDENTIALS,
    when: datetime.datetime = NOW,
    body: bytes = b'{"TableName":"chronoq-local-jobs"}',
    path: str = "/",
) -> tuple[Message, bytes]:
    request = AWSRequest(
        method="POST",
        url=f"http://127.0.0.1:4566{path}",
        data=body,
        headers={
            "X-Amz-Target": "DynamoDB_20120810.Scan",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )
    request.context["timestamp"] = when.strftime("%Y%m%dT%H%M%SZ")
    signer = SigV4Auth(
        BotoCredentials(credentials.access_key, credentials.secret_key), "dynamodb", "us-east-1"
    )
    request.headers["X-Amz-Date"] = request.context["timestamp"]
    request.headers["Host"] = "127.0.0.1:4566"
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    headers = Message()
    for name, value in request.headers.items():
        headers[name] = value
    signed = ";".join(sorted(n.lower() for n, _ in request.headers.items()))
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{when:%Y%m%d}/us-east-1/dynamodb/"
        f"aws4_request, SignedHeaders={signed}, Signature={signature}"
    )
    return headers, body


def test_given_a_request_signed_with_the_local_credentials_when_checked_then_it_is_served() -> None:
    headers, body = _signed()

    assert sigv4.check("POST", "/", headers, body, CREDENTIALS, NOW) is None


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda h, b: (h, b + b" "), "InvalidSignatureException"),  # body changed after signing
        (
            lambda h, b: _signed(sigv4.Credentials(CREDENTIALS.access_key, "guess")),
            "InvalidSignatureException",
        ),
        (
            lambda h, b: _signed(sigv4.Credentials("AKIAOTHER00000000000", "x")),
            "UnrecognizedClientException",
        ),
        (
            lambda h, b: _signed(when=NOW - datetime.timedelta(minutes=16)),
            "InvalidSignatureException",
        ),
    ],
)
def test_given_a_request_not_signed_with_the_local_credentials_when_checked_then_it_is_refused_as_aws_refuses(
    change: Any, code: str
) -> None:
    headers, body = change(*_signed())

    refusal = sigv4.check("POST", "/", headers, body, CREDENTIALS, NOW)

    assert refusal is not None
    status, answer_headers, answer = refusal.answer(headers)
    assert (status, json.loads(answer)["__type"], answer_headers["x-amzn-ErrorType"]) == (
        403,
        code,
        code,
    )


def test_given_no_signature_when_checked_then_the_token_is_missing() -> None:
    headers = Message()
    headers["X-Amz-Target"] = "DynamoDB_20120810.Scan"

    refusal = sigv4.check("POST", "/", headers, b"{}", CREDENTIALS, NOW)

    assert refusal is not None
    assert refusal.code == "MissingAuthenticationTokenException"


# --- text shown in tables; header values HTTP can carry; bodies -------------------------------


@pytest.mark.parametrize(
    "name",
    ["a\x00b", "\x1b[31mred\x1b[0m", "evil\u202egnp.exe", "tab\there", "line\nbreak", "\u2066x"],
)
def test_given_a_name_that_would_rewrite_a_terminal_when_a_job_is_made_then_it_is_refused(
    name: str,
) -> None:
    with pytest.raises(ValidationError) as refused:
        JobSpec.model_validate(
            {
                "name": name,
                "schedule": {"type": "rate", "every": "1 minute"},
                "target": {"type": "python", "task": "chronoq.tasks:echo"},
            }
        )

    assert refused.value.errors()[0]["loc"] == ("name",)


def test_given_a_name_in_any_script_when_a_job_is_made_then_it_is_kept() -> None:
    spec = JobSpec.model_validate(
        {
            "name": "Rapport du café — 日次 ✓",
            "schedule": {"type": "rate", "every": "1 minute"},
            "target": {"type": "python", "task": "chronoq.tasks:echo"},
        }
    )

    assert spec.name == "Rapport du café — 日次 ✓"


@pytest.mark.parametrize("value", ["naïve ✓", "日本", "\x01", "\x7f"])
def test_given_a_header_value_http_cannot_carry_when_a_target_is_made_then_it_is_refused(
    value: str,
) -> None:
    with pytest.raises(ValidationError) as refused:
        HttpTarget(type="http", url="https://example.com/", headers={"X-Team": value})

    assert refused.value.errors()[0]["loc"][:2] == ("headers", "X-Team")


def test_given_a_latin1_header_value_when_a_target_is_made_then_it_is_kept() -> None:
    target = HttpTarget(type="http", url="https://example.com/", headers={"X-Team": "café\tdata"})

    assert target.headers["X-Team"] == "café\tdata"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/merge-patch+json",
        "application/vnd.chronoq+json; charset=utf-8",
        "Application/JSON",
    ],
)
def test_given_a_json_content_type_the_docs_accept_when_the_api_reads_it_then_it_is_json(
    content_type: str,
) -> None:
    event = {"body": "{}", "headers": {"Content-Type": content_type}}

    assert check_body(event) is None
    assert as_json_body(event)["headers"] == {"content-type": "application/json"}


@pytest.mark.parametrize(
    "event",
    [
        {"body": base64.b64encode(b'{"name": "\xff\xfe"}').decode(), "isBase64Encoded": True},
        {"body": '{"name": "\udcff"}', "isBase64Encoded": False},
    ],
)
def test_given_a_body_that_is_not_utf8_when_checked_then_it_is_malformed_json(
    event: dict[str, Any],
) -> None:
    refused = check_body({**event, "headers": {"content-type": "application/json"}})

    assert refused is not None
    assert (refused.status, refused.code) == (400, "malformed_json")


def test_given_the_console_function_when_invoked_with_a_client_context_then_it_refuses() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_console_handler", r.FUNCTIONS_DIR / "console" / "handler.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    event = {"version": "2.0", "rawPath": "/", "requestContext": {"http": {"method": "GET"}}}

    with pytest.raises(origin.ForeignInvocation):
        module.handler(event, SimpleNamespace(client_context=SimpleNamespace(custom={})))
    assert module.handler(event, SimpleNamespace(client_context=None))["statusCode"] == 200


def test_given_a_job_stored_before_the_rules_when_read_paused_and_saved_then_it_stays_readable() -> (
    None
):
    from chronoq.aws.codecs import dump, job_from_item, job_item
    from chronoq.domain.base import STORED
    from chronoq.domain.jobs import Job

    from tests.builders import Fakes, job_spec

    fakes = Fakes()
    made = fakes.jobs.create_job("alice", job_spec())
    legacy = {
        **made.model_dump(),
        "name": "old\x1b[0m",
        "target": {"type": "http", "url": "https://example.com/", "headers": {"X-T": "☃"}},
    }
    stored = Job.model_validate(legacy, context=STORED)
    fakes.store.jobs[made.id] = stored

    assert job_from_item(dump(job_item(stored))).name == "old\x1b[0m"
    assert fakes.jobs.pause_job("alice", made.id).name == "old\x1b[0m"
    assert [j.id for j in fakes.jobs.list_jobs("alice")] == [made.id]
    with pytest.raises(ValidationError) as changed:  # a change is told what to fix
        fakes.jobs.update_job("alice", made.id, JobPatch.model_validate({"priority": "high"}))
    assert changed.value.errors()[0]["loc"][0] == "name"
