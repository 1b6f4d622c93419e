"""A container target's secrets as ECS takes them (chronoq.execution.targets.prepare_container):
plain variables in the task definition's ``environment``, each secret in its ``secrets`` as the
ARN of its owner's parameter (never its value), and a family per owner and parameters, so that
two owners' task definitions never mix; and locally, what the ECS emulation hands the task's
process from those parameters (tests/integration/test_local_containers.py runs one)."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError
from chronoq.aws.secrets import SsmSecretValues
from chronoq.domain.errors import PermanentError
from chronoq.domain.targets import ContainerTarget
from chronoq.execution.targets import prepare_container
from chronoq.local.emulation.containers import SecretsUnavailable, secrets_of

REGION = "eu-west-1"
EXECUTION_ROLE = "arn:aws:iam::111122223333:role/chronoq-exec"
TASK_ROLE = "arn:aws:iam::111122223333:role/chronoq-task"
VALUES = SsmSecretValues(lambda: None, "/chronoq/prod/secrets")


class _NotFound(Exception):
    pass


class FakeEcs:
    """ECS's describe_task_definition and register_task_definition, kept in memory."""

    class exceptions:  # (as a boto3 client names it)
        ClientException = _NotFound

    def __init__(self) -> None:
        self.definitions: dict[str, dict[str, Any]] = {}

    def describe_task_definition(self, *, taskDefinition: str) -> dict[str, Any]:
        if taskDefinition not in self.definitions:
            raise _NotFound(taskDefinition)
        return {"taskDefinition": self.definitions[taskDefinition]}

    def register_task_definition(self, **definition: Any) -> dict[str, Any]:
        family = definition["family"]
        kept = {
            **definition,
            "status": "ACTIVE",
            "taskDefinitionArn": f"arn:aws:ecs:{REGION}:111122223333:task-definition/{family}:1",
        }
        self.definitions[family] = kept
        return {"taskDefinition": kept}


def _target(**environment: Any) -> ContainerTarget:
    return ContainerTarget.model_validate(
        {"type": "container", "image": "busybox", "command": ["env"], "environment": environment}
    )


def _prepare(ecs: FakeEcs, target: ContainerTarget, owner: str = "alice", **kwargs: Any) -> str:
    return prepare_container(
        cast(Any, ecs),
        target,
        "/chronoq/containers",
        REGION,
        EXECUTION_ROLE,
        TASK_ROLE,
        **{"owner": owner, "secret_parameter": VALUES.parameter, **kwargs},
    )


def _container(ecs: FakeEcs, arn: str) -> dict[str, Any]:
    family = arn.rsplit("/", 1)[-1].split(":")[0]
    return dict(ecs.definitions[family]["containerDefinitions"][0])


def test_given_a_container_with_a_secret_when_prepared_then_ecs_reads_it_from_the_owners_parameter_and_the_definition_holds_no_value() -> (
    None
):
    ecs = FakeEcs()
    target = _target(MODE="fast", TOKEN={"secret": "crm-token"}, KEY={"secret": "api-key"})

    arn = _prepare(ecs, target)

    container = _container(ecs, arn)
    assert container["environment"] == [{"name": "MODE", "value": "fast"}]
    parameters = "arn:aws:ssm:eu-west-1:111122223333:parameter/chronoq/prod/secrets/alice"
    assert container["secrets"] == [
        {"name": "KEY", "valueFrom": f"{parameters}/api-key"},
        {"name": "TOKEN", "valueFrom": f"{parameters}/crm-token"},
    ]
    assert "secret" not in json.dumps(container["environment"])


def test_given_two_owners_with_the_same_container_when_prepared_then_each_has_its_own_task_definition() -> (
    None
):
    ecs = FakeEcs()
    target = _target(TOKEN={"secret": "tok"})

    alice, again, bob = (_prepare(ecs, target, o) for o in ("alice", "alice", "auth0|123"))

    assert alice == again  # (found, not registered twice)
    assert alice != bob
    assert len(ecs.definitions) == 2
    (secret,) = _container(ecs, bob)["secrets"]
    assert secret["valueFrom"].endswith(f"{VALUES.parameter('auth0|123', 'tok')}")
    assert "auth0|123" not in secret["valueFrom"]  # (a digest: SSM's names refuse "|")


def test_given_two_deployments_paths_when_the_same_owners_container_is_prepared_then_their_families_differ() -> (
    None
):
    target = _target(TOKEN={"secret": "tok"})
    other = SsmSecretValues(lambda: None, "/chronoq/staging/secrets")

    prod = _prepare(FakeEcs(), target)
    staging = _prepare(FakeEcs(), target, secret_parameter=other.parameter)

    assert prod != staging


def test_given_a_container_without_secrets_when_prepared_then_its_family_is_the_same_for_every_owner() -> (
    None
):
    target = _target(MODE="fast")
    ecs = FakeEcs()

    alice, bob = _prepare(ecs, target, "alice"), _prepare(ecs, target, "bob")

    assert alice == bob
    assert "secrets" not in _container(ecs, alice)


def test_given_two_deployments_of_one_account_when_they_prepare_one_target_then_each_has_its_own_family() -> (
    None
):
    target = _target(MODE="fast")
    ecs = FakeEcs()
    ours = _prepare(ecs, target)
    theirs = prepare_container(
        cast(Any, ecs),
        target,
        "/other/containers",
        REGION,
        "arn:aws:iam::123456789012:role/other-exec",
        "arn:aws:iam::123456789012:role/other-task",
    )

    assert ours != theirs
    assert _prepare(ecs, target) == ours  # (found again: not registered twice)
    family = theirs.rsplit("/", 1)[-1].split(":")[0]
    assert ecs.definitions[family]["executionRoleArn"].endswith("other-exec")


def test_given_a_parameter_named_by_its_arn_when_prepared_then_it_is_taken_as_it_is() -> None:
    ecs = FakeEcs()
    arn = "arn:aws:ssm:eu-west-1:111122223333:parameter/elsewhere/tok"

    prepared = _prepare(ecs, _target(T={"secret": "tok"}), secret_parameter=lambda o, n: arn)

    assert _container(ecs, prepared)["secrets"] == [{"name": "T", "valueFrom": arn}]


@pytest.mark.parametrize(
    "missing", [{"owner": ""}, {"secret_parameter": None}], ids=["owner", "parameters"]
)
def test_given_a_container_with_a_secret_and_no_owner_or_parameters_when_prepared_then_it_fails_for_good(
    missing: dict[str, Any],
) -> None:
    ecs = FakeEcs()

    with pytest.raises(PermanentError, match="names secrets"):
        _prepare(ecs, _target(TOKEN={"secret": "tok"}), **missing)

    assert ecs.definitions == {}


# --- locally: what ECS hands the container (chronoq.local.emulation.containers) ---------------

A = "arn:aws:ssm:us-east-1:123456789012:parameter/chronoq/local/secrets/alice/a"
B = "arn:aws:ssm:us-east-1:123456789012:parameter/chronoq/local/secrets/alice/b"


def test_given_a_task_definitions_secrets_when_its_task_starts_then_each_variable_gets_its_parameters_value() -> (
    None
):
    asked: list[list[str]] = []

    def parameters(arns: list[str]) -> dict[str, str]:
        asked.append(arns)
        return {A: "value-of-a", B: "value-of-b"}

    found = secrets_of(
        [
            {"name": "X", "valueFrom": A},
            {"name": "Y", "valueFrom": B},
            {"name": "Z", "valueFrom": A},
        ],
        parameters,
    )

    assert found == {"X": "value-of-a", "Y": "value-of-b", "Z": "value-of-a"}
    assert asked == [[A, B]]  # (one read, each parameter once)
    assert secrets_of([], None) == {}


def test_given_a_parameter_missing_or_unreadable_when_its_task_starts_then_it_does_not_start_naming_the_parameter_not_a_value() -> (
    None
):
    def denied(arns: list[str]) -> dict[str, str]:
        raise ClientError({"Error": {"Code": "AccessDeniedException"}}, "GetParameters")

    with pytest.raises(SecretsUnavailable) as missing:
        secrets_of(
            [{"name": "X", "valueFrom": A}, {"name": "Y", "valueFrom": B}],
            lambda arns: {A: "value-of-a"},
        )
    with pytest.raises(SecretsUnavailable, match="AccessDeniedException"):
        secrets_of([{"name": "X", "valueFrom": A}], denied)
    with pytest.raises(SecretsUnavailable, match="invalid parameters"):
        secrets_of([{"name": "X", "valueFrom": A}], None)

    assert B in str(missing.value)
    assert A not in str(missing.value)  # (found)
    assert "value-of-a" not in str(missing.value)
