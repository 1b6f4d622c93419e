"""How the synthesized stack wires the flow: state machine, tick, workers, API and outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App
from chronoq import resources as r
from chronoq.execution import batches, machines
from chronoq_cdk.containers import SYNC_RULE
from chronoq_cdk.stack import ChronoqStack

from tests.infra.synthesis import Synthesis, denials, grants, rendered


@pytest.mark.parametrize(
    ("kind", "attribute"), [("STANDARD", "state_machine"), ("EXPRESS", "express_state_machine")]
)
def test_given_the_state_machine_when_substituted_then_it_is_the_resources_definition(
    synth: Synthesis, kind: str, attribute: str
) -> None:
    execution = synth.stack.execution
    containers = synth.stack.containers
    props = synth.resource(getattr(execution, attribute))["Properties"]
    machine = machines.EXPRESS_STATE_MACHINE if kind == "EXPRESS" else machines.STATE_MACHINE
    dummies = {name: f"dummy-{name}" for name in machine.substitutions}
    if kind == "EXPRESS":  # made from the file: inline
        text = props["DefinitionString"]
    else:
        text = synth.assets[props["DefinitionS3Location"]["Key"]].read_text()
    for name in props["DefinitionSubstitutions"]:
        text = text.replace("${" + name + "}", dummies[name])

    assert props["StateMachineType"] == kind
    assert props["DefinitionSubstitutions"] == {
        r.ASL_RUNS_TABLE: synth.ref(synth.stack.storage.runs),
        r.ASL_JOBS_TABLE: synth.ref(synth.stack.storage.jobs),
        r.ASL_RUNNER_FUNCTION: synth.arn(execution.runner),
        r.ASL_CONTAINER_CLUSTER: synth.arn(containers.cluster),
        r.ASL_CONTAINER_SUBNETS: {
            "Fn::Join": [",", [synth.ref(s) for s in containers.vpc.public_subnets]]
        },
        r.ASL_CONTAINER_SECURITY_GROUP: {
            "Fn::GetAtt": [synth.logical_id(containers.security_group), "GroupId"]
        },
    }
    assert json.loads(text) == json.loads(machine.definition(dummies))
    assert props["LoggingConfiguration"]["Destinations"]


@pytest.mark.parametrize("attribute", ["state_machine", "express_state_machine"])
def test_given_the_state_machine_role_when_synthesized_then_it_only_updates_runs_and_jobs_and_invokes_the_runner(
    synth: Synthesis, attribute: str
) -> None:
    stack = synth.stack
    statements = synth.role_statements(getattr(stack.execution, attribute))
    runs = synth.logical_id(stack.storage.runs)
    jobs = synth.logical_id(stack.storage.jobs)
    runner = synth.logical_id(stack.execution.runner)

    assert {g for g in grants(statements) if g[0].split(":")[0] in ("dynamodb", "lambda")} == {
        ("dynamodb:UpdateItem", f"${{{runs}.Arn}}", "null"),
        ("dynamodb:GetItem", f"${{{runs}.Arn}}", "null"),
        ("dynamodb:UpdateItem", f"${{{jobs}.Arn}}", "null"),  # not its index
        # the runner by its unqualified ARN, as the ASL names it: no version, no alias
        ("lambda:InvokeFunction", f"${{{runner}.Arn}}", "null"),
    }


def test_given_no_service_targets_listed_when_synthesized_then_the_state_machine_delivers_no_message(
    synth: Synthesis,
) -> None:
    statements = synth.role_statements(synth.stack.execution.state_machine)
    own = "${AWS::Region}:${AWS::AccountId}"

    assert {g for g in grants(statements) if g[0].split(":")[0] in ("sqs", "sns", "events")} == {
        # what ecs:runTask.sync needs to hear of the task's end
        *(
            (action, f"arn:${{AWS::Partition}}:events:{own}:rule/{SYNC_RULE}", "null")
            for action in ("events:PutTargets", "events:PutRule", "events:DescribeRule")
        ),
    }


def test_given_the_default_target_scopes_when_synthesized_then_the_state_machine_may_not_deliver_to_chronoq(
    synth: Synthesis,
) -> None:
    stack = synth.stack
    queues = [
        *stack.queues.by_priority.values(),
        stack.queues.dead_letter,
        stack.notifications.dead_letter,
        stack.archive.dead_letter,
    ]

    assert denials(synth.role_statements(stack.execution.state_machine)) == {
        *(("sqs:SendMessage", rendered(synth.arn(q)), "null") for q in queues),
        ("sns:Publish", rendered(synth.ref(stack.notifications.topic)), "null"),
    }


def test_given_the_denials_when_synthesized_then_the_state_machine_still_invokes_the_runner(
    synth: Synthesis,
) -> None:
    statements = synth.role_statements(synth.stack.execution.state_machine)
    runner = rendered(synth.arn(synth.stack.execution.runner))

    assert ("lambda:InvokeFunction", runner, "null") in grants(statements)
    assert not {d for d in denials(statements) if d[0].startswith("lambda:")}


def test_given_the_state_machine_role_when_synthesized_then_it_runs_only_chronoq_tasks_in_its_cluster(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers
    statements = synth.role_statements(synth.stack.execution.state_machine)
    own = "${AWS::Region}:${AWS::AccountId}"
    cluster = synth.logical_id(containers.cluster)
    in_cluster = json.dumps({"ArnEquals": {"ecs:cluster": synth.arn(containers.cluster)}})

    assert {g for g in grants(statements) if g[0].split(":")[0] in ("ecs", "iam")} == {
        (
            "ecs:RunTask",
            f"arn:${{AWS::Partition}}:ecs:{own}:task-definition/chronoq-*",
            in_cluster,
        ),
        ("ecs:StopTask", f"arn:${{AWS::Partition}}:ecs:{own}:task/${{{cluster}}}/*", "null"),
        ("ecs:DescribeTasks", f"arn:${{AWS::Partition}}:ecs:{own}:task/${{{cluster}}}/*", "null"),
        ("iam:PassRole", rendered(synth.arn(containers.execution_role)), "null"),
        ("iam:PassRole", rendered(synth.arn(containers.task_role)), "null"),
    }


def test_given_the_state_machine_role_when_synthesized_then_it_is_granted_nothing_else(
    synth: Synthesis,
) -> None:
    statements = synth.role_statements(synth.stack.execution.state_machine)
    services = {g[0].split(":")[0] for g in grants(statements)}

    # (sqs and sns only for the targets a deployment lists: none by default; xray: traced)
    assert services == {"logs", "dynamodb", "lambda", "events", "ecs", "iam", "xray"}


def test_given_the_stack_when_synthesized_then_a_rule_ticks_the_dispatcher_every_minute(
    synth: Synthesis,
) -> None:
    dispatcher = synth.stack.dispatch.function
    (rule,) = synth.of_type("AWS::Events::Rule").values()

    # at second 0 of every minute, whenever the stack was deployed
    assert rule["Properties"]["ScheduleExpression"] == "cron(* * * * ? *)"
    assert [t["Arn"] for t in rule["Properties"]["Targets"]] == [synth.arn(dispatcher)]
    (target,) = rule["Properties"]["Targets"]
    assert json.loads(target["Input"]) == {"shards": list(range(r.DEFAULT_SHARDS))}
    assert "ReservedConcurrentExecutions" not in synth.resource(dispatcher)["Properties"]


def test_given_the_worker_when_synthesized_then_each_priority_queue_feeds_it_in_batches(
    synth: Synthesis,
) -> None:
    worker = synth.ref(synth.stack.workers.function)
    mappings = [
        m
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == worker
    ]
    queues = synth.stack.queues.by_priority.values()

    assert len(mappings) == len(r.QUEUES)
    assert sorted(json.dumps(m["Properties"]["EventSourceArn"]) for m in mappings) == sorted(
        json.dumps(synth.arn(q)) for q in queues
    )
    for mapping in mappings:
        props = mapping["Properties"]
        assert props["FunctionName"] == synth.ref(synth.stack.workers.function)
        # a batch as large as one EXPRESS execution runs at once, held up to the window
        assert props["BatchSize"] == r.WORKER_BATCH_SIZE == batches.MAX_RUNS
        assert props["MaximumBatchingWindowInSeconds"] == r.WORKER_BATCHING_WINDOW_SECONDS
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_given_the_http_api_when_synthesized_then_every_route_needs_a_user_pool_token(
    synth: Synthesis,
) -> None:
    api = synth.stack.api
    ((authorizer_id, authorizer),) = synth.of_type("AWS::ApiGatewayV2::Authorizer").items()
    # every route but the console's static files (see test_console)
    routes = [
        x["Properties"]
        for x in synth.of_type("AWS::ApiGatewayV2::Route").values()
        if x["Properties"]["RouteKey"] not in ("GET /", "GET /console/{proxy+}")
    ]
    (integration,) = [
        x
        for x in synth.of_type("AWS::ApiGatewayV2::Integration").values()
        if x["Properties"]["IntegrationUri"] != synth.arn(synth.stack.console.function)
    ]
    jwt = authorizer["Properties"]["JwtConfiguration"]
    user_pool = synth.logical_id(api.user_pool)

    assert authorizer["Properties"]["AuthorizerType"] == "JWT"
    assert rendered(jwt["Issuer"]) == (
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

    assert {
        "ApiUrl",
        "UserPoolId",
        "UserPoolClientId",
        "StateMachineArn",
        "NotificationTopicArn",
        "OutputBucketName",
    } <= set(outputs)
    assert outputs["StateMachineArn"]["Value"] == synth.ref(synth.stack.execution.state_machine)
    assert outputs["NotificationTopicArn"]["Value"] == synth.ref(synth.stack.notifications.topic)


@pytest.mark.parametrize("shards", [0, 1001])
def test_given_a_shard_count_out_of_range_when_the_stack_is_built_then_it_is_refused(
    shards: int,
) -> None:
    with pytest.raises(ValueError, match="shards"):
        ChronoqStack(App(), "Chronoq", shards=shards)


def test_given_dispatch_groups_when_synthesized_then_each_group_of_shards_has_its_own_invocation_every_minute(
    tmp_path: Path,
) -> None:
    stack = ChronoqStack(App(outdir=str(tmp_path)), "Chronoq", shards=32, dispatch_groups=8)
    template = App.of(stack).synth().get_stack_artifact(stack.artifact_id).template  # type: ignore[union-attr]
    rules = [
        x["Properties"] for x in template["Resources"].values() if x["Type"] == "AWS::Events::Rule"
    ]

    assert len(rules) == 2  # up to five targets a rule
    groups = [json.loads(t["Input"])["shards"] for rule in rules for t in rule["Targets"]]
    assert sorted(s for g in groups for s in g) == list(range(32))
    assert sorted(len(g) for g in groups) == [4] * 8
    assert {rule["ScheduleExpression"] for rule in rules} == {"cron(* * * * ? *)"}


def test_given_more_dispatch_groups_than_shards_when_synthesized_then_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="dispatch_groups"):
        ChronoqStack(App(outdir=str(tmp_path)), "Chronoq", shards=4, dispatch_groups=5)
