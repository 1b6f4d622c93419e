"""Targets: what a run does. One model per kind, told apart by ``type``."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from chronoq import resources as r
from chronoq.domain.base import Model


def http_url(value: str) -> str:
    """``value`` if it is an absolute http(s) URL (a pydantic validator)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    return value


#: ``s3://bucket`` or ``s3://bucket/prefix``: where a job's large outputs and logs go.
OUTPUT_LOCATION_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[\w!\-.*'()/]*)?$"


def split_location(location: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> (bucket, "some/key")."""
    bucket, _, key = location.removeprefix("s3://").partition("/")
    return bucket, key


class HttpTarget(Model):
    """Call an HTTP endpoint; a 2xx answer is success."""

    type: Literal["http"]
    url: str = Field(max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None

    _url = field_validator("url")(http_url)


class PythonTarget(Model):
    """Call a registered Python task (see chronoq.tasks) with JSON arguments."""

    type: Literal["python"]
    task: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)


def _json_size(value: Any) -> int:
    return len(json.dumps(value).encode())


def _bounded_json(value: Any) -> Any:
    if _json_size(value) > r.MAX_MESSAGE_BYTES:
        raise ValueError(f"must be at most {r.MAX_MESSAGE_BYTES} bytes of JSON")
    return value


class LambdaTarget(Model):
    """Invoke an existing Lambda function (synchronously); a function error fails the
    attempt. ``payload`` is the event (default: the run's ids, time and attempt)."""

    type: Literal["lambda"]
    function_arn: str = Field(
        pattern=r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}"
        r"(:[A-Za-z0-9_$-]{1,128})?$"
    )
    payload: Any = None

    _payload = field_validator("payload")(_bounded_json)


class SqsTarget(Model):
    """Send ``message`` to an SQS queue (a string as it is, anything else as JSON)."""

    type: Literal["sqs"]
    queue_url: str = Field(pattern=r"^https?://[^\s/]+/\d{12}/[A-Za-z0-9_-]{1,80}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)


class SnsTarget(Model):
    """Publish ``message`` to an SNS topic (a string as it is, anything else as JSON)."""

    type: Literal["sns"]
    topic_arn: str = Field(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)


class EventBridgeTarget(Model):
    """Put one event on an EventBridge bus."""

    type: Literal["eventbridge"]
    event_bus: str = Field(default="default", min_length=1, max_length=1600)
    source: str = Field(default="chronoq", max_length=256, pattern=r"^[A-Za-z0-9_.\-/]+$")
    detail_type: str = Field(default="chronoq.run", min_length=1, max_length=128)
    detail: dict[str, Any] = Field(default_factory=dict)

    _detail = field_validator("detail")(_bounded_json)

    @field_validator("source")
    @classmethod
    def _not_aws(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("must not start with aws. (reserved for AWS services)")
        return value


class ContainerTarget(Model):
    """Run a command in a container image on Fargate (locally: as a subprocess). Exit code
    0 is success. With ``heartbeat_seconds`` the container must call Step Functions'
    SendTaskHeartbeat with the token in ``CHRONOQ_TASK_TOKEN`` at least that often."""

    type: Literal["container"]
    image: str = Field(min_length=1, max_length=1024, pattern=r"^\S+$")
    command: list[str] = Field(min_length=1, max_length=100)
    cpu: Literal[256, 512, 1024, 2048, 4096] = 256
    memory: int = Field(default=512, ge=512, le=30720)
    environment: dict[str, str] = Field(default_factory=dict, max_length=50)
    #: The clock starts at RunTask: the first heartbeat must come this soon after the task
    #: was asked for, image pull and start-up included.
    heartbeat_seconds: int | None = Field(default=None, ge=60, le=r.MAX_CONTAINER_TIMEOUT_SECONDS)

    @field_validator("environment")
    @classmethod
    def _no_reserved_names(cls, value: dict[str, str]) -> dict[str, str]:
        reserved = sorted(k for k in value if k.startswith("CHRONOQ_"))
        if reserved:
            raise ValueError(f"names starting with CHRONOQ_ are reserved: {', '.join(reserved)}")
        return value


Target = Annotated[
    HttpTarget
    | PythonTarget
    | LambdaTarget
    | SqsTarget
    | SnsTarget
    | EventBridgeTarget
    | ContainerTarget,
    Field(discriminator="type"),
]
#: The same, as a plain union.
AnyTarget = (
    HttpTarget
    | PythonTarget
    | LambdaTarget
    | SqsTarget
    | SnsTarget
    | EventBridgeTarget
    | ContainerTarget
)
