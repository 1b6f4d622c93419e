"""A small IAM policy evaluator over the synthesized template: each role's statements with their
CloudFormation references resolved to the names chronoq local gives the same resources, and a
call (action, resource ARN, condition keys) allowed when an Allow statement matches it and no
Deny does (wildcards ``*`` and ``?`` in actions and resources; the condition operators chronoq
uses: StringEquals, StringLike, ArnEquals, ArnLike). Resource policies (the buckets' and
queues' TLS-only denials) are not the roles' and are left out."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chronoq import console
from chronoq import resources as r
from chronoq.local.aws import ACCOUNT, LOCAL_SECRETS_PATH, PREFIX, REGION
from chronoq.local.calls import Call

from tests.infra.synthesis import Synthesis

PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "Chronoq",
}
OWN = f"{REGION}:{ACCOUNT}"
#: The stack's path of owners' secrets, and chronoq local's (where the calls name them).
STACK_SECRETS = f":parameter{r.secrets_path(PSEUDO['AWS::StackName'])}/"
LOCAL_SECRETS = f":parameter{LOCAL_SECRETS_PATH}/"


@dataclass(frozen=True)
class Named:
    """What a Ref and each Fn::GetAtt of a resource resolve to, locally."""

    ref: str
    attributes: Mapping[str, str]


def local_names(synth: Synthesis) -> dict[str, Named]:
    """Each of chronoq's resources in the template, named as chronoq local names it
    (chronoq.local.aws: ``chronoq-local-…`` in us-east-1, account 123456789012)."""
    stack = synth.stack
    named: dict[str, Named] = {}

    def table(construct: Any, spec: r.Table) -> None:
        name = f"{PREFIX}-{spec.id.lower()}"
        arn = f"arn:aws:dynamodb:{OWN}:table/{name}"
        named[synth.logical_id(construct)] = Named(
            name, {"Arn": arn, "StreamArn": f"{arn}/stream/*"}
        )

    for spec in r.TABLES:
        table(stack.storage.tables[spec.id], spec)
    for queue_spec in r.QUEUES:
        name = f"{PREFIX}-{queue_spec.id.lower()}"
        named[synth.logical_id(stack.queues.by_priority[queue_spec.priority])] = Named(
            f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}",
            {"Arn": f"arn:aws:sqs:{OWN}:{name}", "QueueName": name},
        )
    for construct, queue_id in (
        (stack.queues.dead_letter, r.DEAD_LETTER_QUEUE_ID),
        (stack.notifications.dead_letter, "notifierdeadletter"),
        (stack.archive.dead_letter, "archiverdeadletter"),
    ):
        name = f"{PREFIX}-{queue_id.lower()}"
        named[synth.logical_id(construct)] = Named(
            f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}",
            {"Arn": f"arn:aws:sqs:{OWN}:{name}", "QueueName": name},
        )
    topic = f"arn:aws:sns:{OWN}:{PREFIX}-{r.TOPIC_ID.lower()}"
    named[synth.logical_id(stack.notifications.topic)] = Named(topic, {"TopicArn": topic})
    # moto's secret ARNs end in a dash and six random characters, as AWS's do
    secret = f"arn:aws:secretsmanager:{OWN}:secret:{PREFIX}-{r.SIGNING_SECRET_ID.lower()}-??????"
    named[synth.logical_id(stack.notifications.signing_secret)] = Named(secret, {})
    for bucket_construct, bucket_id in (
        (stack.storage.outputs, r.OUTPUT_BUCKET_ID),
        (stack.archive.bucket, r.ARCHIVE_BUCKET_ID),
    ):
        bucket = f"{PREFIX}-{bucket_id.lower()}"
        named[synth.logical_id(bucket_construct)] = Named(bucket, {"Arn": f"arn:aws:s3:::{bucket}"})
    for machine, name in (
        (stack.execution.state_machine, f"{PREFIX}-run"),
        (stack.execution.express_state_machine, f"{PREFIX}-run-express"),
    ):
        arn = f"arn:aws:states:{OWN}:stateMachine:{name}"
        named[synth.logical_id(machine)] = Named(arn, {"Arn": arn, "Name": name})
    functions = {**stack.functions, console.FUNCTION.name: stack.console.function}
    for function_name, function in functions.items():
        name = f"{PREFIX}-{function_name}"
        named[synth.logical_id(function)] = Named(
            name, {"Arn": f"arn:aws:lambda:{OWN}:function:{name}"}
        )
    containers = stack.containers
    group = f"/{PREFIX}/{r.CONTAINER_LOG_GROUP_ID.lower()}"
    named[synth.logical_id(containers.log_group)] = Named(
        group, {"Arn": f"arn:aws:logs:{OWN}:log-group:{group}:*"}
    )
    cluster = f"{PREFIX}-{r.CONTAINER_CLUSTER_ID.lower()}"
    named[synth.logical_id(containers.cluster)] = Named(
        cluster, {"Arn": f"arn:aws:ecs:{OWN}:cluster/{cluster}"}
    )
    # chronoq local gives both container roles the one role it has
    role = f"arn:aws:iam::{ACCOUNT}:role/{PREFIX}-role"
    for container_role in (containers.execution_role, containers.task_role):
        named[synth.logical_id(container_role)] = Named(f"{PREFIX}-role", {"Arn": role})
    return named


def resolve(value: Any, named: Mapping[str, Named]) -> str:
    """A CloudFormation value as text, its references resolved (anything chronoq local has no
    name for resolves to a name of its own that no call can match)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(resolve(v, named) for v in value)
    if "Ref" in value:
        ref = value["Ref"]
        if ref in PSEUDO:
            return PSEUDO[ref]
        return named[ref].ref if ref in named else f"unnamed-{ref}"
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        found = named.get(logical_id)
        if found is None or attribute not in found.attributes:
            return f"unnamed-{logical_id}.{attribute}"
        return found.attributes[attribute]
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(resolve(p, named) for p in parts)
    if "Fn::Select" in value:
        index, items = value["Fn::Select"]
        return resolve(items, named).split(",")[int(index)]
    if "Fn::Split" in value:
        separator, text = value["Fn::Split"]
        return ",".join(resolve(text, named).split(separator))
    raise ValueError(f"cannot resolve {value}")


@dataclass(frozen=True)
class Statement:
    allow: bool
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: Mapping[str, Mapping[str, tuple[str, ...]]]

    def matches(self, call: Call) -> bool:
        return (
            any(_like(call.action, a, case=False) for a in self.actions)
            and any(_like(call.resource, p) for p in self.resources)
            and self._conditions_hold(dict(call.context))
        )

    def grants(self) -> list[tuple[str, str]]:
        return [(a, p) for a in self.actions for p in self.resources]

    def _conditions_hold(self, context: Mapping[str, str]) -> bool:
        for operator, keys in self.conditions.items():
            for key, wanted in keys.items():
                value = context.get(key)
                if value is None:
                    return False  # a key the request does not carry: no match
                if operator in ("StringEquals", "ArnEquals"):
                    held = value in wanted
                elif operator in ("StringLike", "ArnLike"):
                    held = any(_like(value, w) for w in wanted)
                else:
                    raise ValueError(f"condition operator {operator} is not evaluated here")
                if not held:
                    return False
        return True


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _like(value: str, pattern: str, case: bool = True) -> bool:
    """IAM's wildcards: ``*`` any characters, ``?`` one (fnmatch's brackets escaped)."""
    escaped = re.sub(r"([\[\]])", r"[\1]", pattern)
    if not case:
        return fnmatch.fnmatchcase(value.lower(), escaped.lower())
    return fnmatch.fnmatchcase(value, escaped)


def _local(resource: str) -> str:
    """A resource as chronoq local names it: the stack's parameters of owners' secrets are
    chronoq local's (its path is ``local``'s, not the stack's name's)."""
    return resource.replace(STACK_SECRETS, LOCAL_SECRETS)


def statements(raw: Iterable[Mapping[str, Any]], named: Mapping[str, Named]) -> list[Statement]:
    found = []
    for statement in raw:
        if "NotAction" in statement or "NotResource" in statement:
            raise ValueError(f"NotAction/NotResource are not evaluated here: {statement}")
        conditions = {
            operator: {
                key: tuple(resolve(v, named) for v in _listed(values))
                for key, values in keys.items()
            }
            for operator, keys in statement.get("Condition", {}).items()
        }
        found.append(
            Statement(
                allow=statement.get("Effect", "Allow") == "Allow",
                actions=tuple(_listed(statement["Action"])),
                resources=tuple(_local(resolve(v, named)) for v in _listed(statement["Resource"])),
                conditions=conditions,
            )
        )
    return found


@dataclass(frozen=True)
class Role:
    name: str
    statements: tuple[Statement, ...]

    def allows(self, call: Call) -> bool:
        if any(s.matches(call) for s in self.statements if not s.allow):
            return False
        return any(s.matches(call) for s in self.statements if s.allow)

    def used(self, calls: Iterable[Call]) -> set[tuple[str, str]]:
        """The grants (action, resource) some call of ``calls`` was allowed by."""
        found = set()
        for call in calls:
            for statement in self.statements:
                if statement.allow and statement.matches(call):
                    found |= {
                        (a, p)
                        for a, p in statement.grants()
                        if _like(call.action, a, case=False) and _like(call.resource, p)
                    }
        return found

    def grants(self) -> set[tuple[str, str]]:
        return {g for s in self.statements if s.allow for g in s.grants()}
