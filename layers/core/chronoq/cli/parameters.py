"""Run parameters on the command line: ``--param NAME=VALUE`` (repeatable) and ``--params
JSON`` for ``chronoq jobs trigger``, ``jobs backfill``, ``jobs rerun`` and ``runs rerun``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def parameters_options(function: F) -> F:
    """``--params JSON`` and ``--param NAME=VALUE`` (a string; after --params, each
    overlays it), given to the command as ``parameters`` (None: none given)."""

    @functools.wraps(function)  # (its options so far kept: click keeps them on it)
    def command(*args: Any, **kwargs: Any) -> Any:
        given = parameters_of(kwargs.pop("params_json"), kwargs.pop("param"))
        return function(*args, parameters=given, **kwargs)

    decorated: Any = click.option(
        "--param",
        "param",
        multiple=True,
        metavar="NAME=VALUE",
        help="a run parameter ({{ params.NAME }} in the target), as text; repeatable",
    )(command)
    return click.option(  # type: ignore[no-any-return]
        "--params",
        "params_json",
        metavar="JSON",
        help='run parameters as a JSON object, e.g. \'{"day": "2026-11-01", "limit": 10}\'',
    )(decorated)


def parameters_of(params_json: str | None, pairs: tuple[str, ...]) -> dict[str, Any] | None:
    """The parameters the options give (None: none)."""
    parameters: dict[str, Any] = {}
    if params_json is not None:
        try:
            parsed = json.loads(params_json)
        except ValueError as error:
            raise click.BadParameter(f"not JSON: {error}", param_hint="--params") from None
        if not isinstance(parsed, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--params")
        parameters.update(parsed)
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--param")
        parameters[name] = value
    return parameters if params_json is not None or pairs else None


def with_parameters(body: dict[str, Any], parameters: dict[str, Any] | None) -> dict[str, Any]:
    """A request's body with its parameters, when some were given."""
    return {**body, "parameters": parameters} if parameters is not None else body
