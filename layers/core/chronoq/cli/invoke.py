"""``chronoq invoke``: one function's handler with one event, on the embedded AWS."""

from __future__ import annotations

import json
from typing import IO

import click

from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.errors import API_ERROR


@click.command()
@click.argument("function", type=click.Choice([f.name for f in r.FUNCTIONS]))
@click.argument("event", type=click.File("r"))
@click.option(
    "--task-modules",
    default="",
    help="comma-separated modules holding your own Python tasks (importable from here)",
)
def invoke(function: str, event: IO[str], task_modules: str) -> None:
    """Invoke FUNCTION's handler with EVENT, a JSON file (say one from events/; - reads
    stdin), in this process on the embedded AWS: the code CDK deploys, with the environment
    CDK gives it, against chronoq's resources created afresh (no Docker, no AWS account).
    Prints the handler's answer; exits 1 if the handler raised (its error printed)."""
    from chronoq.local.aws import LocalAWS, function_name
    from chronoq.local.lambdas import FunctionError

    try:
        document = json.load(event)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="EVENT") from None
    aws = LocalAWS(task_modules=task_modules).start()
    try:
        assert aws.runtime is not None
        answer = aws.runtime.invoke(
            function_name(next(f for f in r.FUNCTIONS if f.name == function)), document
        )
    except FunctionError as error:
        click.echo(render.dump_json(error.payload), err=True)
        raise click.exceptions.Exit(API_ERROR) from None
    finally:
        aws.stop()
    click.echo(render.dump_json(answer))
