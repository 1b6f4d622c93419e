"""``chronoq invoke``: one function's handler with one event, on the embedded AWS."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

import click

from chronoq import console
from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.errors import API_ERROR

#: The functions ``invoke`` runs without the embedded AWS: they use none of chronoq's
#: resources (chronoq local does not deploy them: it serves the console itself).
_ON_THEIR_OWN = {console.FUNCTION.name: console.FUNCTION}


@click.command()
@click.argument("function", type=click.Choice([f.name for f in (*r.FUNCTIONS, console.FUNCTION)]))
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
    Prints the handler's answer, alone, on stdout (what the function logs goes to stderr);
    exits 1 if the handler raised (its error printed on stderr)."""
    from chronoq.local.aws import LocalAWS, function_name
    from chronoq.local.lambdas import FunctionError

    try:
        document = json.load(event)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="EVENT") from None
    failed: FunctionError | None = None
    alone = _ON_THEIR_OWN.get(function)
    if alone is not None:
        with _stdout_to_stderr():
            try:
                answer = _invoke_alone(alone, document)
            except FunctionError as error:
                failed = error
        if failed is not None:
            click.echo(render.dump_json(failed.payload), err=True)
            raise click.exceptions.Exit(API_ERROR)
        click.echo(render.dump_json(answer))
        return
    with _stdout_to_stderr():  # (a Lambda function logs on its stdout)
        aws = LocalAWS(task_modules=task_modules).start()
        try:
            assert aws.runtime is not None
            answer = aws.runtime.invoke(
                function_name(next(f for f in r.FUNCTIONS if f.name == function)), document
            )
        except FunctionError as error:
            failed = error
        finally:
            aws.stop()
    if failed is not None:
        click.echo(render.dump_json(failed.payload), err=True)
        raise click.exceptions.Exit(API_ERROR)
    click.echo(render.dump_json(answer))


def _invoke_alone(function: r.Function, event: Any) -> Any:
    """``function``'s handler, loaded from its folder and called with ``event`` and a Lambda
    context, as Lambda calls it; FunctionError (Lambda's error payload) if it raises."""
    from chronoq.local.aws import ACCOUNT, REGION, function_name
    from chronoq.local.lambdas import FunctionError, LambdaContext, _import

    module_name, handler_name = function.handler.rsplit(".", 1)
    module = _import(f"chronoq_invoke_{function.name}_{module_name}", function.handler_file)
    name = function_name(function)
    context = LambdaContext(
        function_name=name,
        memory_limit_in_mb=function.memory_mb,
        timeout_seconds=function.timeout_seconds,
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
    )
    try:
        return getattr(module, handler_name)(event, context)
    except Exception as error:
        raise FunctionError(
            {"errorMessage": str(error), "errorType": type(error).__name__}
        ) from error


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Whatever is written to stdout meanwhile goes to stderr: through ``sys.stdout``, and
    (when stdout is a file descriptor) through the descriptor itself, which handlers that
    kept the stream they were given still write to."""
    sys.stdout.flush()
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # (not a file: a test's capture)
        out = err = -1
    saved = os.dup(out) if out >= 0 else -1
    if saved >= 0:
        os.dup2(err, out)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved >= 0:
            os.dup2(saved, out)
            os.close(saved)
