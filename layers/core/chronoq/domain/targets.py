"""Targets: what a run does. One model per kind, told apart by ``type``."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from chronoq.domain import limits as lim
from chronoq.domain import secrets
from chronoq.domain.base import Model, is_stored, whole
from chronoq.domain.secrets import SecretRef

#: Bidirectional formatting characters: they reorder what a terminal or page shows around them.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def shown_text(value: str, info: ValidationInfo) -> str:
    """``value`` if it can be shown as it is in a table or a terminal (a pydantic validator):
    no NUL or other control characters (ANSI escapes start with one), no bidirectional
    overrides, no other invisible formatting characters."""
    if is_stored(info):
        return value
    if any(c in _BIDI for c in value):
        raise ValueError("must not contain bidirectional formatting characters (e.g. U+202E)")
    if "\x1b" in value:
        raise ValueError("must not contain escape sequences (ESC, U+001B)")
    if not value.isprintable():
        raise ValueError("must not contain NUL, control or other non-printing characters")
    return value


#: Characters that show as nothing though Unicode counts them as letters or symbols (fillers,
#: the blank Braille pattern, invisible separators and operators).
_BLANK_LOOKING = frozenset(
    "\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0\u2061\u2062\u2063\u2064"
)
#: Unicode categories that show nothing by themselves: spaces, separators, controls,
#: formatting, marks that combine with a character before them, unassigned and private use.
_UNSEEN_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Mc", "Me"})


def visible_text(value: str, info: ValidationInfo) -> str:
    """``value`` if it has a character one can see (a pydantic validator): not only spaces,
    fillers, blank patterns, variation selectors or combining marks."""
    if is_stored(info) or any(
        c not in _BLANK_LOOKING and unicodedata.category(c) not in _UNSEEN_CATEGORIES for c in value
    ):
        return value
    raise ValueError("must contain a visible character (not only spaces, fillers or marks)")


def http_url(value: str, info: ValidationInfo | None = None) -> str:
    """``value`` if it is an absolute http(s) URL without credentials (a pydantic validator).
    Which addresses it may name is the deployment's network policy's business (see
    chronoq.domain.network). A secret placeholder may sit in its query only: where it calls
    is never a secret's to say."""
    if secrets.names_in_text(value):
        before, _, query = value.partition("?")
        if not is_stored(info) and (secrets.names_in_text(before) or "#" in query):
            raise ValueError("may hold a secret placeholder in its query only")
    checked = secrets.EXPRESSION.sub("x", value)
    _plain_url(checked)
    return value


def _plain_url(value: str) -> None:
    if any(c in value for c in "\r\n\t\x00 ") or not value.isprintable():
        raise ValueError("must not contain spaces or control characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    if "@" in parts.netloc:
        raise ValueError("must not carry credentials (user:password@): send them in a header")
    try:
        parts.port  # noqa: B018 - raises for a port that is not one
    except ValueError:
        raise ValueError("has an invalid port") from None


_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def _header_name(name: str, info: ValidationInfo) -> str:
    if not whole(_TOKEN, name, info) or len(name) > lim.MAX_HEADER_NAME_LENGTH:
        raise ValueError(
            f"is not a valid header name (letters, digits and !#$%&'*+-.^_`|~, at most"
            f" {lim.MAX_HEADER_NAME_LENGTH})"
        )
    lowered = name.lower()
    if lowered in lim.RESERVED_HEADERS or lowered.startswith(lim.RESERVED_HEADER_PREFIX):
        raise ValueError(
            "is reserved: Host, Content-Length, Transfer-Encoding, Connection and X-Chronoq-*"
            " are set by chronoq"
        )
    return name


def has_controls(value: str) -> bool:
    """Does ``value`` hold a control character a header cannot carry (any but tab)?"""
    return any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value)


def _header_value(value: str, info: ValidationInfo) -> str:
    if any(c in value for c in "\r\n\x00"):
        raise ValueError("must not contain CR, LF or NUL")
    if len(value) > lim.MAX_HEADER_VALUE_LENGTH:
        raise ValueError(f"must be at most {lim.MAX_HEADER_VALUE_LENGTH} characters")
    if is_stored(info):
        return value
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(
            "must be Latin-1 text (HTTP sends header values as ISO-8859-1 bytes): encode other"
            " characters yourself, e.g. percent-encoded"
        ) from None
    if has_controls(value):
        raise ValueError("must not contain control characters (other than tab)")
    if len(value) > lim.MAX_HEADER_VALUE_LENGTH:
        raise ValueError(f"must be at most {lim.MAX_HEADER_VALUE_LENGTH} characters")
    return value


HeaderName = Annotated[str, AfterValidator(_header_name)]
HeaderValue = Annotated[str, AfterValidator(_header_value)]
#: A header's value: text (secret placeholders in it), or a secret's whole value.
SecretHeaderValue = HeaderValue | SecretRef


def one_of_each(headers: dict[str, Any]) -> dict[str, Any]:
    """``headers`` if no name comes twice (a pydantic validator): header names are
    case-insensitive."""
    seen: set[str] = set()
    for name in headers:
        if name.lower() in seen:
            raise ValueError(f"names {name} twice (header names are case-insensitive)")
        seen.add(name.lower())
    return headers


def no_secrets(value: Any, info: ValidationInfo) -> Any:
    """``value`` if it names no secret (a pydantic validator): what the state machine
    delivers itself (sqs, sns, eventbridge) would keep a value in its history, and a lambda
    target's payload is the function's to see whole."""
    if not is_stored(info) and secrets.names_in(value):
        raise ValueError(
            "must not name a secret: secrets reach http, python and container targets and"
            " webhooks only"
        )
    return value


_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
#: A container image reference, by the grammar of Docker's and ECS's references:
#: ``[registry[:port]/]name[/name...][:tag][@digest]``.
IMAGE_REFERENCE = re.compile(
    rf"^(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?"
    rf"{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$",
    re.ASCII,
)
#: An environment variable's name (as POSIX shells and ECS take it).
ENVIRONMENT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def image_reference(value: str, info: ValidationInfo | None) -> str:
    """``value`` if it is an image reference (a pydantic validator): never anything a
    command line could take for an option."""
    if not whole(IMAGE_REFERENCE, value, info):
        raise ValueError(
            "is not an image reference ([registry[:port]/]name[:tag][@digest], the name in"
            " lower case)"
        )
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
    headers: dict[HeaderName, SecretHeaderValue] = Field(
        default_factory=dict, max_length=lim.MAX_HEADERS
    )
    body: Any = None

    _url = field_validator("url")(http_url)

    _one_of_each = field_validator("headers")(one_of_each)

    @field_validator("body")
    @classmethod
    def _bounded_body(cls, value: Any) -> Any:
        return _bounded_json(value, lim.MAX_ARGS_BYTES)


class PythonTarget(Model):
    """Call a registered Python task (see chronoq.tasks) with JSON arguments."""

    type: Literal["python"]
    task: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    #: What the task reads as ``context.environment`` (never the process's own environment:
    #: tasks of other runs share the process).
    environment: dict[
        Annotated[str, Field(min_length=1, max_length=256)],
        Annotated[str, Field(max_length=4096)] | SecretRef,
    ] = Field(default_factory=dict, max_length=50)

    @field_validator("environment")
    @classmethod
    def _environment_names(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        invalid = sorted(k for k in value if not whole(ENVIRONMENT_NAME, k, info))
        if invalid:
            raise ValueError(
                f"names must be letters, digits and _, not starting with a digit: {invalid[0]!r}"
            )
        return value

    @field_validator("args")
    @classmethod
    def _bounded_args(cls, value: dict[str, Any]) -> dict[str, Any]:
        _bounded_json(value, lim.MAX_ARGS_BYTES)
        return value


def _json_size(value: Any) -> int:
    try:
        return len(json.dumps(value, allow_nan=False).encode())
    except ValueError:
        raise ValueError("must not contain NaN or infinite numbers") from None


def _bounded_json(value: Any, limit: int = lim.MAX_MESSAGE_BYTES) -> Any:
    if _json_size(value) > limit:
        raise ValueError(f"must be at most {limit} bytes of JSON")
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
    _no_secrets = field_validator("payload")(no_secrets)


class SqsTarget(Model):
    """Send ``message`` to an SQS queue (a string as it is, anything else as JSON)."""

    type: Literal["sqs"]
    queue_url: str = Field(pattern=r"^https?://[^\s/]+/\d{12}/[A-Za-z0-9_-]{1,80}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)
    _queue_url = field_validator("queue_url")(shown_text)
    _no_secrets = field_validator("message")(no_secrets)


class SnsTarget(Model):
    """Publish ``message`` to an SNS topic (a string as it is, anything else as JSON)."""

    type: Literal["sns"]
    topic_arn: str = Field(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)
    _no_secrets = field_validator("message")(no_secrets)


class EventBridgeTarget(Model):
    """Put one event on an EventBridge bus."""

    type: Literal["eventbridge"]
    event_bus: str = Field(default="default", min_length=1, max_length=1600)
    source: str = Field(default="chronoq", max_length=256, pattern=r"^[A-Za-z0-9_.\-/]+$")
    detail_type: str = Field(default="chronoq.run", min_length=1, max_length=128)
    detail: dict[str, Any] = Field(default_factory=dict)

    _detail = field_validator("detail")(_bounded_json)
    _shown = field_validator("event_bus", "detail_type")(shown_text)
    _no_secrets = field_validator("detail", "event_bus", "detail_type")(no_secrets)

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
    image: str = Field(min_length=1, max_length=1024)
    command: list[Annotated[str, Field(max_length=4096)]] = Field(min_length=1, max_length=100)
    cpu: Literal[256, 512, 1024, 2048, 4096] = 256
    memory: int = Field(default=512, ge=512, le=30720, strict=True)
    #: A secret is a whole variable's value (``{"secret": name}``): ECS hands it to the task.
    environment: dict[
        Annotated[str, Field(min_length=1, max_length=256)],
        Annotated[str, Field(max_length=4096)] | SecretRef,
    ] = Field(default_factory=dict, max_length=50)
    #: The clock starts at RunTask: the first heartbeat must come this soon after the task
    #: was asked for, image pull and start-up included.
    heartbeat_seconds: int | None = Field(
        default=None, ge=60, le=lim.MAX_CONTAINER_TIMEOUT_SECONDS, strict=True
    )

    _image = field_validator("image")(image_reference)

    @field_validator("command")
    @classmethod
    def _fixed_program(cls, value: list[str], info: ValidationInfo) -> list[str]:
        """The program a container runs is the job's own: its first word takes no
        placeholder (docs/api/secrets.md)."""
        if not is_stored(info) and secrets.EXPRESSION.search(value[0]):
            raise ValueError(
                "the program (the first word) must not hold a placeholder: pass values as"
                " arguments after it"
            )
        return value

    @field_validator("environment")
    @classmethod
    def _no_reserved_names(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        inside = sorted(k for k, v in value.items() if isinstance(v, str) and secrets.names_in(v))
        if inside:
            raise ValueError(
                f"{inside[0]} holds a secret placeholder: a container takes a secret as a whole"
                ' variable, {"secret": "name"}'
            )
        invalid = sorted(k for k in value if not whole(ENVIRONMENT_NAME, k, info))
        if invalid:
            raise ValueError(
                f"names must be letters, digits and _, not starting with a digit: {invalid[0]!r}"
            )
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
