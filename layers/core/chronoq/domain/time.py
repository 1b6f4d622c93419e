"""Instants as chronoq keeps them: UTC, whole seconds for fire times, milliseconds on the wire."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, PlainSerializer, WithJsonSchema

#: The shape of an ISO 8601 date and time (ASCII digits): a date, ``T`` (or a space), hours and
#: minutes, then optionally seconds, a fraction and the offset (pydantic reads the rest).
_ISO = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}"
    r"(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


def iso_text(value: Any) -> Any:
    """An instant given as ISO 8601 text (a pydantic validator, run before parsing): a
    number, or text of another shape, is refused (pydantic would read "1700000000" or
    1700000000 as a Unix time). A datetime made in code passes as it is."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _ISO.fullmatch(value):
        raise ValueError(
            "must be an ISO 8601 date and time with its offset, e.g. 2026-11-27T12:00:00Z"
        )
    return value


#: An instant as the API takes it: ISO 8601 text with an offset.
IsoInstant = Annotated[AwareDatetime, BeforeValidator(iso_text)]


def utc_now() -> datetime:
    """Now, to the millisecond (the precision instants are stored with)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def utc_second(value: datetime) -> datetime:
    """``value`` in UTC, rounded up to the whole second (chronoq's precision)."""
    value = value.astimezone(UTC)
    if value.microsecond:
        value = value.replace(microsecond=0) + timedelta(seconds=1)
    return value


def format_instant(value: datetime) -> str:
    """The wire format of an instant: ISO 8601 in UTC with a ``Z``, milliseconds if any."""
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + "Z"


#: An instant of a model, written in JSON (API answers, messages) in the wire format.
Instant = Annotated[
    datetime,
    PlainSerializer(format_instant, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
