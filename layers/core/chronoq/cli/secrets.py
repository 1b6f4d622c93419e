"""``chronoq secrets``: keep a secret's value (``put``), list the secrets (``list``), delete one
(``delete``). A value is read from standard input or typed at a hidden prompt, never taken
from the command line (it would stay in the shell's history and show in ``ps``), and never
printed: the API never answers one."""

from __future__ import annotations

import getpass
import sys
from typing import Any

import click

from chronoq.cli import render
from chronoq.cli.client import Api, quote
from chronoq.cli.common import api_options, emit, output_option
from chronoq.cli.errors import API_ERROR, USAGE, ApiError, Failure

#: What a command refuses for words after its NAME: never echoed (one may be a value).
_NO_VALUE = (
    "a secret's value is never given on the command line (it would stay in your shell's"
    " history and show in ps): pipe it in (chronoq secrets put NAME < file) or type it at"
    " the prompt"
)


@click.group()
def secrets() -> None:
    """Your secrets: values jobs name (a header, a variable, a placeholder) and never hold.

    \b
    chronoq secrets put crm-token            (asks for the value, twice, hidden)
    chronoq secrets put crm-token < token.txt
    chronoq secrets list
    chronoq secrets delete crm-token
    """


def _refuse_more(ctx: click.Context) -> None:
    """Words or options after NAME: refused without repeating them."""
    if ctx.args:
        raise click.UsageError(_NO_VALUE, ctx)


@secrets.command("put", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@click.argument("name")
@output_option
@api_options
@click.pass_context
def put_secret(ctx: click.Context, /, api: Api, output: str, name: str) -> None:
    """Keep a value as the secret NAME: a new secret, or its next version (the next runs of
    the jobs naming it use it; nothing else changes). The value is read from standard
    input when it is not a terminal (one line ending is dropped), else typed twice at a
    hidden prompt; it is never an argument, and never shown."""
    _refuse_more(ctx)
    value = _value(name)
    answer = api.send("PUT", f"/secrets/{quote(name)}", {"value": value})
    secret: dict[str, Any] = answer.body
    if output == "json":
        click.echo(render.dump_json(secret))
        return
    done = "made" if answer.status == 201 else "changed"
    click.echo(f"{done} secret {secret['name']}, version {secret['version']}")


def _value(name: str) -> str:
    """The value: standard input's whole text, or typed twice at a hidden prompt."""
    stdin = sys.stdin
    if stdin is not None and not stdin.isatty():
        text = stdin.read()
        value = text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
        if not value:
            raise Failure("no value: standard input was empty (nothing was sent)", USAGE)
        return value
    try:
        value = getpass.getpass(f"value of secret {name} (hidden): ")
        again = getpass.getpass("again, to confirm: ")
    except EOFError:
        raise click.exceptions.Abort() from None
    if value != again:
        raise Failure("the two values differ (nothing was sent)", USAGE)
    if not value:
        raise Failure("no value given (nothing was sent)", USAGE)
    return value


@secrets.command("list")
@output_option
@api_options
def list_secrets(api: Api, output: str) -> None:
    """List your secrets: name, version, when each last changed (never their values)."""
    answer = api.call("GET", "/secrets")
    emit(output, answer, lambda: render.secrets_table(answer.get("secrets") or []))


@secrets.command("delete")
@click.argument("name")
@output_option
@api_options
def delete_secret(api: Api, output: str, name: str) -> None:
    """Delete the secret NAME and its value. Refused while jobs name it: they are listed,
    to change first."""
    try:
        api.call("DELETE", f"/secrets/{quote(name)}")
    except ApiError as error:
        jobs = _jobs_of(error)
        if not jobs:
            raise
        lines = [error.format_message(), f"the jobs naming {name}:"]
        lines += [f"  {job_id}" for job_id in jobs]
        raise Failure("\n".join(lines), API_ERROR) from None
    if output == "json":
        click.echo(render.dump_json({"name": name, "deleted": True}))
    else:
        click.echo(f"deleted secret {name}")


def _jobs_of(error: ApiError) -> list[str]:
    """The ids of the jobs a 409 names (``error.jobs``)."""
    if error.status != 409 or not isinstance(error.body, dict):
        return []
    detail = error.body.get("error")
    jobs = detail.get("jobs") if isinstance(detail, dict) else None
    return [str(j) for j in jobs] if isinstance(jobs, list) else []
