"""The audit table is append-only by IAM, not by code (only an operator's erasure of an owner
deletes entries, through the eraser's role, which may only delete and add): in the synthesized
stack, the api
function's role may only add entries to it (``dynamodb:PartiQLInsert``: an INSERT, which
fails on a key that exists) and read them (``dynamodb:Query``), and no role of the stack,
whatever it runs, may write it any other way."""

from __future__ import annotations

from typing import Any

from chronoq import resources as r
from chronoq.local.aws import PREFIX
from chronoq.local.calls import Call

from tests.infra import least_privilege as lp
from tests.infra.policies import OWN, Statement, local_names, statements
from tests.infra.synthesis import Synthesis

AUDIT_ARN = f"arn:aws:dynamodb:{OWN}:table/{PREFIX}-{r.AUDIT_TABLE.id.lower()}"
#: Every way to change or remove an item of the table, or the table itself (the eraser's
#: DeleteItem apart: see ERASER).
WRITES = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
    "dynamodb:DeleteTable",
    "dynamodb:UpdateTable",
    "dynamodb:UpdateTimeToLive",
)
ALLOWED = {"dynamodb:PartiQLInsert", "dynamodb:Query"}
#: What the eraser may do: add its erasure's entry, find an owner's entries (the owner
#: index: not the table's own items), delete them.
ERASER = {"dynamodb:PartiQLInsert", "dynamodb:DeleteItem"}


def every_statement(synth: Synthesis) -> list[tuple[str, Statement]]:
    """Every statement of every identity policy of the template (policies, managed policies,
    roles' inline policies), by the logical id holding it, its references resolved."""
    named = local_names(synth)
    found: list[tuple[str, Statement]] = []
    for logical_id, resource in synth.resources.items():
        props: dict[str, Any] = resource.get("Properties", {})
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents = [props["PolicyDocument"]]
        elif resource["Type"] == "AWS::IAM::Role":
            documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
        else:
            continue
        for document in documents:
            found += [(logical_id, s) for s in statements(document["Statement"], named)]
    return found


def test_given_the_stack_when_synthesized_then_no_policy_lets_anything_write_the_audit_table(
    synth: Synthesis,
) -> None:
    found = every_statement(synth)
    assert found

    writers = [
        (logical_id, action)
        for logical_id, statement in found
        if statement.allow
        for action in (*WRITES, "dynamodb:DeleteItem")
        if statement.matches(Call("any", action, AUDIT_ARN))
    ]

    # nothing may write an entry over; only the eraser may delete one
    assert [(i, a) for i, a in writers if not i.startswith("ErasureFunctionRole")] == []
    assert {a for _, a in writers} <= {"dynamodb:DeleteItem"}


def test_given_the_stack_when_synthesized_then_only_the_api_adds_to_the_audit_table_and_reads_it(
    synth: Synthesis,
) -> None:
    roles = lp.roles(synth)

    may = {
        (name, action)
        for name, role in roles.items()
        for action in (
            *WRITES,
            *ALLOWED,
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:Scan",
        )
        if role.allows(Call(name, action, AUDIT_ARN))
    }

    assert may == {(r.API_FUNCTION.name, action) for action in ALLOWED} | {
        (r.ERASER_FUNCTION.name, action) for action in ERASER
    }


def test_given_the_stack_when_synthesized_then_no_role_holds_an_aws_managed_dynamodb_policy(
    synth: Synthesis,
) -> None:
    attached = [
        arn
        for role in synth.of_type("AWS::IAM::Role").values()
        for arn in role["Properties"].get("ManagedPolicyArns", [])
    ]

    assert not [arn for arn in attached if "DynamoDB" in str(arn)]
