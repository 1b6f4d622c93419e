"""Owners' secrets in the synthesized stack: the path each function that needs it is told, and
the rights on the parameters under it, least privilege: the api puts and deletes, the runner
and the notifier read a version, ECS reads for a container's task; no other role reaches SSM,
none holds a KMS grant (the aws/ssm key decrypts for the account's principals); and the calls
the secrets' adapter makes are the ones those rights allow."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws.secrets import SsmSecretValues
from chronoq.fakes.clock import FakeClock
from chronoq.local.aws import ACCOUNT, REGION
from chronoq.local.calls import Call, calls_in
from chronoq.local.engine.parameters import LocalParameters
from chronoq.local.usage import CONTAINER_EXECUTION

from tests.infra import least_privilege as lp
from tests.infra.policies import Role, local_names, statements
from tests.infra.synthesis import Synthesis, grants

PATH = "/chronoq/Chronoq/secrets"  # the stack's name is Chronoq
SECRETS = f"arn:${{AWS::Partition}}:ssm:${{AWS::Region}}:${{AWS::AccountId}}:parameter{PATH}/*"
#: What each role may do with owners' secrets, and no other role anything.
EXPECTED = {
    r.API_FUNCTION.name: {"ssm:PutParameter", "ssm:DeleteParameter"},
    r.RUNNER_FUNCTION.name: {"ssm:GetParameter"},
    r.NOTIFIER_FUNCTION.name: {"ssm:GetParameter"},
    r.ERASER_FUNCTION.name: {"ssm:DeleteParameter"},  # an erased owner's values
    CONTAINER_EXECUTION: {"ssm:GetParameters"},
}


def _role_ids(synth: Synthesis) -> dict[str, str]:
    """The logical id of the role of each function and of the containers' execution role."""
    stack = synth.stack
    found = {
        name: synth.resource(function)["Properties"]["Role"]["Fn::GetAtt"][0]
        for name, function in stack.functions.items()
    }
    found[CONTAINER_EXECUTION] = synth.logical_id(stack.containers.execution_role)
    return found


def _on_ssm_or_kms(synth: Synthesis) -> dict[str, set[tuple[str, str, str]]]:
    """Every grant of an ssm: or kms: action in the template, by the role it is attached to."""
    found: dict[str, set[tuple[str, str, str]]] = {}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        statements_ = policy["Properties"]["PolicyDocument"]["Statement"]
        for role in policy["Properties"]["Roles"]:
            for action, resource, condition in grants(statements_):
                if action.startswith(("ssm:", "kms:")):
                    found.setdefault(role["Ref"], set()).add((action, resource, condition))
    return found


@pytest.mark.parametrize("spec", [r.API_FUNCTION, r.RUNNER_FUNCTION, r.NOTIFIER_FUNCTION])
def test_given_a_function_that_handles_secrets_when_synthesized_then_it_is_told_the_stacks_path(
    synth: Synthesis, spec: r.Function
) -> None:
    variables = synth.resource(synth.stack.functions[spec.name])["Properties"]["Environment"]
    assert variables["Variables"][r.ENV_SECRETS_PATH] == PATH == r.secrets_path("Chronoq")


def test_given_the_stack_when_synthesized_then_only_the_roles_that_handle_secrets_reach_ssm_each_only_its_actions_on_the_path(
    synth: Synthesis,
) -> None:
    ids = _role_ids(synth)

    found = _on_ssm_or_kms(synth)

    assert found == {
        ids[name]: {(action, SECRETS, "null") for action in actions}
        for name, actions in EXPECTED.items()
    }  # (no kms: grant anywhere: the aws/ssm key)


def test_given_the_runner_when_synthesized_then_it_reads_the_jobs_table_item_of_its_owners_secrets(
    synth: Synthesis,
) -> None:
    jobs = synth.logical_id(synth.stack.storage.jobs)
    runner = grants(synth.role_statements(synth.stack.execution.runner))

    # (plain GetItem: the least-privilege check evaluates no dynamodb:LeadingKeys condition)
    assert ("dynamodb:GetItem", f"${{{jobs}.Arn}}", "null") in runner


def _calls_of_the_adapter(path: str) -> set[Call]:
    """The IAM calls SsmSecretValues makes on ``path`` for each of its users (as chronoq
    local's engine records them), and ECS's read of a task definition's secret."""
    heard: list[tuple[str, dict[str, Any]]] = []
    ssm = LocalParameters(
        None,
        REGION,
        ACCOUNT,
        FakeClock(now=datetime(2026, 11, 27, tzinfo=UTC)),
        lambda operation, request, _: heard.append((operation, request)),
    )
    values = SsmSecretValues(lambda: ssm, path)
    users = []
    for owner in ("alice", "auth0|123"):
        users.append(r.API_FUNCTION.name)
        version = values.put_value(owner, "tok", "a-value-of-the-secret")
        users += [r.RUNNER_FUNCTION.name, r.NOTIFIER_FUNCTION.name]
        values.get_value(owner, "tok", version)
        values.get_value(owner, "tok", version)
        users.append(CONTAINER_EXECUTION)
        ssm.get_parameters(Names=[ssm.arn(values.parameter(owner, "tok"))], WithDecryption=True)
        users.append(r.API_FUNCTION.name)
        values.delete_value(owner, "tok")
    ssm.close()
    assert len(users) == len(heard)
    return {
        call
        for caller, (operation, request) in zip(users, heard, strict=True)
        for call in calls_in(caller, operation, request, REGION, ACCOUNT)
    }


def test_given_the_calls_the_secrets_adapter_makes_when_checked_against_the_roles_then_each_is_allowed_and_no_other_path_is(
    synth: Synthesis,
) -> None:
    roles = lp.roles(synth)
    local = _calls_of_the_adapter(r.secrets_path("local"))  # (chronoq local's path)
    elsewhere = _calls_of_the_adapter(r.secrets_path("Other"))  # another stack's

    assert {c.action for c in local} == {a for actions in EXPECTED.values() for a in actions}
    assert lp.denied(local, roles) == []
    assert len(lp.denied(elsewhere, roles)) == len(elsewhere)
    # and each role only its own: the runner may not put, the api may not read
    swapped = {
        Call(name, call.action, call.resource)
        for call in local
        for name in EXPECTED
        if call.action not in EXPECTED[name]
    }
    assert len(lp.denied(swapped, roles)) == len(swapped)


def test_given_the_stacks_secrets_path_when_read_as_chronoq_local_names_it_then_it_is_the_local_path(
    synth: Synthesis,
) -> None:
    """The least-privilege check replays chronoq local's calls, on ``/chronoq/local/secrets``:
    it reads the stack's path as that one, as it reads ``chronoq-local-…`` for the stack's
    other resources."""
    execution_role = synth.statements(synth.arn(synth.stack.containers.execution_role))

    role = Role("x", tuple(statements(execution_role, local_names(synth))))

    assert (
        "ssm:GetParameters",
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/chronoq/local/secrets/*",
    ) in role.grants()
