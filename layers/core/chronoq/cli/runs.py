"""``chronoq runs``: a job's runs, one run's detail, output and logs; following a run and
watching a job's runs as they happen (both by polling)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import click

from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.client import Api, quote
from chronoq.cli.common import api_options, emit, emit_pages, output_option
from chronoq.cli.errors import RUN_NOT_SUCCEEDED
from chronoq.cli.export import export

#: The statuses a run ends in (as chronoq.domain.runs has them).
FINAL = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"})


@click.group()
def runs() -> None:
    """A job's runs, their output and logs; the runs of a range, exported."""


runs.add_command(export)


@runs.command("list")
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
def list_runs(
    api: Api, output: str, job_id: str, limit: int | None, every: bool, next_token: str | None
) -> None:
    """List a job's runs, newest first."""
    emit_pages(
        api,
        output,
        (f"/jobs/{quote(job_id)}/runs", "runs"),
        (limit, next_token, every),
        render.runs_table,
    )


@runs.command()
@click.argument("run_id")
@output_option
@api_options
def get(api: Api, output: str, run_id: str) -> None:
    """Show a run and its attempts."""
    run = api.call("GET", f"/runs/{quote(run_id)}")

    def view() -> Any:
        from rich.console import Group

        return (
            Group(render.run_view(run), "", render.attempts_table(run))
            if run.get("attempts")
            else render.run_view(run)
        )

    emit(output, run, view)


@runs.command("output")
@click.argument("run_id")
@api_options
def output_command(api: Api, run_id: str) -> None:
    """Print a run's output (the JSON its target returned), as it is."""
    text = api.call("GET", f"/runs/{quote(run_id)}/output", raw=True)
    click.echo(text)


@runs.command()
@click.argument("run_id")
@api_options
def cancel(api: Api, run_id: str) -> None:
    """Cancel a run that has not ended."""
    run = api.call("POST", f"/runs/{quote(run_id)}/cancel")
    render.show(render.run_view(run))


@runs.command()
@click.argument("run_id")
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="keep printing new lines (and status changes, on stderr) until the run ends",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=1.0,
    show_default=True,
    help="seconds between polls with --follow",
)
@click.option(
    "--exit-status",
    is_flag=True,
    help=f"with --follow: exit {RUN_NOT_SUCCEEDED} unless the run SUCCEEDED",
)
@api_options
def logs(api: Api, run_id: str, follow: bool, interval: float, exit_status: bool) -> None:
    """Print a run's log lines, attempt by attempt."""
    path = f"/runs/{quote(run_id)}"
    printed: Counter[str] = Counter()

    def new_lines() -> None:
        lines = api.call("GET", f"{path}/logs").get("lines", [])
        running: Counter[str] = Counter()
        for line in lines:  # each line once, however often it is read again
            running[line] += 1
            if running[line] > printed[line]:
                printed[line] += 1
                click.echo(line)

    if not follow:
        new_lines()
        return
    status = follow_run(api, run_id, interval, on_poll=new_lines)
    if exit_status and status != "SUCCEEDED":
        raise click.exceptions.Exit(RUN_NOT_SUCCEEDED)


def follow_run(
    api: Api,
    run_id: str,
    interval: float,
    on_poll: Callable[[], None],
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Poll the run until it ends, calling ``on_poll`` each time (once more after the end, for
    the last lines) and reporting each status change on stderr; its final status."""
    status = None
    while True:
        run = api.call("GET", f"/runs/{quote(run_id)}")
        on_poll()
        if run["status"] != status:
            status = run["status"]
            click.echo(f"-- {run_id} {status}{_ending(run)}", err=True)
        if status in FINAL:
            on_poll()
            return str(status)
        sleep(interval)


def _ending(run: dict[str, Any]) -> str:
    parts = [f"{k} {v}" for k, v in (("lag", render.lag(run)), ("took", render.duration(run))) if v]
    if run.get("error") or run.get("reason"):
        parts.append(str(run.get("error") or run.get("reason")))
    return f" ({'; '.join(parts)})" if parts else ""


@runs.command()
@click.argument("job_id")
@click.option("--count", type=click.IntRange(1), help="stop once this many new runs have ended")
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=1.0,
    show_default=True,
    help="seconds between polls",
)
@output_option
@api_options
def watch(api: Api, output: str, job_id: str, count: int | None, interval: float) -> None:
    """Print a job's runs as they happen: each new run and each change of status, until
    Ctrl-C (or --count runs have ended). With -o json: one JSON run per line."""
    path = f"/jobs/{quote(job_id)}/runs"
    seen = {r["id"]: r["status"] for r in api.call("GET", path, query={"limit": 100})["runs"]}
    ended = 0
    if output == "table":
        click.echo(f"watching {job_id} (Ctrl-C to stop)", err=True)
    try:
        while count is None or ended < count:
            time.sleep(interval)
            for run in reversed(api.call("GET", path, query={"limit": 20})["runs"]):
                before = seen.get(run["id"])
                if run["status"] == before:
                    continue
                seen[run["id"]] = run["status"]
                if output == "json":
                    click.echo(json.dumps(run))
                else:
                    at = render.short_time(run.get("scheduled_at"))
                    click.echo(f"{at}  {run['id']}  {run['status']}{_ending(run)}")
                if run["status"] in FINAL and before not in FINAL:
                    ended += 1
    except KeyboardInterrupt:
        return
