"""What the jobs' targets may reach, from the app's context (see cdk/app.py).

Secure by default: each list of ARNs left unset (None) or empty means nothing at all; ``*``
means anything of that kind in the deployment's own account and region. The API function is
told the same lists (it refuses a job naming anything else, with a 422 naming the setting),
and the runner's and state machine's IAM rights follow them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from chronoq import resources as r
from chronoq.domain import limits as lim
from constructs import Construct, Node

S3_URI = "s3://"
#: An ECR registry's host: ``<account>.dkr.ecr.<region>.amazonaws.com`` (``*`` may stand for
#: the account or the region in a pattern).
ECR_HOST = re.compile(
    r"^(?P<account>\d{12}|\*)\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+|\*)\.amazonaws\.com(?:\.cn)?$"
)


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
    #: Images container targets may run (patterns, ``*`` matching any characters; context
    #: ``container_images``; default: none).
    container_images: Sequence[str] | None = None
    #: Caps on container targets (contexts ``max_container_cpu``, ``max_container_memory``
    #: in MiB, ``max_container_seconds``).
    max_container_cpu: int = lim.DEFAULT_MAX_CONTAINER_CPU
    max_container_memory: int = lim.DEFAULT_MAX_CONTAINER_MEMORY
    max_container_seconds: int = lim.DEFAULT_MAX_CONTAINER_SECONDS

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
            container_images=context_list(node, "container_images"),
            max_container_cpu=_number(node, "max_container_cpu", lim.DEFAULT_MAX_CONTAINER_CPU),
            max_container_memory=_number(
                node, "max_container_memory", lim.DEFAULT_MAX_CONTAINER_MEMORY
            ),
            max_container_seconds=_number(
                node, "max_container_seconds", lim.DEFAULT_MAX_CONTAINER_SECONDS
            ),
        )

    def check(self) -> None:
        """Refuse caps outside what Fargate and chronoq's models allow."""
        if not 256 <= self.max_container_cpu <= lim.MAX_CONTAINER_CPU:
            raise ValueError(f"max_container_cpu must be within 256..{lim.MAX_CONTAINER_CPU}")
        if not 512 <= self.max_container_memory <= lim.MAX_CONTAINER_MEMORY:
            raise ValueError(f"max_container_memory must be within 512..{lim.MAX_CONTAINER_MEMORY}")
        if not 1 <= self.max_container_seconds <= lim.MAX_CONTAINER_TIMEOUT_SECONDS:
            raise ValueError(
                f"max_container_seconds must be within 1..{lim.MAX_CONTAINER_TIMEOUT_SECONDS}"
            )

    def api_environment(self) -> dict[str, str]:
        """The API function's variables for the same lists and caps ("*": any; "": none)."""
        lists = (
            (r.ENV_LAMBDA_TARGETS, self.lambda_functions),
            (r.ENV_QUEUE_TARGETS, self.queues),
            (r.ENV_TOPIC_TARGETS, self.topics),
            (r.ENV_EVENT_BUS_TARGETS, self.event_buses),
            (r.ENV_CONTAINER_IMAGES, self.container_images),
        )
        return {
            **{name: ",".join(values or ()) for name, values in lists},
            r.ENV_MAX_CONTAINER_CPU: str(self.max_container_cpu),
            r.ENV_MAX_CONTAINER_MEMORY: str(self.max_container_memory),
            r.ENV_MAX_CONTAINER_SECONDS: str(self.max_container_seconds),
        }

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

    def ecr_repository_arns(self, scope: Construct) -> list[str]:
        """The ECR repositories the allowed images come from (what the task execution role
        may pull); images of other registries (public ones) need no right."""
        stack = Stack.of(scope)
        found = []
        for pattern in self.container_images or ():
            if pattern == lim.ALLOW_ANY:
                found.append(stack.format_arn(service="ecr", resource="repository/*"))
                continue
            host, _, path = pattern.partition("/")
            matched = ECR_HOST.match(host)
            if matched is None or not path:
                continue
            repository = re.split(r"[:@]", path, maxsplit=1)[0]
            found.append(
                stack.format_arn(
                    service="ecr",
                    account=matched["account"],
                    region=matched["region"],
                    resource="repository",
                    resource_name=repository,
                    arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                )
            )
        return list(dict.fromkeys(found))

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


def _number(node: Node, key: str, default: int) -> int:
    value = node.try_get_context(key)
    return default if value is None else int(value)


def _or_own(
    arns: Sequence[str] | None,
    scope: Construct,
    *,
    service: str,
    resource: str,
    resource_name: str | None = None,
    arn_format: ArnFormat = ArnFormat.NO_RESOURCE_NAME,
) -> list[str]:
    """``arns`` (unset: none), each ``*`` read as the wildcard of ``service`` in the stack's
    account and region."""
    own = Stack.of(scope).format_arn(
        service=service, resource=resource, resource_name=resource_name, arn_format=arn_format
    )
    return list(dict.fromkeys(own if arn == lim.ALLOW_ANY else arn for arn in arns or ()))
