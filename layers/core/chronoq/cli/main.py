"""The ``chronoq`` command: a client for everything the API does (jobs, runs, schedules,
login), and chronoq local with its tools (``local``, ``token``, ``cost``).

Exit codes: see chronoq.cli.errors (0 ok, 1 API error, 2 usage, 3 not found, 4 run did not
succeed with ``--exit-status``).

Why this module is long: it holds the top-level command and chronoq local's own commands
(``local`` and its many options, ``token``, ``cost``, backup, restore, the admin group); every
other group of commands has its own module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import tarfile
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

from chronoq import resources as r
from chronoq.cli import config, render
from chronoq.cli.apply import apply, diff
from chronoq.cli.backfills import backfills
from chronoq.cli.calendars import calendars
from chronoq.cli.client import Api
from chronoq.cli.common import api_options
from chronoq.cli.errors import USAGE
from chronoq.cli.invoke import invoke
from chronoq.cli.jobs import jobs
from chronoq.cli.login import login, logout
from chronoq.cli.migrate import migrate
from chronoq.cli.runs import runs
from chronoq.cli.secrets import secrets
from chronoq.domain import limits as lim
from chronoq.domain.limits import SETTINGS as limit_settings
from chronoq.domain.limits import Limits


def _version() -> str:
    try:
        return version("chronoq")
    except PackageNotFoundError:
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    _version(), "--version", "-V", prog_name="chronoq", message="%(prog)s %(version)s"
)
def cli() -> None:
    """chronoq: a serverless job scheduler.

    Talks to the API at --url / $CHRONOQ_URL / the profile chronoq login saved (default:
    chronoq local at http://127.0.0.1:8080). Exit codes: 0 ok, 1 API error, 2 usage error,
    3 not found, 4 a followed run did not succeed (--exit-status), 5 diff: apply would change
    something.
    """


cli.add_command(jobs)
cli.add_command(runs)
cli.add_command(login)
cli.add_command(logout)
cli.add_command(invoke)
cli.add_command(backfills)
cli.add_command(apply)
cli.add_command(diff)
cli.add_command(migrate)
cli.add_command(secrets)
cli.add_command(calendars)


# --- chronoq local and its tools ---------------------------------------------------------------


def _topic_statuses(_: click.Context, __: click.Parameter, text: str) -> str:
    from chronoq.domain.notifications import topic_statuses

    try:
        return ",".join(sorted(topic_statuses(text)))
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def owner_limit_options(command: Any) -> Any:
    """``--max-…`` for each limit a deployment sets on its owners (domain.limits.SETTINGS)."""
    for setting in reversed(limit_settings):
        command = click.option(
            "--" + setting.name.replace("_", "-"),
            setting.name,
            type=click.IntRange(min=1),
            default=setting.default,
            show_default=True,
            help=setting.help,
        )(command)
    return command


def _networks(_: click.Context, __: click.Parameter, text: str) -> str:
    from chronoq.domain.network import NetworkPolicy

    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        NetworkPolicy.of(True, names)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    return ",".join(names)


@cli.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@config.data_dir_option()
@click.option("--shards", type=int, default=r.DEFAULT_SHARDS, show_default=True)
@click.option(
    "--dispatch-groups",
    type=click.IntRange(min=1),
    default=r.DEFAULT_DISPATCH_GROUPS,
    show_default=True,
    help="dispatcher invocations per tick, each for its own group of shards, in parallel",
)
@click.option(
    "--tick-seconds",
    type=float,
    default=1.0,
    show_default=True,
    help="how often the dispatcher is invoked (AWS: every 60 s)",
)
@click.option(
    "--archive-window",
    type=click.FloatRange(min=0.0, max=300.0),
    default=r.LOCAL_ARCHIVER_BATCHING_WINDOW_SECONDS,
    show_default=True,
    help="seconds the archiver's batches of ended runs are gathered (AWS:"
    f" {r.ARCHIVER_BATCHING_WINDOW_SECONDS} s)",
)
@click.option(
    "--user", default="local-user", show_default=True, help="user of the token printed at start-up"
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
    default="WARNING",
    show_default=True,
    help="log level of chronoq local and of the functions it runs",
)
@click.option(
    "--task-modules",
    default="",
    help="comma-separated modules holding your own Python tasks (importable from here)",
)
@click.option(
    "--topic-statuses",
    default=",".join(r.DEFAULT_TOPIC_STATUSES),
    show_default=True,
    callback=_topic_statuses,
    help="comma-separated final statuses of the runs published to the SNS topic"
    " (jobs' own webhooks and e-mails follow their notify.on)",
)
@click.option(
    "--block-private-targets",
    is_flag=True,
    help="refuse http targets and webhooks on loopback, private, link-local and metadata"
    " addresses, as the AWS deployment does (off by default locally)",
)
@click.option(
    "--allowed-target-networks",
    default="",
    metavar="CIDRS",
    callback=_networks,
    help="comma-separated networks targets and webhooks may call all the same"
    " (with --block-private-targets)",
)
@click.option(
    "--max-jobs-per-owner",
    type=int,
    default=lim.DEFAULT_MAX_JOBS_PER_OWNER,
    show_default=True,
    help="jobs one owner may have",
)
@owner_limit_options
@click.option(
    "--allow-host-commands",
    is_flag=True,
    help="run container targets' commands as host processes, as this user (anyone holding a"
    " token can then run code here: trusted users only); by default they run in Docker when"
    " a daemon answers, and are refused otherwise",
)
@click.option(
    "--aws-port",
    type=click.IntRange(min=0, max=65535),
    default=4566,
    show_default=True,
    help="port of the embedded AWS, for aws --endpoint-url and boto3 (0: a free one; taken:"
    " a free one, printed at start-up)",
)
@click.option(
    "--no-heartbeat",
    is_flag=True,
    help="do not create the heartbeat job (a job chronoq runs on itself every minute, as the"
    " stack does; see chronoq status)",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "moto"]),
    default="local",
    show_default=True,
    help="where chronoq's own tables, queues and state machines run: local (SQLite and"
    " chronoq's own interpreter, built for one machine) or moto (the embedded AWS itself,"
    " for fidelity runs)",
)
@click.option(
    "--in-memory",
    is_flag=True,
    help="keep no jobs, runs or secrets in --data-dir (only the token secret): each start"
    " is a fresh system",
)
@click.pass_context
def local(
    ctx: click.Context,
    /,
    host: str,
    port: int,
    data_dir: Path,
    shards: int,
    dispatch_groups: int,
    tick_seconds: float,
    archive_window: float,
    user: str,
    log_level: str,
    task_modules: str,
    topic_statuses: str,
    block_private_targets: bool,
    allowed_target_networks: str,
    max_jobs_per_owner: int,
    allow_host_commands: bool,
    aws_port: int,
    no_heartbeat: bool,
    engine: str,
    in_memory: bool,
    **owner_limits: int,
) -> None:
    """Run the whole system locally: chronoq's own tables, queues and state machines on an
    engine built for one machine, the embedded AWS for what targets call. Its state (jobs,
    runs, the time index, queued runs, secrets) is kept in --data-dir: stop it and start it
    again, and it carries on."""
    if ctx.invoked_subcommand is not None:  # (backup, restore: see there)
        return
    from chronoq.local import tokens
    from chronoq.local.aws import ACCOUNT, REGION
    from chronoq.local.backup import BackupError
    from chronoq.local.foreground import freeze_startup_heap
    from chronoq.local.system import LocalSystem

    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", log_level)
    system = LocalSystem(
        task_modules=task_modules,
        host=host,
        port=port,
        data_dir=data_dir,
        shards=shards,
        dispatch_groups=dispatch_groups,
        topic_statuses=topic_statuses,
        tick_seconds=tick_seconds,
        archive_window_seconds=archive_window,
        block_private_targets=block_private_targets,
        allowed_target_networks=allowed_target_networks,
        max_jobs_per_owner=max_jobs_per_owner,
        owner_limits=Limits(**{s.field: owner_limits[s.name] for s in limit_settings}),
        allow_host_commands=allow_host_commands,
        in_memory=in_memory,
        engine=engine,
        aws_port=aws_port,
        heartbeat=not no_heartbeat,
    )
    try:
        system.start()
    except BackupError as refused:
        raise click.ClickException(str(refused)) from None
    freeze_startup_heap()
    if allow_host_commands:
        click.echo(
            "WARNING: --allow-host-commands: container targets run their commands on this"
            " machine as this user; anyone holding a token can run code here",
            err=True,
        )
    # The one who started chronoq local may use its controls (/_local/*) too.
    token = tokens.mint(data_dir, user, admin=True)
    print(f"chronoq local listening on {system.url}", flush=True)
    print(f"admin token for user {user!r} (chronoq token USER mints others):", flush=True)
    print(token, flush=True)
    kept = "kept in memory only (--in-memory)" if in_memory else f"kept in {data_dir.resolve()}"
    if system.restored:
        kept += " (restored from the last start)"
    print(f"data: {kept}", flush=True)
    if system.aws_url is not None:
        credentials = tokens.aws_credentials(data_dir)
        kept_in = (data_dir / tokens.AWS_CREDENTIALS_FILE).resolve()
        print(
            f"aws: {system.aws_url} (region {REGION}, account {ACCOUNT}; signed requests only,"
            f" e.g. aws --endpoint-url {system.aws_url} sqs list-queues)",
            flush=True,
        )
        print(
            f"aws credentials: AWS_ACCESS_KEY_ID={credentials.access_key}"
            f" AWS_SECRET_ACCESS_KEY={credentials.secret_key} (or"
            f" AWS_SHARED_CREDENTIALS_FILE={kept_in} AWS_PROFILE={tokens.AWS_PROFILE})",
            flush=True,
        )
    print("stop: Ctrl-C (or SIGTERM)", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    print("chronoq local stopping...", flush=True)
    system.stop()
    print("chronoq local stopped" + ("" if in_memory else f"; data kept in {data_dir}"), flush=True)
    # Everything is saved and closed: leave at once, rather than spend seconds tearing down
    # the embedded AWS's objects one by one at interpreter exit.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


@local.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@config.data_dir_option()
def local_backup(file: Path, data_dir: Path) -> None:
    """Copy chronoq local's data (its engine's databases and its secrets) into FILE, a tar
    file: online, while it runs, or stopped. FILE holds the secrets: keep it as private as
    the data directory."""
    from chronoq.local.backup import BackupError, backup

    try:
        names = backup(data_dir, file)
    except BackupError as refused:
        raise click.ClickException(str(refused)) from None
    click.echo(f"backed up {', '.join(names)} to {file}")


@local.command("restore")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@config.data_dir_option()
def local_restore(file: Path, data_dir: Path) -> None:
    """Put the backup FILE into --data-dir, chronoq local stopped (the data it replaces is
    kept beside it, in engine.before-restore-<time>); start chronoq local to carry on."""
    from chronoq.local.backup import BackupError, restore

    try:
        names = restore(file, data_dir)
    except (BackupError, tarfile.TarError) as refused:
        raise click.ClickException(str(refused)) from None
    click.echo(f"restored {', '.join(names)} into {data_dir}")


@cli.command()
@click.argument("user")
@config.data_dir_option()
@click.option(
    "--ttl", type=int, default=7 * 24 * 3600, show_default=True, help="seconds the token is valid"
)
@click.option(
    "--admin",
    is_flag=True,
    help="the token may also use chronoq local's controls (/_local/*: ticker, usage)",
)
def token(user: str, data_dir: Path, ttl: int, admin: bool) -> None:
    """Print a token for USER, valid for the chronoq local that keeps its data in --data-dir
    (refused for a directory chronoq local never ran on)."""
    from chronoq.local import tokens

    try:
        click.echo(tokens.mint(data_dir, user, ttl, admin=admin, create=False))
    except tokens.NoSecret:
        raise config.no_local_data(data_dir.resolve()) from None


@cli.command()
@click.option("--reset", is_flag=True, help="start counting again afterwards")
@click.option("--json", "as_json", is_flag=True, help="the usage and its prices as JSON")
@api_options
def cost(api: Api, reset: bool, as_json: bool) -> None:
    """What the workload on chronoq local would cost on AWS, per million runs."""
    from chronoq.local.usage import EVENTBRIDGE_SCHEDULER_PER_MILLION, per_million_runs, price

    usage = api.call("GET", "/_local/usage")
    if reset:
        api.call("POST", "/_local/usage/reset")
    totals, per_run = price(usage), per_million_runs(usage)
    if as_json:
        document = {
            "usage": usage,
            "cost": {k: float(v) for k, v in totals.items()},
            "cost_per_million_runs": {k: float(v) for k, v in per_run.items()},
        }
        click.echo(json.dumps(document, indent=2))
        return
    finished = usage["runs_finished"]
    click.echo(f"runs finished: {finished}")
    if not finished:
        click.echo("no run has finished since the last reset: nothing to price per run")
        return
    sfn, ddb = usage["stepfunctions"], usage["dynamodb"]
    notes = {
        "dynamodb": f"{ddb['write_units']:g} write, {ddb['read_units']:g} read units",
        "stepfunctions": f"standard {sfn['standard']['executions']} executions, "
        f"{sfn['standard']['transitions']} transitions; express {sfn['express']['executions']}",
        "lambda": ", ".join(f"{n} {u['invocations']}" for n, u in usage["lambda"].items())
        + (
            f" (the dispatcher as the stack runs it: once a minute per group of shards, not"
            f" {usage['dispatcher_ticks']['local']} local ticks)"
            if usage.get("dispatcher_ticks", {}).get("local")
            else ""
        )
        + (
            f" (the archiver as the stack runs it: once per"
            f" {r.ARCHIVER_BATCHING_WINDOW_SECONDS} s window, not"
            f" {usage['archive_batches']['local']} local batches)"
            if usage.get("archive_batches", {}).get("local")
            else ""
        ),
        "sqs": f"{usage['sqs']['requests']} requests",
        "s3": "{puts} PUTs (outputs, logs, archive objects), {gets} GETs, {lists} LISTs".format(
            **{"lists": 0, **usage.get("s3", {})}
        ),
        "ssm": "{reads} secret reads, {kms_requests} KMS requests".format(
            reads=usage.get("ssm", {}).get("reads", 0),
            kms_requests=usage.get("ssm", {}).get("kms_requests", 0),
        ),
    }
    click.echo(f"{'':16}{'per million runs':>18}")
    for service, amount in per_run.items():
        if service == "total":
            continue
        dollars = f"${amount:,.2f}"
        click.echo(f"  {service:<14}{dollars:>18}   {notes.get(service, '')}")
    total = f"${per_run['total']:,.2f}"
    click.echo(f"  {'total':<14}{total:>18}")
    click.echo(
        f"EventBridge Scheduler: ${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f} per million invocations"
        " (no history kept)"
    )


@cli.group()
def admin() -> None:
    """What an operator does to a deployment (not what its users do through the API)."""


@admin.command("erase")
@click.argument("owner")
@click.option("--yes", is_flag=True, help="erase without asking to confirm")
@click.option(
    "--function",
    "function_name",
    envvar="CHRONOQ_ERASER_FUNCTION",
    help="on AWS: the eraser function's name (the stack's EraserFunctionName output); it is"
    " invoked with your AWS credentials. Without it: chronoq local, with an admin token",
)
@click.option("--by", default=None, help="who asks, as the erasure's record says (default: you)")
@api_options
def erase(api: Api, owner: str, yes: bool, function_name: str | None, by: str | None) -> None:
    """Erase OWNER's data everywhere: jobs (runs under way cancelled), runs and backfills,
    outputs and logs, secrets, audit entries, and the owner's own items. The erasure is
    recorded in the audit trail, without what it erased. It cannot be undone."""
    if not yes:
        click.confirm(f"erase every piece of {owner!r}'s data? this cannot be undone", abort=True)
    asker = by or os.environ.get("USER") or "operator"
    if function_name:
        import boto3

        answer = boto3.client("lambda").invoke(
            FunctionName=function_name,
            Payload=json.dumps({"owner": owner, "by": asker}).encode(),
        )
        result = json.loads(answer["Payload"].read() or b"{}")
        if answer.get("FunctionError") or "error" in result:
            raise click.ClickException(f"the eraser failed: {result}")
    else:
        result = api.call("POST", "/_local/erase", query={"owner": owner, "by": asker})
    click.echo(render.dump_json(result))


@cli.command()
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("--exit-status", is_flag=True, help="exit 4 unless the heartbeat is ok")
@api_options
def status(api: Api, output: str, exit_status: bool) -> None:
    """How the deployment goes: its heartbeat (a job it runs on itself every minute, through
    the whole path of a run), its last run, last success and start lag; and your limits, with
    how much of each you use."""
    answer = api.call("GET", "/status")
    beat = answer["heartbeat"]
    limits = api.call("GET", "/limits")
    if output == "json":
        click.echo(render.dump_json({**answer, "limits": limits}))
    else:
        click.echo(render.heartbeat(beat))
        click.echo(render.limits(limits))
    if exit_status and beat["state"] != "ok":
        raise click.exceptions.Exit(4)


# --- schedules ---------------------------------------------------------------------------------


@cli.group()
def schedule() -> None:
    """Work with schedules."""


@schedule.command()
@click.option("--cron", help='five-field cron expression, e.g. "30 2 * * 1-5"')
@click.option(
    "--rate", "--every", "rate", help='interval, e.g. "5 minutes", "2 hours", "1 day", 5m'
)
@click.option("--at", help="one instant, ISO 8601 with offset")
@click.option("--json", "as_json", metavar="SCHEDULE", help="a schedule object as in the API")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone of --cron")
@click.option("--start-at")
@click.option("--end-at")
@click.option("--count", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option(
    "--window",
    metavar="DURATION",
    help="the schedule's window (--cron, --rate): each run starts within it, e.g. 60s",
)
@click.option(
    "--job", "job_id", metavar="JOB_ID", help="with a window: that job's start times (offsets)"
)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def preview(
    cron: str | None,
    rate: str | None,
    at: str | None,
    as_json: str | None,
    timezone: str,
    start_at: str | None,
    end_at: str | None,
    count: int,
    window: str | None,
    job_id: str | None,
    output: str,
) -> None:
    """Print the next fire times of a schedule (UTC, then local time; with a window, when
    the job's run starts). Computed here, as POST /schedules/preview does: no token
    needed."""
    from datetime import UTC, datetime

    from pydantic import TypeAdapter, ValidationError

    from chronoq.cli.jobspec import parse_duration, rate_every
    from chronoq.domain import windows
    from chronoq.domain.errors import InvalidRequest
    from chronoq.domain.schedules import Schedule, preview
    from chronoq.http_api import field_path

    given = [
        name
        for name, value in (("--cron", cron), ("--rate", rate), ("--at", at), ("--json", as_json))
        if value
    ]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --cron, --rate, --at, --json")
    document: dict[str, Any]
    if as_json:
        document = json.loads(as_json)
    elif cron:
        document = {"type": "cron", "expression": cron, "timezone": timezone}
    elif rate:
        every = rate.strip()
        if " " not in every:  # 5m, 1h30m: as jobs create --every takes them
            with contextlib.suppress(ValueError):  # if so, the schedule's check says why
                every = rate_every(every)
        document = {"type": "rate", "every": every}
    else:
        document = {"type": "at", "at": at}
    for key, value in (("start_at", start_at), ("end_at", end_at)):
        if value:
            document[key] = value
    if window:
        try:
            document["window_seconds"] = parse_duration(window)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--window") from None
    try:
        parsed = TypeAdapter(Schedule).validate_python(document)
    except ValidationError as error:
        for e in error.errors():
            field = field_path(("schedule", *e["loc"]))  # (as the API names it)
            click.echo(f"{field}: {e['msg'].removeprefix('Value error, ')}", err=True)
        raise click.exceptions.Exit(USAGE) from None
    try:
        now = datetime.now(UTC)
        windows.check(parsed, now)
        fires = windows.preview(parsed, preview(parsed, now, count), job_id)
    except InvalidRequest as error:
        click.echo(f"{error.field}: {error.message}", err=True)
        raise click.exceptions.Exit(USAGE) from None
    if output == "json":
        click.echo(render.dump_json({"fire_times": fires}))
        return
    windowed = windows.window_of(parsed) > 1
    for fire in fires:
        start = fire["starts_at"] or f"within {windows.window_of(parsed)} s (give --job)"
        click.echo(f"{fire['utc']}  {fire['local']}" + (f"  starts {start}" if windowed else ""))


# --- running -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: the process's); the exit code."""
    try:
        code = cli.main(args=argv, prog_name="chronoq", standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.ClickException as error:
        error.show()
        return int(error.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
