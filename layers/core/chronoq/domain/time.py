"""Instants as chronoq keeps them: UTC, whole seconds for fire times, milliseconds on the wire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import PlainSerializer, WithJsonSchema


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
