"""The HTTP API's side of every request that cannot be served: one error shape, and the checks
a request body passes before anything reads it. Pure: no I/O.

Every 4xx answer is ``{"error": {"code": ..., "message": ..., "field": ...}}``: ``code`` a
machine-readable word, ``message`` for people, ``field`` the JSON path in the request body
(``schedule.expression``, ``target.headers.X-Foo``) or null when the whole request is at fault;
a request past one of its owner's limits (``limit_exceeded``) also names the ``limit``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chronoq import resources as r

#: Machine codes of the error shape.
MALFORMED_JSON = "malformed_json"
UNAUTHORIZED = "unauthorized"
QUOTA_EXCEEDED = "quota_exceeded"
LIMIT_EXCEEDED = "limit_exceeded"
NOT_FOUND = "not_found"
METHOD_NOT_ALLOWED = "method_not_allowed"
CONFLICT = "conflict"
PAYLOAD_TOO_LARGE = "payload_too_large"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
INVALID_FIELD = "invalid_field"
INVALID_REQUEST = "invalid_request"

#: The values of the ``type`` of the body's unions (schedule, target): pydantic names the
#: member in its error locations, the body does not.
_UNION_FIELDS = frozenset({"schedule", "target"})
_UNION_TAGS = frozenset(
    {"at", "cron", "rate", "http", "python", "lambda", "sqs", "sns", "eventbridge", "container"}
)
_LOCATION_ROOTS = frozenset({"body", "query", "path", "header"})


@dataclass(frozen=True)
class ApiError(Exception):
    status: int
    code: str
    message: str
    field: str | None = None
    #: The owner's limit a request is past (its setting's name): ``limit_exceeded`` only.
    limit: str | None = None
    #: The jobs a request clashes with (a secret that jobs name): ``conflict`` only.
    jobs: list[str] | None = None

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "field": self.field}
        if self.limit:
            error["limit"] = self.limit
        if self.jobs is not None:
            error["jobs"] = self.jobs
        return {"error": error}


def field_path(location: Sequence[int | str]) -> str | None:
    """The JSON path in the request body of a pydantic error location: the request part
    (``body``), union members (``schedule.cron``) and dict-key markers left out."""
    parts = [str(p) for p in location]
    if parts and parts[0] in _LOCATION_ROOTS:
        parts = parts[1:]
    path: list[str] = []
    for n, part in enumerate(parts):
        if part == "[key]" or (part.startswith("function-") and part.endswith("]")):
            continue
        if n == 1 and parts[0] in _UNION_FIELDS and part in _UNION_TAGS:
            continue
        path.append(part)
    return ".".join(path) or None


def _message(error: Mapping[str, Any]) -> str:
    context = error.get("ctx") or {}
    if error.get("type") == "value_error" and "error" in context:
        return str(context["error"])
    return str(error.get("msg", "is invalid"))


def validation_error(errors: Iterable[Mapping[str, Any]]) -> ApiError:
    """A 422 naming the first bad field, its message listing every problem."""
    problems = [(field_path(e.get("loc", ())), _message(e)) for e in errors]
    if not problems:
        return ApiError(422, INVALID_REQUEST, "invalid request")
    field, first = problems[0]
    message = "; ".join(f"{f}: {m}" if f else m for f, m in problems)
    return ApiError(422, INVALID_FIELD if field else INVALID_REQUEST, message or first, field)


class _BigInt:
    """A JSON integer too long to be a number anyone means (found and refused by name)."""


_MAX_INT_DIGITS = 100


def _integer(text: str) -> int | _BigInt:
    return _BigInt() if len(text) > _MAX_INT_DIGITS else int(text)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("", "application/json") or (
        media.startswith("application/") and media.endswith("+json")
    )


def _header(event: Mapping[str, Any], name: str) -> str:
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == name:
            return str(value)
    return ""


def as_json_body(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with the body's content type read as JSON, once ``check_body`` took it
    (``application/json`` in any case, with parameters, or ``application/*+json``): the
    resolver parses only ``application/json``."""
    if not event.get("body"):
        return event
    headers = {
        str(k): v
        for k, v in (event.get("headers") or {}).items()
        if str(k).lower() != "content-type"
    }
    return {**event, "headers": {**headers, "content-type": "application/json"}}


def is_http_api_event(event: Any) -> bool:
    """Is ``event`` shaped as API Gateway's HTTP API events (payload 2.0) behind the JWT
    authorizer: a method, a path, and the authorizer's claims (possibly none)?"""
    if not isinstance(event, dict) or event.get("version") != "2.0":
        return False
    context = event.get("requestContext")
    if not isinstance(context, dict):
        return False
    http = context.get("http")
    authorizer = context.get("authorizer", {})
    return (
        isinstance(http, dict)
        and isinstance(http.get("method"), str)
        and isinstance(event.get("rawPath"), str)
        and isinstance(authorizer, dict)
        and isinstance(authorizer.get("jwt", {}), dict)
    )


def check_body(event: Mapping[str, Any]) -> ApiError | None:
    """What is wrong with the body of this API Gateway (payload 2.0) event, before it is
    parsed and validated: too large (413), not JSON by its content type (415), not JSON
    (400), or JSON that cannot be a value of chronoq's (422: too deep, a number that is not
    finite or far too long, a string that is not text)."""
    raw = event.get("body")
    if not raw:
        return None
    if len(raw) > r.MAX_REQUEST_BYTES * 4 // 3 + 4:
        return ApiError(
            413, PAYLOAD_TOO_LARGE, f"the body must be at most {r.MAX_REQUEST_BYTES} bytes"
        )
    data: bytes
    try:
        data = base64.b64decode(raw, validate=True) if event.get("isBase64Encoded") else b""
    except (binascii.Error, ValueError):
        return ApiError(400, MALFORMED_JSON, "the body is not valid base64")
    size = len(data) if event.get("isBase64Encoded") else len(str(raw).encode("utf-8", "replace"))
    if size > r.MAX_REQUEST_BYTES:
        return ApiError(
            413, PAYLOAD_TOO_LARGE, f"the body must be at most {r.MAX_REQUEST_BYTES} bytes"
        )
    content_type = _header(event, "content-type")
    if not _is_json(content_type):
        return ApiError(
            415, UNSUPPORTED_MEDIA_TYPE, f"the body must be application/json, not {content_type}"
        )
    try:
        text = data.decode("utf-8") if event.get("isBase64Encoded") else str(raw)
        text.encode("utf-8")  # (a body passed on as text with its undecodable bytes kept)
        document = json.loads(text, parse_int=_integer)
    except (UnicodeDecodeError, UnicodeEncodeError):
        return ApiError(400, MALFORMED_JSON, "the body is not UTF-8 text")
    except RecursionError:
        return ApiError(422, INVALID_REQUEST, f"JSON nested deeper than {r.MAX_JSON_DEPTH}")
    except ValueError as error:
        return ApiError(400, MALFORMED_JSON, f"the body is not valid JSON: {error}")
    return _check_values(document)


def _check_values(document: Any) -> ApiError | None:
    """Walk the parsed body (without recursion) for values chronoq cannot keep."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        field = ".".join(path) or None
        if len(path) > r.MAX_JSON_DEPTH:
            return ApiError(
                422, INVALID_FIELD, f"JSON nested deeper than {r.MAX_JSON_DEPTH}", field
            )
        if isinstance(value, _BigInt):
            return ApiError(
                422, INVALID_FIELD, f"integers have at most {_MAX_INT_DIGITS} digits", field
            )
        if isinstance(value, float) and not math.isfinite(value):
            return ApiError(
                422, INVALID_FIELD, "must be a finite number (not NaN or Infinity)", field
            )
        if isinstance(value, str) and not _is_text(value):
            return ApiError(422, INVALID_FIELD, "must be valid Unicode text", field)
        if isinstance(value, dict):
            for key, item in value.items():
                if not _is_text(key):
                    return ApiError(422, INVALID_FIELD, "names must be valid Unicode text", field)
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, str(n))) for n, item in enumerate(value))
    return None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # (lone surrogates, e.g. "\ud800")
        return False
    return True
