"""Acknowledging a finding of AWS's rules (cdk-nag's AwsSolutions and Serverless packs, run on
the synthesized stack by tests/infra/test_rules.py): each acknowledgement sits beside the
construct it concerns, with the reason the rule does not apply or is not followed there.

Acknowledgements are CDK's own (``Validations``): the stack does not need cdk-nag to be
synthesized or deployed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct

#: The finding of a wildcard in a statement's resources (AwsSolutions-IAM5), for one resource.
WILDCARD_RESOURCE = "AwsSolutions-IAM5[Resource::{}]"


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """``rule`` (e.g. ``AwsSolutions-S1``, or one finding: ``AwsSolutions-IAM5[Resource::*]``)
    does not hold for ``construct`` (and what it contains), because of ``reason``."""
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


def grant_wildcards(
    grantee: iam.IGrantable,
    actions: Sequence[str],
    resources: Sequence[str],
    reason: str,
    conditions: dict[str, Any] | None = None,
) -> None:
    """Grant ``actions`` on ``resources``, some of which hold a wildcard (object keys, run
    ids, task ids: names chronoq makes by the run), acknowledging each such resource's
    finding on the grantee's role with ``reason``."""
    iam.Grant.add_to_principal(
        grantee=grantee, actions=list(actions), resource_arns=list(resources), conditions=conditions
    )
    principal = grantee.grant_principal
    scope = principal if isinstance(principal, iam.Role) else None
    if scope is None:
        raise TypeError(f"{grantee} does not act through a role of this stack")
    for resource in resources:
        flat = flattened(Stack.of(scope).resolve(resource))
        if "*" in flat:
            acknowledge(scope, WILDCARD_RESOURCE.format(flat), reason)


def flattened(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag names it in a finding: ``<Id>`` for a Ref,
    ``<Id.Attribute>`` for a Fn::GetAtt, joins joined, ``${X}`` of a Fn::Sub as ``<X>``,
    anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("${", "<").replace("}", ">")
    if isinstance(value, dict):
        if "Fn::Join" in value:
            delimiter, items = value["Fn::Join"]
            return str(delimiter).join(flattened(item) for item in items)
        if "Fn::Sub" in value:
            return flattened(value["Fn::Sub"])
        if "Fn::GetAtt" in value:
            resource, attribute = value["Fn::GetAtt"]
            return f"<{flattened(resource)}.{flattened(attribute)}>"
        if "Fn::ImportValue" in value:
            return flattened(value["Fn::ImportValue"])
        if "Ref" in value:
            return f"<{flattened(value['Ref'])}>"
    return json.dumps(value, separators=(",", ":"))
