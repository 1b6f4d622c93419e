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

    def statements(self, role_arn: dict[str, Any]) -> list[dict[str, Any]]:
        """Every policy statement attached to the role ``role_arn`` (a Fn::GetAtt) names."""
        role = {"Ref": role_arn["Fn::GetAtt"][0]}
        return [
            statement
            for policy in self.of_type("AWS::IAM::Policy").values()
            if role in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]


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
