"""The base of every domain model: immutable, and strict about unknown fields."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, ValidationInfo


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: The validation context of what chronoq reads back from its store: the rules added since a
#: job was stored do not make it unreadable (a user changing it is told, naming the field).
STORED: dict[str, bool] = {"stored": True}


def is_stored(info: ValidationInfo | None) -> bool:
    """Is this validation reading back what chronoq stored (see STORED)?"""
    return bool(info is not None and isinstance(info.context, dict) and info.context.get("stored"))


def whole(pattern: re.Pattern[str], value: str, info: ValidationInfo | None) -> bool:
    """Does ``pattern`` match all of ``value``? (Its ``$`` alone lets a final newline through:
    what was stored so before still reads back.)"""
    return bool(pattern.fullmatch(value) or (is_stored(info) and pattern.match(value)))
