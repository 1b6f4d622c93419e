"""How the synthesized stack wires the flow: state machine, tick, workers, API and outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App
from chronoq import resources as r
from chronoq_cdk.stack import ChronoqStack

from tests.infra.synthesis import Synthesis


def _rendered(value: Any) -> str:
    """A Fn::Join of strings and Refs as text, each Ref shown as ``${LogicalId}``."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"${{{value['Ref']}}}"
    separator, parts = value["Fn::Join"]
    return str(separator).join(_rendered(p) for p in parts)


def test_given_the_state_machine_when_substituted_then_it_is_the_resources_definition(
    synth: Synthesis,
) -> None:
    execution = synth.stack.execution
    props = synth.resource(execution.state_machine)["Properties"]
    staged = synth.assets[props["DefinitionS3Location"]["Key"]]
    dummies = {name: f"dummy-{name}" for name in r.STATE_MACHINE.substitutions}
    text = staged.read_text()
    for name in props["DefinitionSubstitutions"]:
        text = text.replace("${" + name + "}", dummies[name])

    assert props["StateMachineType"] == "STANDARD"
    assert props["DefinitionSubstitutions"] == {
        r.ASL_RUNS_TABLE: synth.ref(synth.stack.storage.runs),
        r.ASL_JOBS_TABLE: synth.ref(synth.stack.storage.jobs),
        r.ASL_RUNNER_FUNCTION: synth.arn(execution.runner),
    }
    assert json.loads(text) == json.loads(r.STATE_MACHINE.definition(dummies))
    assert props["LoggingConfiguration"]["Destinations"]


def test_given_the_state_machine_role_when_synthesized_then_it_only_updates_runs_and_jobs_and_invokes(
    synth: Synthesis,
) -> None:
    execution = synth.stack.execution
    props = synth.resource(execution.state_machine)["Properties"]
    granted = {
        (action, json.dumps(resource))
        for s in synth.statements(props["RoleArn"])
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if not action.startswith("logs:")
        for resource in s["Resource"]
    }
    runner = synth.arn(execution.runner)

    assert granted == {
        ("dynamodb:UpdateItem", json.dumps(synth.arn(synth.stack.storage.runs))),
        ("dynamodb:UpdateItem", json.dumps(synth.arn(synth.stack.storage.jobs))),
        (  # CDK grants on a table with an index cover the index too
            "dynamodb:UpdateItem",
            json.dumps({"Fn::Join": ["", [synth.arn(synth.stack.storage.jobs), "/index/*"]]}),
        ),
        ("lambda:InvokeFunction", json.dumps(runner)),
        ("lambda:InvokeFunction", json.dumps({"Fn::Join": ["", [runner, ":*"]]})),
    }


def test_given_the_stack_when_synthesized_then_a_rule_ticks_the_dispatcher_every_minute(
    synth: Synthesis,
) -> None:
    dispatcher = synth.stack.dispatch.function
    (rule,) = synth.of_type("AWS::Events::Rule").values()

    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    assert [t["Arn"] for t in rule["Properties"]["Targets"]] == [synth.arn(dispatcher)]
    assert "ReservedConcurrentExecutions" not in synth.resource(dispatcher)["Properties"]


def test_given_the_worker_when_synthesized_then_each_priority_queue_feeds_it_in_batches(
    synth: Synthesis,
) -> None:
    mappings = list(synth.of_type("AWS::Lambda::EventSourceMapping").values())
    queues = synth.stack.queues.by_priority.values()

    assert len(mappings) == len(r.QUEUES)
    assert sorted(json.dumps(m["Properties"]["EventSourceArn"]) for m in mappings) == sorted(
        json.dumps(synth.arn(q)) for q in queues
    )
    for mapping in mappings:
        props = mapping["Properties"]
        assert props["FunctionName"] == synth.ref(synth.stack.workers.function)
        assert props["BatchSize"] == 10
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_given_the_http_api_when_synthesized_then_every_route_needs_a_user_pool_token(
    synth: Synthesis,
) -> None:
    api = synth.stack.api
    ((authorizer_id, authorizer),) = synth.of_type("AWS::ApiGatewayV2::Authorizer").items()
    routes = [x["Properties"] for x in synth.of_type("AWS::ApiGatewayV2::Route").values()]
    (integration,) = synth.of_type("AWS::ApiGatewayV2::Integration").values()
    jwt = authorizer["Properties"]["JwtConfiguration"]
    user_pool = synth.logical_id(api.user_pool)

    assert authorizer["Properties"]["AuthorizerType"] == "JWT"
    assert _rendered(jwt["Issuer"]) == (
        "https://cognito-idp.${AWS::Region}.amazonaws.com/${" + user_pool + "}"
    )
    assert jwt["Audience"] == [synth.ref(api.client)]
    assert [(x["RouteKey"], x["AuthorizationType"], x["AuthorizerId"]) for x in routes] == [
        ("ANY /{proxy+}", "JWT", {"Ref": authorizer_id})
    ]
    assert integration["Properties"]["IntegrationUri"] == synth.arn(api.function)
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"


def test_given_the_stack_when_synthesized_then_it_outputs_what_a_client_needs(
    synth: Synthesis,
) -> None:
    outputs = synth.template["Outputs"]

    assert {"ApiUrl", "UserPoolId", "UserPoolClientId", "StateMachineArn"} <= set(outputs)
    assert outputs["StateMachineArn"]["Value"] == synth.ref(synth.stack.execution.state_machine)


@pytest.mark.parametrize("shards", [0, 1001])
def test_given_a_shard_count_out_of_range_when_the_stack_is_built_then_it_is_refused(
    shards: int,
) -> None:
    with pytest.raises(ValueError, match="shards"):
        ChronoqStack(App(), "Chronoq", shards=shards)
