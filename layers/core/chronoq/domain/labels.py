"""Labels: key/value strings a user puts on a job to find it again, as Kubernetes has them,
and the selectors that keep the jobs carrying one (``team=data``). Pure.

A key is a name of 1-63 characters (letters, digits, ``-``, ``_``, ``.``; a letter or digit
at each end), optionally after a prefix and a slash: a DNS subdomain of at most 253
characters (``example.com/team``). A value is empty, or a name as above.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo, WithJsonSchema

from chronoq.domain import limits as lim
from chronoq.domain.base import whole

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
_DNS_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_PREFIX = rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*"
KEY_PATTERN = rf"^(?:{_PREFIX}/)?{_NAME}$"
VALUE_PATTERN = rf"^(?:{_NAME})?$"
_KEY = re.compile(KEY_PATTERN)
_VALUE = re.compile(VALUE_PATTERN)
MAX_PREFIX = 253
MAX_NAME = 63


def label_key(key: str, info: ValidationInfo | None) -> str:
    prefix = key.rpartition("/")[0]
    if not whole(_KEY, key, info) or len(prefix) > MAX_PREFIX:
        raise ValueError(
            f"{key!r} is not a label key: a name of 1-{MAX_NAME} letters, digits, '-', '_'"
            " or '.' (a letter or digit at each end), optionally after a DNS prefix and '/'"
            f" (at most {MAX_PREFIX} characters), e.g. 'team' or 'example.com/team'"
        )
    return key


def label_value(value: str, info: ValidationInfo | None) -> str:
    if not whole(_VALUE, value, info):
        raise ValueError(
            f"{value!r} is not a label value: empty, or 1-{MAX_NAME} letters, digits, '-', '_'"
            " or '.' (a letter or digit at each end)"
        )
    return value


LabelKey = Annotated[
    str,
    AfterValidator(label_key),
    WithJsonSchema({"type": "string", "pattern": KEY_PATTERN, "maxLength": 317}),
]
LabelValue = Annotated[
    str,
    AfterValidator(label_value),
    WithJsonSchema({"type": "string", "pattern": VALUE_PATTERN, "maxLength": MAX_NAME}),
]
#: A job's labels: up to MAX_LABELS keys, each with a value.
Labels = Annotated[
    dict[LabelKey, LabelValue],
    # (keys only by their pattern: patternProperties, and nothing else)
    Field(max_length=lim.MAX_LABELS, json_schema_extra={"additionalProperties": False}),
]

#: One selector: the key and the value a job's label must have.
Selector = tuple[str, str]


def selector(text: str) -> Selector:
    """``key=value`` as a selector (ValueError saying why not)."""
    key, equals, value = text.partition("=")
    if not equals:
        raise ValueError(f"{text!r} is not a selector: give key=value, e.g. team=data")
    return label_key(key.strip(), None), label_value(value.strip(), None)


def selectors(texts: list[str] | None) -> tuple[Selector, ...]:
    """Each of ``texts`` as a selector, sorted and without repeats."""
    return tuple(sorted({selector(text) for text in texts or []}))


def matches(labels: dict[str, str], wanted: tuple[Selector, ...]) -> bool:
    """Does a job with ``labels`` carry every label ``wanted`` (none: any job)?"""
    return all(labels.get(key) == value for key, value in wanted)
