"""The synthesized Chronoq stack as the infra tests see it: template, constructs and assets."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import CfnElement, cx_api
from constructs import IConstruct

if TYPE_CHECKING:
    from chronoq_cdk.stack import ChronoqStack


@dataclass(frozen=True)
class Synthesis:
    stack: ChronoqStack
    template: dict[str, Any]
    #: Where each asset was staged, by its S3 object key.
    assets: dict[str, Path]

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return cast(dict[str, dict[str, Any]], self.template["Resources"])

    def logical_id(self, construct: IConstruct) -> str:
        return self.stack.get_logical_id(cast(CfnElement, construct.node.default_child))

    def resource(self, construct: IConstruct) -> dict[str, Any]:
        return self.resources[self.logical_id(construct)]

    def of_type(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == type_}

    def ref(self, construct: IConstruct) -> dict[str, Any]:
        return {"Ref": self.logical_id(construct)}

    def arn(self, construct: IConstruct) -> dict[str, Any]:
        return {"Fn::GetAtt": [self.logical_id(construct), "Arn"]}

    def role_statements(self, construct: IConstruct) -> list[dict[str, Any]]:
        """Every policy statement of the role a function (Role) or state machine (RoleArn)
        runs with."""
        props = self.resource(construct)["Properties"]
        return self.statements(props.get("Role") or props["RoleArn"])

    def statements(self, role_arn: dict[str, Any]) -> list[dict[str, Any]]:
        """Every policy statement attached to the role ``role_arn`` (a Fn::GetAtt) names."""
        role = {"Ref": role_arn["Fn::GetAtt"][0]}
        return [
            statement
            for policy in self.of_type("AWS::IAM::Policy").values()
            if role in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]


def rendered(value: Any) -> str:
    """A CloudFormation value as text: each Ref shown as ``${LogicalId}``, each Fn::GetAtt as
    ``${LogicalId.Attribute}``, each Fn::Join joined, any other function as its JSON."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"${{{value['Ref']}}}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(rendered(p) for p in parts)
    return json.dumps(value, sort_keys=True)


def grants(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """The Allow statements as (action, resource as text, condition as JSON) triples."""
    return _triples(allowed(statements))


def denials(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """The Deny statements as (action, resource as text, condition as JSON) triples."""
    return _triples([s for s in statements if s.get("Effect") == "Deny"])


def allowed(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The statements that allow (Allow is IAM's default effect)."""
    return [s for s in statements if s.get("Effect", "Allow") == "Allow"]


def _triples(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (action, rendered(resource), json.dumps(s.get("Condition"), sort_keys=True))
        for s in statements
        for action in _listed(s["Action"])
        for resource in _listed(s["Resource"])
    }


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def staged_assets(assembly: cx_api.CloudAssembly, stack: ChronoqStack) -> dict[str, Path]:
    """Where each asset of ``stack`` was staged, by its S3 object key (from the asset manifest
    the cloud assembly's manifest.json names)."""
    directory = Path(assembly.directory)
    artifacts = json.loads((directory / "manifest.json").read_text())["artifacts"]
    (manifest,) = (
        artifacts[d.id]["properties"]["file"]
        for d in assembly.get_stack_artifact(stack.artifact_id).dependencies
        if artifacts[d.id]["type"] == "cdk:asset-manifest"
    )
    files = json.loads((directory / manifest).read_text())["files"]
    return {
        destination["objectKey"]: directory / entry["source"]["path"]
        for entry in files.values()
        for destination in entry["destinations"].values()
    }
