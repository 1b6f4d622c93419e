"""What the jobs' targets may reach, from the app's context (see cdk/app.py).

Each list of ARNs left unset (None) means "anything of that kind in the deployment's own
account and region"; an empty list means nothing at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from constructs import Construct, Node

S3_URI = "s3://"


@dataclass(frozen=True)
class TargetAccess:
    #: Lambda functions a lambda target may invoke (context ``lambda_targets``).
    lambda_functions: Sequence[str] | None = None
    #: Queues an sqs target may send to (context ``queue_targets``).
    queues: Sequence[str] | None = None
    #: Topics an sns target may publish to (context ``topic_targets``).
    topics: Sequence[str] | None = None
    #: Event buses an eventbridge target may put events on (context ``event_bus_targets``).
    event_buses: Sequence[str] | None = None
    #: Names of buckets, besides the deployment's own, that jobs may name as their output
    #: location (context ``output_buckets``; bucket ARNs and s3:// URIs are read as the names
    #: of their buckets).
    output_buckets: Sequence[str] = ()

    def __post_init__(self) -> None:
        names = (bucket_name(b) for b in self.output_buckets)
        object.__setattr__(self, "output_buckets", tuple(dict.fromkeys(n for n in names if n)))

    @classmethod
    def from_context(cls, node: Node) -> TargetAccess:
        return cls(
            lambda_functions=context_list(node, "lambda_targets"),
            queues=context_list(node, "queue_targets"),
            topics=context_list(node, "topic_targets"),
            event_buses=context_list(node, "event_bus_targets"),
            output_buckets=context_list(node, "output_buckets") or [],
        )

    def lambda_function_arns(self, scope: Construct) -> list[str]:
        return _or_own(
            self.lambda_functions,
            scope,
            service="lambda",
            resource="function",
            resource_name="*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def queue_arns(self, scope: Construct) -> list[str]:
        return _or_own(self.queues, scope, service="sqs", resource="*")

    def topic_arns(self, scope: Construct) -> list[str]:
        return _or_own(self.topics, scope, service="sns", resource="*")

    def event_bus_arns(self, scope: Construct) -> list[str]:
        return _or_own(self.event_buses, scope, service="events", resource="event-bus/*")

    def output_object_arns(self, scope: Construct) -> list[str]:
        """The objects of the extra output buckets."""
        return [
            Stack.of(scope).format_arn(
                service="s3",
                region="",
                account="",
                resource=bucket,
                resource_name="*",
                arn_format=ArnFormat.SLASH_RESOURCE_NAME,
            )
            for bucket in self.output_buckets
        ]


def bucket_name(value: str) -> str:
    """The name of the bucket ``value`` names: a name, a bucket or object ARN
    (``arn:aws:s3:::bucket/key``) or an S3 URI (``s3://bucket/key``)."""
    value = value.strip()
    if value.startswith("arn:"):
        value = value.split(":", 5)[-1]
    elif value.lower().startswith(S3_URI):
        value = value[len(S3_URI) :]
    return value.split("/", 1)[0]


def context_list(node: Node, key: str) -> list[str] | None:
    """A list context value, given as a list (cdk.json) or as comma-separated text
    (``-c key=a,b``); None when not given."""
    value = node.try_get_context(key)
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    return [str(item).strip() for item in items if str(item).strip()]


def _or_own(
    arns: Sequence[str] | None,
    scope: Construct,
    *,
    service: str,
    resource: str,
    resource_name: str | None = None,
    arn_format: ArnFormat = ArnFormat.NO_RESOURCE_NAME,
) -> list[str]:
    """``arns``, or when unset the wildcard of ``service`` in the stack's account and region."""
    if arns is not None:
        return list(arns)
    return [
        Stack.of(scope).format_arn(
            service=service, resource=resource, resource_name=resource_name, arn_format=arn_format
        )
    ]
