"""Where container targets run: network, cluster, log group and the two task roles."""

from __future__ import annotations

import json
from typing import Any

from chronoq import resources as r

from tests.infra.synthesis import Synthesis, grants

ECS_TASKS = {"Service": "ecs-tasks.amazonaws.com"}


def _trust(synth: Synthesis, role: Any) -> list[dict[str, Any]]:
    return list(synth.resource(role)["Properties"]["AssumeRolePolicyDocument"]["Statement"])


def test_given_the_containers_when_synthesized_then_the_vpc_has_two_public_subnets_and_no_nat(
    synth: Synthesis,
) -> None:
    subnets = synth.of_type("AWS::EC2::Subnet").values()

    assert len(synth.of_type("AWS::EC2::VPC")) == 1
    assert not synth.of_type("AWS::EC2::NatGateway")
    assert not synth.of_type("AWS::EC2::EIP")
    assert len(subnets) == 2
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is True for s in subnets)
    assert len(synth.stack.containers.vpc.public_subnets) == 2
    assert not synth.stack.containers.vpc.private_subnets
    assert not synth.stack.containers.vpc.isolated_subnets


def test_given_the_security_group_when_synthesized_then_it_allows_all_egress_and_no_ingress(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.containers.security_group)["Properties"]

    assert "SecurityGroupIngress" not in props
    assert not synth.of_type("AWS::EC2::SecurityGroupIngress")
    assert [(e["CidrIp"], e["IpProtocol"]) for e in props["SecurityGroupEgress"]] == [
        ("0.0.0.0/0", "-1")
    ]


def test_given_the_cluster_when_synthesized_then_container_insights_are_off(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.containers.cluster)["Properties"]

    assert props["ClusterSettings"] == [{"Name": "containerInsights", "Value": "disabled"}]


def test_given_the_container_log_group_when_synthesized_then_it_expires_after_a_month(
    synth: Synthesis,
) -> None:
    log_group = synth.resource(synth.stack.containers.log_group)

    assert log_group["Properties"]["RetentionInDays"] == 30
    assert log_group["DeletionPolicy"] == "Delete"


def test_given_the_task_roles_when_synthesized_then_only_ecs_tasks_of_the_account_assume_them(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers

    for role in (containers.execution_role, containers.task_role):
        (statement,) = _trust(synth, role)
        assert statement["Principal"] == ECS_TASKS
        assert statement["Condition"] == {
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        }
        assert not synth.resource(role)["Properties"].get("ManagedPolicyArns")


def test_given_no_container_images_allowed_when_synthesized_then_the_execution_role_pulls_nothing_writes_the_log_and_reads_owners_secrets(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers
    log_group = synth.logical_id(containers.log_group)
    secrets = (
        "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
        ":parameter/chronoq/Chronoq/secrets/*"
    )

    # (the images a deployment allows, and what it may pull then: tests/infra/test_context.py)
    assert grants(synth.statements(synth.arn(containers.execution_role))) == {
        ("logs:CreateLogStream", f"${{{log_group}.Arn}}", "null"),
        ("logs:PutLogEvents", f"${{{log_group}.Arn}}", "null"),
        # the secrets a task definition names (ECS reads them as it starts the task)
        ("ssm:GetParameters", secrets, "null"),
    }


def test_given_the_task_role_when_synthesized_then_jobs_may_only_report_to_the_state_machine(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers
    state_machine = synth.logical_id(synth.stack.execution.state_machine)

    assert grants(synth.statements(synth.arn(containers.task_role))) == {
        (action, f"${{{state_machine}}}", "null")
        for action in (
            "states:SendTaskHeartbeat",
            "states:SendTaskSuccess",
            "states:SendTaskFailure",
        )
    }


def test_given_the_state_machine_when_synthesized_then_it_runs_tasks_in_the_containers_cluster(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers
    substitutions = synth.resource(synth.stack.execution.state_machine)["Properties"][
        "DefinitionSubstitutions"
    ]
    subnets = [synth.ref(s) for s in containers.vpc.public_subnets]

    assert substitutions[r.ASL_CONTAINER_CLUSTER] == synth.arn(containers.cluster)
    assert json.dumps(substitutions[r.ASL_CONTAINER_SUBNETS]) == json.dumps(
        {"Fn::Join": [",", subnets]}
    )
    assert substitutions[r.ASL_CONTAINER_SECURITY_GROUP] == {
        "Fn::GetAtt": [synth.logical_id(containers.security_group), "GroupId"]
    }
