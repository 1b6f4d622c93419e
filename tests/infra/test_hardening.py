"""The deployment hardened where it matters: Cognito (no user-existence errors, MFA, the
authorization code grant with PKCE, only the flows chronoq's clients use), the API's access
log, traced state machines, the tables of record recoverable and protected, the topic
encrypted, termination protection and the concurrency settings."""

from __future__ import annotations

import json

import pytest
from chronoq import resources as r
from chronoq_cdk.stack import ChronoqStack

from tests.infra.synthesis import Synthesis, rendered


def _client(synth: Synthesis) -> dict[str, object]:
    (client,) = synth.of_type("AWS::Cognito::UserPoolClient").values()
    return dict(client["Properties"])


def _pool(synth: Synthesis) -> dict[str, object]:
    (pool,) = synth.of_type("AWS::Cognito::UserPool").values()
    return dict(pool["Properties"])


def test_given_the_app_client_when_synthesized_then_only_chronoqs_flows_and_no_existence_errors(
    synth: Synthesis,
) -> None:
    client = _client(synth)

    assert client["PreventUserExistenceErrors"] == "ENABLED"
    # the command line's USER_PASSWORD_AUTH and refresh; no SRP, no admin or custom flows
    assert sorted(client["ExplicitAuthFlows"]) == [  # type: ignore[call-overload]
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_USER_PASSWORD_AUTH",
    ]
    assert "GenerateSecret" not in client or client["GenerateSecret"] is False


def test_given_no_hosted_ui_when_synthesized_then_the_client_has_no_oauth_and_no_callback(
    synth: Synthesis,
) -> None:
    client = _client(synth)

    assert client.get("AllowedOAuthFlowsUserPoolClient") in (None, False)
    assert not client.get("AllowedOAuthFlows")
    assert not client.get("CallbackURLs")  # no placeholder (https://example.com) either
    assert not client.get("LogoutURLs")


def test_given_a_hosted_ui_when_synthesized_then_code_grant_back_to_the_console_only(
    tuned: Synthesis,
) -> None:
    client = _client(tuned)
    api = tuned.logical_id(tuned.stack.api.http_api)

    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["AllowedOAuthFlows"] == ["code"]  # the page redeems it with PKCE
    assert [rendered(u) for u in client["CallbackURLs"]] == [f"${{{api}.ApiEndpoint}}/"]  # type: ignore[attr-defined]
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    assert sorted(client["ExplicitAuthFlows"]) == [  # type: ignore[call-overload]
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_USER_PASSWORD_AUTH",
    ]


def test_given_the_default_deployment_when_synthesized_then_mfa_is_optional_with_an_authenticator_app(
    synth: Synthesis,
) -> None:
    pool = _pool(synth)

    assert pool["MfaConfiguration"] == "OPTIONAL"
    assert pool["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}
    assert pool["Policies"] == {
        "PasswordPolicy": {
            "MinimumLength": r.MIN_PASSWORD_LENGTH,
            "RequireLowercase": True,
            "RequireUppercase": True,
            "RequireNumbers": True,
            "RequireSymbols": True,
            "TemporaryPasswordValidityDays": 3,
        }
    }


def test_given_mfa_required_when_synthesized_then_every_user_needs_a_second_factor(
    tuned: Synthesis,
) -> None:
    assert _pool(tuned)["MfaConfiguration"] == "ON"


def test_given_the_api_when_synthesized_then_its_stage_writes_an_access_log(
    synth: Synthesis,
) -> None:
    (stage,) = synth.of_type("AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["AccessLogSettings"]
    log_group = synth.resource(synth.stack.api.access_logs)

    assert settings["DestinationArn"] == synth.arn(synth.stack.api.access_logs)
    fields = json.loads(settings["Format"])
    assert {"requestId", "ip", "routeKey", "status", "user", "integrationError"} <= set(fields)
    assert log_group["Properties"]["RetentionInDays"] == 30


@pytest.mark.parametrize("attribute", ["state_machine", "express_state_machine"])
def test_given_a_run_state_machine_when_synthesized_then_it_is_traced(
    synth: Synthesis, attribute: str
) -> None:
    props = synth.resource(getattr(synth.stack.execution, attribute))["Properties"]

    assert props["TracingConfiguration"] == {"Enabled": True}


@pytest.mark.parametrize("spec", r.TABLES, ids=lambda t: t.id)
def test_given_a_table_of_record_when_synthesized_then_it_is_recoverable_protected_and_retained(
    synth: Synthesis, spec: r.Table
) -> None:
    table = synth.resource(synth.stack.storage.tables[spec.id])

    assert table["Properties"]["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True
    }
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


def test_given_the_notification_topic_when_synthesized_then_it_is_encrypted(
    synth: Synthesis,
) -> None:
    topic = synth.resource(synth.stack.notifications.topic)["Properties"]

    assert rendered(topic["KmsMasterKeyId"]).endswith("alias/aws/sns")


def test_given_termination_protection_when_synthesized_then_the_stack_has_it(
    synth: Synthesis, tuned: Synthesis
) -> None:
    assert synth.stack.termination_protection is False  # the default: cdk destroy works
    assert tuned.stack.termination_protection is True


def test_given_the_defaults_when_synthesized_then_worker_batches_and_the_runner_are_bounded(
    synth: Synthesis,
) -> None:
    worker = synth.ref(synth.stack.workers.function)
    mappings = [
        m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == worker
    ]
    runner = synth.resource(synth.stack.execution.runner)["Properties"]

    assert len(mappings) == len(r.QUEUES)
    assert {m["ScalingConfig"]["MaximumConcurrency"] for m in mappings} == {
        r.DEFAULT_WORKER_MAX_CONCURRENCY
    }
    assert runner["ReservedConcurrentExecutions"] == r.DEFAULT_RUNNER_RESERVED_CONCURRENCY
    # the Scale section's target: 10,000 runs a second of one priority (40 runs a batch of
    # about 100 ms), and room left in the default 1,000 for every other function
    assert r.DEFAULT_WORKER_MAX_CONCURRENCY * r.WORKER_BATCH_SIZE * 10 >= 10_000
    taken = r.DEFAULT_RUNNER_RESERVED_CONCURRENCY + len(r.QUEUES) * r.DEFAULT_WORKER_MAX_CONCURRENCY
    assert 1_000 - taken >= 100


def test_given_concurrency_settings_when_synthesized_then_they_are_used(tuned: Synthesis) -> None:
    mappings = tuned.of_type("AWS::Lambda::EventSourceMapping").values()
    runner = tuned.resource(tuned.stack.execution.runner)["Properties"]

    assert {
        m["Properties"]["ScalingConfig"]["MaximumConcurrency"]
        for m in mappings
        if "ScalingConfig" in m["Properties"]
    } == {10}
    assert "ReservedConcurrentExecutions" not in runner  # 0: none reserved


@pytest.mark.parametrize(
    "settings",
    [
        {"worker_max_concurrency": 1},
        {"worker_max_concurrency": 1001},
        {"runner_reserved_concurrency": -1},
    ],
)
def test_given_a_concurrency_setting_out_of_range_when_the_stack_is_built_then_refused(
    settings: dict[str, int],
) -> None:
    from aws_cdk import App

    with pytest.raises(ValueError, match=next(iter(settings))):
        ChronoqStack(App(), "Chronoq", **settings)  # type: ignore[arg-type]
