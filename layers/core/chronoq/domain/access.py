"""What a deployment lets jobs reach: the services its lambda, sqs, sns and eventbridge
targets may call, the images its container targets may run and how large and long those may
be. Pure: the API checks a job against it before storing it (IAM, in AWS, follows the same
lists, so the check is an early, clear refusal rather than the only guard)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from chronoq.domain import limits as lim
from chronoq.domain.targets import (
    AnyTarget,
    ContainerTarget,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
)

#: Allowed patterns; None: anything.
Patterns = tuple[str, ...] | None


def patterns(text: str) -> Patterns:
    """A setting's comma-separated patterns: "*" allows anything, "" nothing."""
    if text.strip() == lim.ALLOW_ANY:
        return None
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _matches(value: str, allowed: Sequence[str]) -> bool:
    return any(fnmatchcase(value, pattern) for pattern in allowed)


def queue_arn(queue_url: str) -> str:
    """The ARN of the queue ``queue_url`` names (``https://sqs.REGION.amazonaws.com/ACCOUNT/
    NAME``, or the legacy ``https://REGION.queue.amazonaws.com/...``)."""
    parts = urlsplit(queue_url)
    host = parts.hostname or ""
    labels = host.split(".")
    if labels[0] == "sqs" and len(labels) > 1:
        region = labels[1]
    elif len(labels) > 1 and labels[1] == "queue":
        region = labels[0]
    else:
        region = "*"
    partition = "aws-cn" if host.endswith(".amazonaws.com.cn") else "aws"
    account, _, name = parts.path.strip("/").partition("/")
    return f"arn:{partition}:sqs:{region}:{account}:{name}"


def _bus_allowed(bus: str, allowed: Sequence[str]) -> bool:
    """A bus given by ARN matches an ARN pattern; one given by name (a bus of the
    deployment's own account and region) matches that name or the name part of a pattern."""
    if bus.startswith("arn:"):
        return _matches(bus, allowed)
    names = [p.split(":event-bus/", 1)[1] if ":event-bus/" in p else p for p in allowed]
    return _matches(bus, names)


def own_prefix(names: Sequence[str]) -> str | None:
    """The prefix every name of a deployment's resources starts with, from some of them (its
    tables' and queues' names): their common prefix up to its last ``-``. In AWS that is the
    stack's name (CloudFormation names a resource ``<stack>-<logical id>-<suffix>``), locally
    ``chronoq-local-``. None when the names share none."""
    if not names:
        return None
    common = names[0]
    for name in names[1:]:
        while not name.startswith(common):
            common = common[:-1]
    cut = common.rfind("-")
    return common[: cut + 1] if cut > 0 else None


@dataclass(frozen=True)
class OwnResources:
    """chronoq's own functions, queues, topics and buses: those whose names start with its
    prefix (see ``own_prefix``), in whatever account or region an ARN names (an emulator may
    not look at the account; refusing another account's look-alike costs nothing). Never a
    target, whatever the allow-lists say."""

    prefix: str

    def refusal(self, target: AnyTarget) -> tuple[str, str] | None:
        """(field, message) if ``target`` names one of chronoq's own resources."""
        if isinstance(target, LambdaTarget):
            field, value = "target.function_arn", target.function_arn
            name = value.split(":")[6]
        elif isinstance(target, SqsTarget):
            field, value = "target.queue_url", target.queue_url
            name = queue_arn(value).split(":")[5]
        elif isinstance(target, SnsTarget):
            field, value = "target.topic_arn", target.topic_arn
            name = value.split(":")[5]
        elif isinstance(target, EventBridgeTarget):
            field, value = "target.event_bus", target.event_bus
            name = value.split(":", 5)[-1].removeprefix("event-bus/")
        else:
            return None
        if not name.startswith(self.prefix):
            return None
        return (
            field,
            f"{value} is one of chronoq's own resources (named {self.prefix}*): targets never"
            " reach chronoq itself",
        )


@dataclass(frozen=True)
class TargetPolicy:
    """The deployment's allow-lists (None: anything) and container caps."""

    lambda_functions: Patterns = None
    queues: Patterns = None
    topics: Patterns = None
    event_buses: Patterns = None
    container_images: Patterns = None
    max_container_cpu: int = lim.MAX_CONTAINER_CPU
    max_container_memory: int = lim.MAX_CONTAINER_MEMORY
    max_container_seconds: int = lim.MAX_CONTAINER_TIMEOUT_SECONDS
    #: chronoq's own resources: refused whatever the lists allow (None: not known here).
    own: OwnResources | None = None

    def refusal(self, target: AnyTarget, timeout_seconds: int) -> tuple[str, str] | None:
        """(field, message) if this deployment does not let a job run ``target`` for up to
        ``timeout_seconds``; None if it does."""
        own = self.own.refusal(target) if self.own is not None else None
        if own is not None:
            return own
        if isinstance(target, LambdaTarget):
            return _listed(
                self.lambda_functions,
                target.function_arn,
                "target.function_arn",
                "a Lambda function jobs may invoke",
                "lambda_targets",
            )
        if isinstance(target, SqsTarget):
            arn = queue_arn(target.queue_url)
            if self.queues is None or _matches(arn, self.queues):
                return None
            return _refused(
                "target.queue_url", f"{arn}", "a queue jobs may send to", "queue_targets"
            )
        if isinstance(target, SnsTarget):
            return _listed(
                self.topics,
                target.topic_arn,
                "target.topic_arn",
                "a topic jobs may publish to",
                "topic_targets",
            )
        if isinstance(target, EventBridgeTarget):
            if self.event_buses is None or _bus_allowed(target.event_bus, self.event_buses):
                return None
            return _refused(
                "target.event_bus",
                target.event_bus,
                "a bus jobs may put events on",
                "event_bus_targets",
            )
        if isinstance(target, ContainerTarget):
            return self._container_refusal(target, timeout_seconds)
        return None

    def _container_refusal(self, target: ContainerTarget, timeout: int) -> tuple[str, str] | None:
        refused = _listed(
            self.container_images,
            target.image,
            "target.image",
            "an image container jobs may run",
            "container_images",
        )
        if refused:
            return refused
        if target.cpu > self.max_container_cpu:
            return (
                "target.cpu",
                f"must be at most {self.max_container_cpu} in this deployment"
                f" (setting max_container_cpu)",
            )
        if target.memory > self.max_container_memory:
            return (
                "target.memory",
                f"must be at most {self.max_container_memory} MiB in this deployment"
                f" (setting max_container_memory)",
            )
        if timeout > self.max_container_seconds:
            return (
                "timeout_seconds",
                f"must be at most {self.max_container_seconds} for a container in this"
                f" deployment (setting max_container_seconds)",
            )
        return None


def _listed(
    allowed: Patterns, value: str, field: str, what: str, setting: str
) -> tuple[str, str] | None:
    if allowed is None or _matches(value, allowed):
        return None
    return _refused(field, value, what, setting)


def _refused(field: str, value: str, what: str, setting: str) -> tuple[str, str]:
    return (
        field,
        f"{value} is not {what} in this deployment: its operators allow it with the CDK"
        f" context setting {setting} (cdk deploy -c {setting}=PATTERN,...; default: none)",
    )


#: Anything allowed, Fargate's own caps (chronoq local; and use cases built without a policy).
ANY_TARGET = TargetPolicy()
