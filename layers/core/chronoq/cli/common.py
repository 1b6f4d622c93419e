"""What the commands that call the API share: the endpoint and token options, ``-o``, and
printing an answer either way."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from chronoq.cli import config, render
from chronoq.cli.client import Answer, Api

F = TypeVar("F", bound=Callable[..., Any])


def api_options(function: F) -> F:
    """``--url`` (alias ``--api``), ``--token`` and ``--profile``, resolved into an ``api``
    argument (an Api)."""

    @click.option(
        "--url",
        "--api",
        "url",
        metavar="URL",
        help=f"the API's base URL [default: ${config.URL_ENV}, else the profile's,"
        f" else {config.DEFAULT_URL}]",
    )
    @click.option(
        "--token",
        metavar="TOKEN",
        help=f"bearer token [default: ${config.TOKEN_ENV}, else the profile's]",
    )
    @click.option(
        "--profile",
        metavar="NAME",
        help=f"profile saved by chronoq login [default: ${config.PROFILE_ENV},"
        " else the current one]",
    )
    @functools.wraps(function)
    def wrapper(
        *args: Any, url: str | None, token: str | None, profile: str | None, **kwargs: Any
    ) -> Any:
        return function(*args, api=connect(url, token, profile), **kwargs)

    return wrapper  # type: ignore[return-value]


def output_option(function: F) -> F:
    return click.option(
        "-o",
        "--output",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="tables for people, or the API's JSON for scripts",
    )(function)


def connect(url: str | None, token: str | None, profile: str | None) -> Api:
    """The Api the flags, environment and profile point to; a profile's token about to
    expire is renewed (and saved) first when the profile says how."""
    path = config.config_path()
    endpoint = config.resolve(
        url=url,
        token=token,
        profile_name=profile,
        environ=os.environ,
        config=config.read_config(path),
    )
    chosen = endpoint.token
    if (
        endpoint.token_source == config.FROM_PROFILE
        and endpoint.profile is not None
        and endpoint.profile_name is not None
        and config.expires_soon(chosen)
    ):
        renewed = config.renewed_token(endpoint.profile)
        if renewed is not None:
            chosen, saved = renewed
            config.save_profile(path, endpoint.profile_name, saved)
    return Api(endpoint.url, chosen)


def emit(output: str, document: Any, table: Callable[[], Any]) -> None:
    """The API's JSON with ``-o json``, else the table ``table()`` makes."""
    if output == "json":
        click.echo(render.dump_json(document))
    else:
        render.show(table())


def emit_pages(
    api: Api,
    output: str,
    listing: tuple[str, str],
    paging: tuple[int | None, str | None, bool],
    table: Callable[[list[dict[str, Any]]], Any],
    filters: dict[str, Any] | None = None,
) -> None:
    """A list (``listing``: the API's path, and the key of its items), one page or, with
    ``every``, all of them (``paging``: limit, next_token, every), as ``output`` asks; in a
    table, a hint of how to see more when more are left (``filters``: query parameters)."""
    path, key = listing
    limit, next_token, every = paging
    items: list[dict[str, Any]] = []
    last: str | None = None
    for page, token in api.pages(path, key, limit, next_token, every, filters):
        items += page
        last = token
    emit(output, {key: items, "next_token": last}, lambda: table(items))
    if output == "table" and last:
        click.echo(f"(more: --next-token {last}, or --all)", err=True)


# --- plain credentials -----------------------------------------------------------------------

#: What a warning about a credential written into a job advises.
ADVICE = (
    'keep it as a secret (chronoq secrets put NAME) and name that in the job: {"secret": "NAME"}'
    " or {{ secret.NAME }}"
)
#: A warn-value of a ``Warning`` header: code, agent, "text" (RFC 9111).
_WARN_VALUE = re.compile(r'(\d{3})\s+(\S+)\s+"((?:[^"\\]|\\.)*)"')


def _warn_texts(header: str) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", text) for _, _, text in _WARN_VALUE.findall(header)]


def _api_advice() -> str:
    """What the API's ``Warning`` adds after its findings (domain.secrets.warning_header)."""
    from chronoq.domain import secrets

    return secrets.WARNING_ADVICE


def credential_findings(answer: Answer) -> list[str]:
    """Each plain credential an answer's ``Warning`` header names (``POST /jobs``, ``PATCH
    /jobs/{id}``): "target.headers.Authorization holds a plain credential", ..."""
    header = answer.header("Warning")
    if not header:
        return []
    advice = _api_advice()
    found: list[str] = []
    for text in _warn_texts(header):
        listed = text.removesuffix(advice) if advice else text
        found += [f for f in listed.split("; ") if f]
    return found


def warn_credentials(subject: str, findings: Iterable[str]) -> None:
    """A line on stderr for each finding: where, what, and what to do instead."""
    for finding in findings:
        click.echo(f"warning: {subject}{finding}; {ADVICE}", err=True)
