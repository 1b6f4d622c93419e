"""Run parameters: a JSON object a trigger, a re-run or a backfill passes (and a job's
defaults), that a target's placeholders read as ``{{ params.NAME }}`` (docs/api/secrets.md,
"Run parameters and placeholders")."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator

from chronoq.domain import limits as lim
from chronoq.domain.base import Model
from chronoq.domain.errors import InvalidRequest

#: A parameter's name: what ``{{ params.NAME }}`` can name.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def bounded(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` if it is a JSON object of named values within MAX_PARAMETERS_BYTES (a
    pydantic validator: its error names the field)."""
    invalid = sorted(
        k for k in value if not NAME.match(k) or len(k) > lim.MAX_PARAMETER_NAME_LENGTH
    )
    if invalid:
        raise ValueError(
            f"names must be letters, digits, _ and -, starting with a letter or digit, at most"
            f" {lim.MAX_PARAMETER_NAME_LENGTH} characters: {invalid[0]!r}"
        )
    try:
        size = len(json.dumps(value, separators=(",", ":"), allow_nan=False).encode())
    except ValueError:
        raise ValueError("must not contain NaN or infinite numbers") from None
    if size > lim.MAX_PARAMETERS_BYTES:
        raise ValueError(f"must be at most {lim.MAX_PARAMETERS_BYTES} bytes of JSON (is {size})")
    return value


#: A JSON object of parameters (a model field: 422 naming it when it is not one, or too big).
Parameters = Annotated[dict[str, Any], AfterValidator(bounded)]


def overlay(*layers: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A run's parameters: the job's defaults overlaid by the request's (and, for a re-run,
    the original run's between them), checked again: together they stay within the bound
    (InvalidRequest naming ``parameters``). None when there are none."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    try:
        return bounded(merged) or None
    except ValueError as error:
        raise InvalidRequest("parameters", f"with the job's defaults, {error}") from None


class RunRequest(Model):
    """The body of ``POST /jobs/{id}/trigger`` and ``POST /runs/{id}/rerun`` (optional)."""

    #: The run's parameters: they overlay the job's defaults.
    parameters: Parameters | None = None


def stored(parameters: Mapping[str, Any] | None) -> str | None:
    """Parameters as a run's record keeps them: compact JSON, nothing when there are none."""
    return json.dumps(parameters, separators=(",", ":")) if parameters else None
