"""``chronoq jobs``: create, list, read, change, pause, resume, trigger and delete jobs, and read
a job's audit trail.

Why this module is long: ``chronoq jobs`` has one command per job operation, sharing the dozen
job flags that build a job document from the command line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from chronoq import resources as r
from chronoq.cli import render
from chronoq.cli.client import Api, quote
from chronoq.cli.common import (
    api_options,
    credential_findings,
    emit,
    emit_pages,
    output_option,
    warn_credentials,
)
from chronoq.cli.errors import NOT_FOUND, Failure
from chronoq.cli.jobspec import BadInput, JobFlags, build, load
from chronoq.cli.parameters import parameters_options, with_parameters
from chronoq.domain import limits as lim

F = TypeVar("F", bound=Callable[..., Any])

#: (flag, JobFlags field, help); ``multiple`` for the repeatable ones.
_JOB_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--name",), {"help": "the job's name"}),
    (("--cron",), {"metavar": "EXPR", "help": "five-field cron expression, e.g. '0 2 * * *'"}),
    (("--every",), {"metavar": "DURATION", "help": "fixed rate, e.g. 5m, 1h, 1d, 90m"}),
    (
        ("--at",),
        {
            "metavar": "INSTANT",
            "help": "once: ISO 8601 (no offset: in --timezone), or +30s / 'in 5m'",
        },
    ),
    (
        ("--timezone",),
        {"metavar": "ZONE", "help": "IANA time zone of --cron (and of --at without offset)"},
    ),
    (
        ("--start-at",),
        {"metavar": "INSTANT", "help": "a recurring schedule's first possible fire time"},
    ),
    (
        ("--end-at",),
        {"metavar": "INSTANT", "help": "a recurring schedule's last possible fire time"},
    ),
    (
        ("--after",),
        {
            "multiple": True,
            "metavar": "JOB",
            "help": "run after this job (a name or id; repeatable: after all of them, once per"
            " instant they all end as --after-on says)",
        },
    ),
    (
        ("--after-on",),
        {
            "type": click.Choice(["SUCCEEDED", "FAILED", "ENDED"], case_sensitive=False),
            "help": "--after: which ends count [default: SUCCEEDED]",
        },
    ),
    (
        ("--after-within",),
        {
            "metavar": "DURATION",
            "help": "--after: how long an instant waits for the rest of its upstreams"
            " [default: 1d]",
        },
    ),
    (("--http",), {"metavar": "URL", "help": "target: call this URL"}),
    (
        ("--method",),
        {
            "type": click.Choice(["GET", "POST", "PUT", "PATCH", "DELETE"], case_sensitive=False),
            "help": "--http's method [default: POST]",
        },
    ),
    (
        ("--header", "headers"),
        {"multiple": True, "metavar": "NAME:VALUE", "help": "--http header (repeatable)"},
    ),
    (("--body",), {"help": "--http body: JSON, or text"}),
    (("--task",), {"metavar": "MODULE:FUNCTION", "help": "target: a registered Python task"}),
    (("--args",), {"metavar": "JSON", "help": "--task's arguments, a JSON object"}),
    (("--priority",), {"type": click.Choice(["high", "normal", "low"], case_sensitive=False)}),
    (
        ("--timeout",),
        {
            "metavar": "DURATION",
            "help": "execution timeout, e.g. 30s, 5m [default:"
            f" {lim.DEFAULT_TIMEOUT_SECONDS} s; {lim.DEFAULT_CONTAINER_TIMEOUT_SECONDS} s for"
            " container targets]",
        },
    ),
    (
        ("--start-deadline",),
        {"metavar": "DURATION", "help": "a run not started this long after its time is MISSED"},
    ),
    (
        ("--concurrency",),
        {
            "type": click.Choice(["allow", "forbid", "replace"], case_sensitive=False),
            "help": "when a run is due while another is active",
        },
    ),
    (
        ("--max-attempts",),
        {"type": click.IntRange(1, 20), "help": "attempts in all, retries included"},
    ),
    (("--retry-interval",), {"metavar": "DURATION", "help": "wait after the first failed attempt"}),
    (("--notify-webhook",), {"metavar": "URL", "help": "POST the run's end here"}),
    (("--notify-email",), {"metavar": "ADDRESS", "help": "e-mail the run's end here"}),
    (
        ("--notify-on",),
        {
            "multiple": True,
            "metavar": "STATUSES",
            "help": "final statuses to notify, e.g. FAILED,TIMED_OUT",
        },
    ),
    (
        ("--output-location",),
        {"metavar": "S3_URL", "help": "s3://bucket/prefix for large outputs and logs"},
    ),
    # --- run features: time window, flow control ---
    (
        ("--window",),
        {
            "metavar": "DURATION",
            "help": "start each run somewhere in this long after its fire time, e.g. 60s, 10m"
            " (--cron or --every)",
        },
    ),
    (("--flow",), {"metavar": "KEY", "help": "flow key: your jobs with the same one share limits"}),
    (
        ("--flow-max-running",),
        {"type": click.IntRange(1, lim.MAX_FLOW_RUNNING), "help": "--flow: runs under way at once"},
    ),
    (
        ("--flow-max-rate",),
        {
            "type": click.IntRange(1, lim.MAX_FLOW_STARTS_PER_SECOND),
            "help": "--flow: runs starting in any one second",
        },
    ),
    # --- business calendars
    (
        ("--calendar",),
        {
            "metavar": "NAME",
            "help": "one of your business calendars: no run on its excluded dates (--cron or"
            " --every)",
        },
    ),
    (
        ("--on-excluded",),
        {
            "type": click.Choice(["skip", "next_business_day", "previous_business_day"]),
            "help": "--calendar: what a fire time on an excluded date becomes (default skip)",
        },
    ),
    # --- limited runs and labels
    (
        ("--max-runs",),
        {
            "type": click.IntRange(1, lim.MAX_RUNS),
            "help": "end the job COMPLETED after this many scheduled runs",
        },
    ),
    (
        ("--on-complete",),
        {
            "type": click.Choice(["keep", "delete"], case_sensitive=False),
            "help": "once COMPLETED, keep the job, or delete it after its last run [default: keep]",
        },
    ),
    (
        ("--label", "labels"),
        {
            "multiple": True,
            "metavar": "KEY=VALUE",
            "help": "a label (repeatable; on update, the labels given replace the job's)",
        },
    ),
    # --- silence
    (
        ("--expect-within",),
        {
            "metavar": "DURATION",
            "help": "a run must succeed at least this often, e.g. 26h: if none does, the job is"
            " silent and you are told (expect.success_within_seconds)",
        },
    ),
]


def job_options(function: F) -> F:
    for declaration, attributes in reversed(_JOB_OPTIONS):
        function = click.option(*declaration, **attributes)(function)
    return click.option(
        "-f",
        "--file",
        "file",
        metavar="PATH",
        help="the job as JSON or YAML ('-': standard input); flags given change it",
    )(function)


def _document(file: str | None, flags: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] | None = None
    try:
        if file is not None:
            base = load(file, sys.stdin.read() if file == "-" else None)
        return build(JobFlags(**flags), base)
    except BadInput as error:
        raise click.UsageError(str(error)) from None
    except OSError as error:
        raise click.UsageError(f"--file: {error}") from None


@click.group()
def jobs() -> None:
    """Create, list, read, change and delete jobs."""


@jobs.command()
@job_options
@output_option
@api_options
def create(api: Api, output: str, file: str | None, **flags: Any) -> None:
    """Create a job, from flags or a file (-f).

    \b
    chronoq jobs create --name nightly --cron '0 2 * * *' --timezone Europe/Berlin \\
        --http https://example.com/hook
    chronoq jobs create --name hello --at +30s --task chronoq.tasks:echo --args '{"n": 1}'
    chronoq jobs create -f job.yaml
    """
    document = _document(file, flags)
    missing = [k for k in ("name", "schedule", "target") if k not in document]
    if missing:
        hints = {
            "name": "--name",
            "schedule": "--cron, --every or --at",
            "target": "--http or --task",
        }
        raise click.UsageError("a job needs " + "; ".join(f"{m} ({hints[m]})" for m in missing))
    answer = api.send("POST", "/jobs", document)
    job = answer.body
    warn_credentials("", credential_findings(answer))
    emit(output, job, lambda: render.job_view(job, _now()))


@jobs.command("list")
@click.option(
    "--limit",
    type=click.IntRange(1, r.MAX_PAGE_LIMIT),
    help=f"at most this many per page [API default: {r.DEFAULT_PAGE_LIMIT}]",
)
@click.option("--all", "every", is_flag=True, help="follow next_token to the last page")
@click.option("--next-token", help="the page after the one that gave this token")
@click.option(
    "-l",
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="only the jobs with this label (repeatable: with every one of them)",
)
@click.option(
    "--silent",
    is_flag=True,
    help="only the silent jobs (no run succeeded within their expect), longest silent first",
)
@output_option
@api_options
def list_jobs(
    api: Api,
    output: str,
    limit: int | None,
    every: bool,
    next_token: str | None,
    labels: tuple[str, ...],
    silent: bool,
) -> None:
    """List your jobs: state, schedule in words, next run (and labels, if they have any; the
    last success and silence of those with expect)."""
    filters: dict[str, Any] = {"label": list(labels)} if labels else {}
    if silent:
        filters["silent"] = "true"
    emit_pages(
        api,
        output,
        ("/jobs", "jobs"),
        (limit, next_token, every),
        lambda items: render.jobs_table(items, _now()),
        filters or None,
    )


@jobs.command()
@click.argument("job_id")
@output_option
@api_options
def get(api: Api, output: str, job_id: str) -> None:
    """Show a job."""
    job = api.call("GET", f"/jobs/{quote(job_id)}")
    emit(output, job, lambda: render.job_view(job, _now()))


@jobs.command()
@click.argument("job_id")
@job_options
@click.option(
    "--version",
    "expected_version",
    type=int,
    help="refuse (409) if the job is no longer at this version",
)
@output_option
@api_options
def update(
    api: Api, output: str, job_id: str, file: str | None, expected_version: int | None, **flags: Any
) -> None:
    """Change a job: only what is given (flags, or fields of -f) changes."""
    document = _document(file, flags)
    if expected_version is not None:
        document["version"] = expected_version
    if not document:
        raise click.UsageError("nothing to change: give flags or -f")
    answer = api.send("PATCH", f"/jobs/{quote(job_id)}", document)
    job = answer.body
    warn_credentials("", credential_findings(answer))
    emit(output, job, lambda: render.job_view(job, _now()))


@jobs.command()
@click.argument("job_ids", nargs=-1, required=True, metavar="JOB_ID...")
@output_option
@api_options
def delete(api: Api, output: str, job_ids: tuple[str, ...]) -> None:
    """Delete jobs: no further run of theirs starts (one already running finishes). Their
    runs stay readable until they expire (90 days): chronoq runs get RUN, or
    GET /runs?job_id=JOB_ID."""
    for job_id in job_ids:
        api.call("DELETE", f"/jobs/{quote(job_id)}")
        if output == "json":
            click.echo(render.dump_json({"id": job_id, "deleted": True}))
        else:
            click.echo(f"deleted {job_id}")


def _action(name: str, summary: str) -> None:
    @jobs.command(name, help=summary)
    @click.argument("job_id", required=False)
    @click.option(
        "-l",
        "--label",
        "labels",
        multiple=True,
        metavar="KEY=VALUE",
        help=f"instead of JOB_ID: {name} every one of your jobs with this label (repeatable:"
        " with every one of them), page after page",
    )
    @click.option(
        "--limit",
        type=click.IntRange(1, r.MAX_PAGE_LIMIT),
        help=f"with -l: jobs per request [API default: {r.DEFAULT_PAGE_LIMIT}]",
    )
    @output_option
    @api_options
    def command(
        api: Api, output: str, job_id: str | None, labels: tuple[str, ...], limit: int | None
    ) -> None:
        if (job_id is None) == (not labels):
            raise click.UsageError(f"give a JOB_ID, or -l KEY=VALUE to {name} jobs by label")
        if labels:
            _by_label(api, output, name, labels, limit)
            return
        job = api.call("POST", f"/jobs/{quote(job_id or '')}/{name}")
        emit(output, job, lambda: render.job_view(job, _now()))


# --- many jobs at once: pause and resume by label --------------------------------------------


def _by_label(
    api: Api, output: str, action: str, labels: tuple[str, ...], limit: int | None
) -> None:
    """``POST /jobs/{action}?label=…`` page after page (each request acts on one page, and
    its next_token goes on), each job acted on and each skipped printed as its page comes."""
    done = f"{action}d"  # (paused, resumed)
    found: dict[str, list[dict[str, Any]]] = {done: [], "skipped": []}
    token: str | None = None
    while True:
        query = {"label": list(labels), "limit": limit, "next_token": token}
        page = api.call("POST", f"/jobs/{action}", query=query)
        for key in (done, "skipped"):
            items = list(page.get(key, []))
            found[key] += items
            if output == "table":
                for job in items:
                    why = f"  {job['reason']}: {job['message']}" if key == "skipped" else ""
                    click.echo(f"{key:<8} {job['id']}  {job['name']}{why}")
        token = page.get("next_token")
        if not token:
            break
    if output == "json":
        click.echo(render.dump_json(found))
    else:
        click.echo(f"{len(found[done])} {done}, {len(found['skipped'])} skipped", err=True)


_action(
    "pause",
    "Pause a job (or, with -l, every job with those labels): no scheduled run starts until"
    " it is resumed.",
)
_action(
    "resume",
    "Resume a paused job (or, with -l, every paused job with those labels) from its next fire"
    " time.",
)


@jobs.command()
@click.argument("job_id")
@parameters_options
@output_option
@api_options
def trigger(api: Api, output: str, job_id: str, parameters: dict[str, Any] | None) -> None:
    """Run a job now (besides its schedule); prints the run.

    \b
    chronoq jobs trigger JOB --param day=2026-11-01
    chronoq jobs trigger JOB --params '{"day": "2026-11-01", "limit": 10}'
    """
    body = with_parameters({}, parameters) or None
    run = api.call("POST", f"/jobs/{quote(job_id)}/trigger", body)
    emit(output, run, lambda: render.run_view(run))


#: What a job's id looks like (anything else names a job by its name).
JOB_ID = re.compile(r"job_[0-9a-f]{16}")


def job_id_of(api: Api, given: str) -> str:
    """The id of the job ``given`` names: its id, or its name among the caller's jobs."""
    if JOB_ID.fullmatch(given):
        return given
    for page, _ in api.pages("/jobs", "jobs", r.MAX_PAGE_LIMIT, None, True):
        for job in page:
            if job.get("name") == given:
                return str(job["id"])
    raise Failure(f"no job named {given!r} (a deleted job's trail is read by its id)", NOT_FOUND)


@jobs.command("audit")
@click.argument("job", metavar="NAME_OR_ID")
@click.option(
    "--limit",
    type=click.IntRange(1, r.MAX_PAGE_LIMIT),
    help=f"at most this many per page [API default: {r.DEFAULT_PAGE_LIMIT}]",
)
@click.option("--all", "every", is_flag=True, help="follow next_token to the last page")
@click.option("--next-token", help="the page after the one that gave this token")
@click.option("--json", "as_json", is_flag=True, help="the API's JSON (as -o json)")
@output_option
@api_options
def audit(
    api: Api,
    output: str,
    job: str,
    limit: int | None,
    every: bool,
    next_token: str | None,
    as_json: bool,
) -> None:
    """A job's audit trail, newest first: every change made to it, who made it, when, from
    what (api, cli, console, apply) and what it changed. A deleted job's trail is read by
    its id (until it expires, as its runs do).

    \b
    chronoq jobs audit nightly
    chronoq jobs audit job_0123456789abcdef --all --json
    """
    path = f"/jobs/{quote(job_id_of(api, job))}/audit"
    emit_pages(
        api,
        "json" if as_json else output,
        (path, "entries"),
        (limit, next_token, every),
        render.audit_table,
    )


def _now() -> datetime:
    return datetime.now(UTC)
