"""Backfills and re-runs on the command line: ``chronoq jobs backfill``, ``chronoq backfills
list|get|cancel``, ``chronoq runs rerun`` and ``chronoq jobs rerun``."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.client import Api, quote
from chronoq.cli.common import api_options, emit, emit_pages, output_option
from chronoq.cli.jobs import jobs
from chronoq.cli.jobspec import parse_duration, parse_instant
from chronoq.cli.parameters import parameters_options, with_parameters
from chronoq.cli.runs import runs

F = TypeVar("F", bound=Callable[..., Any])
_AGO = re.compile(r"^(?:-\s*(?P<minus>.+)|(?P<ago>.+?)\s+ago)$")


def past_instant(text: str, now: datetime | None = None) -> str:
    """An instant of a past range: ISO 8601 (UTC without an offset), ``now``, or a duration
    back from now: ``-3h``, ``2d ago``."""
    value = text.strip()
    now = now or datetime.now(UTC)
    if value.lower() == "now":
        return now.replace(microsecond=0).isoformat()
    back = _AGO.match(value)
    if back:
        seconds = parse_duration(back["minus"] or back["ago"])
        return (now - timedelta(seconds=seconds)).replace(microsecond=0).isoformat()
    return parse_instant(value, "UTC", now)


def _instant(_: click.Context, param: click.Parameter, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return past_instant(text)
    except ValueError as error:
        raise click.BadParameter(str(error), param=param) from None


def range_options(function: F) -> F:
    function = click.option(
        "--to",
        "to",
        required=True,
        metavar="INSTANT",
        callback=_instant,
        help="the range's end, exclusive: ISO 8601, now, or -DURATION (e.g. -1h)",
    )(function)
    return click.option(
        "--from",
        "start",
        required=True,
        metavar="INSTANT",
        callback=_instant,
        help="the range's first instant: ISO 8601, now, or -DURATION (e.g. -3h, '2d ago')",
    )(function)


def key_option(function: F) -> F:
    return click.option(
        "--idempotency-key",
        metavar="KEY",
        help="sent as Idempotency-Key: sent again with the same key, nothing is made twice",
    )(function)


def _headers(key: str | None) -> dict[str, str] | None:
    return {"Idempotency-Key": key} if key else None


# --- backfills ----------------------------------------------------------------------------


@jobs.command("backfill")
@click.argument("job_id")
@range_options
@parameters_options
@key_option
@output_option
@api_options
def backfill_job(
    api: Api,
    output: str,
    job_id: str,
    start: str,
    to: str,
    idempotency_key: str | None,
    parameters: dict[str, Any] | None,
) -> None:
    """Run every fire time of the job's schedule from --from to --to (past), as backfill runs,
    at most 10 at once (1 for concurrency forbid or replace).

    \b
    chronoq jobs backfill JOB --from -1d --to now
    chronoq jobs backfill JOB --from 2026-11-01T00:00 --to 2026-11-02T00:00
    chronoq jobs backfill JOB --from -1d --to now --param env=staging
    """
    backfill = api.call(
        "POST",
        f"/jobs/{quote(job_id)}/backfill",
        with_parameters({"from": start, "to": to}, parameters),
        headers=_headers(idempotency_key),
    )
    emit(output, backfill, lambda: render.backfill_view(backfill))


@click.group()
def backfills() -> None:
    """A job's backfills: list them, follow one, cancel one."""


@backfills.command("list")
@click.argument("job_id")
@click.option(
    "--limit",
    type=click.IntRange(1, r.MAX_PAGE_LIMIT),
    help=f"at most this many per page [API default: {r.DEFAULT_PAGE_LIMIT}]",
)
@click.option("--all", "every", is_flag=True, help="follow next_token to the last page")
@click.option("--next-token", help="the page after the one that gave this token")
@output_option
@api_options
def list_backfills(
    api: Api, output: str, job_id: str, limit: int | None, every: bool, next_token: str | None
) -> None:
    """List a job's backfills, newest first."""
    emit_pages(
        api,
        output,
        (f"/jobs/{quote(job_id)}/backfills", "backfills"),
        (limit, next_token, every),
        render.backfills_table,
    )


@backfills.command("get")
@click.argument("job_id")
@click.argument("backfill_id")
@output_option
@api_options
def get_backfill(api: Api, output: str, job_id: str, backfill_id: str) -> None:
    """Show a backfill and how many of its runs are in each status."""
    backfill = api.call("GET", f"/jobs/{quote(job_id)}/backfills/{quote(backfill_id)}")
    emit(output, backfill, lambda: render.backfill_view(backfill))


@backfills.command("cancel")
@click.argument("job_id")
@click.argument("backfill_id")
@output_option
@api_options
def cancel_backfill(api: Api, output: str, job_id: str, backfill_id: str) -> None:
    """Cancel a backfill: no further run, and its runs that have not ended cancelled."""
    path = f"/jobs/{quote(job_id)}/backfills/{quote(backfill_id)}/cancel"
    backfill = api.call("POST", path)
    emit(output, backfill, lambda: render.backfill_view(backfill))


# --- re-runs ------------------------------------------------------------------------------


@runs.command("rerun")
@click.argument("run_id")
@parameters_options
@key_option
@output_option
@api_options
def rerun_run(
    api: Api,
    output: str,
    run_id: str,
    idempotency_key: str | None,
    parameters: dict[str, Any] | None,
) -> None:
    """Run again a run that ended: a new run of the same job and fire time (its parameters,
    overlaid by any given); prints it."""
    body = with_parameters({}, parameters) or None
    run = api.call("POST", f"/runs/{quote(run_id)}/rerun", body, headers=_headers(idempotency_key))
    emit(output, run, lambda: render.run_view(run))


@jobs.command("rerun")
@click.argument("job_id")
@range_options
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUSES",
    help="the final statuses to re-run, e.g. FAILED,TIMED_OUT [default: FAILED,TIMED_OUT]",
)
@parameters_options
@key_option
@output_option
@api_options
def rerun_job(
    api: Api,
    output: str,
    job_id: str,
    start: str,
    to: str,
    statuses: tuple[str, ...],
    idempotency_key: str | None,
    parameters: dict[str, Any] | None,
) -> None:
    """Run again every run of the job scheduled from --from to --to that ended so (at most
    100); prints the new runs.

    \b
    chronoq jobs rerun JOB --from -1d --to now --status FAILED,TIMED_OUT
    """
    body: dict[str, Any] = {"from": start, "to": to}
    chosen = [s.strip().upper() for v in statuses for s in v.split(",") if s.strip()]
    if chosen:
        body["statuses"] = chosen
    answer = api.call(
        "POST",
        f"/jobs/{quote(job_id)}/rerun",
        with_parameters(body, parameters),
        headers=_headers(idempotency_key),
    )
    emit(output, answer, lambda: render.runs_table(answer.get("runs", [])))
