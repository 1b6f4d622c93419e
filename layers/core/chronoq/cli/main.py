"""The ``chronoq`` command: run the local system, mint local tokens, preview schedules,
read a run's logs."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from chronoq import resources as r


def _local(args: argparse.Namespace) -> int:
    from chronoq.local import tokens
    from chronoq.local.system import LocalSystem

    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", args.log_level)
    system = LocalSystem(
        task_modules=args.task_modules or "",
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        shards=args.shards,
        topic_statuses=args.topic_statuses,
        tick_seconds=args.tick_seconds,
        block_private_targets=args.block_private_targets,
        allowed_target_networks=args.allowed_target_networks,
        max_jobs_per_owner=args.max_jobs_per_owner,
    ).start()
    token = tokens.mint(args.data_dir, args.user)
    print(f"chronoq local listening on {system.url}", flush=True)
    print(f"token for user {args.user!r} (chronoq token USER mints others):", flush=True)
    print(token, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    system.stop()
    return 0


def _token(args: argparse.Namespace) -> int:
    from chronoq.local import tokens

    print(tokens.mint(args.data_dir, args.user, args.ttl))
    return 0


def _preview(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from pydantic import TypeAdapter, ValidationError

    from chronoq.domain.errors import InvalidRequest
    from chronoq.domain.schedules import Schedule, preview

    if args.json:
        document = json.loads(args.json)
    elif args.cron:
        document = {"type": "cron", "expression": args.cron, "timezone": args.timezone}
    elif args.rate:
        document = {"type": "rate", "every": args.rate}
    else:
        document = {"type": "at", "at": args.at}
    for key in ("start_at", "end_at"):
        if getattr(args, key):
            document[key] = getattr(args, key)
    try:
        schedule = TypeAdapter(Schedule).validate_python(document)
    except ValidationError as error:
        for e in error.errors():
            field = ".".join(str(p) for p in ("schedule", *e["loc"]))
            print(f"{field}: {e['msg']}", file=sys.stderr)
        return 2
    try:
        fires = preview(schedule, datetime.now(UTC), args.count)
    except InvalidRequest as error:
        print(f"{error.field}: {error.message}", file=sys.stderr)
        return 2
    for fire in fires:
        print(f"{fire['utc']}  {fire['local']}")
    return 0


def _call(args: argparse.Namespace, method: str, path: str) -> tuple[Any, int]:
    """``method path`` on the API with the token: (the JSON answer, 0), or (None, exit code)
    after printing why not."""
    import urllib.error
    import urllib.request

    if not args.token:
        print("a token is needed: --token or CHRONOQ_TOKEN", file=sys.stderr)
        return None, 2
    if not args.api.startswith(("http://", "https://")):
        print(f"--api must be an http(s) URL, not {args.api}", file=sys.stderr)
        return None, 2
    request = urllib.request.Request(  # noqa: S310 - checked to be http(s) above
        f"{args.api.rstrip('/')}{path}",
        method=method,
        headers={"Authorization": f"Bearer {args.token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http(s) API
            return json.load(answer), 0
    except urllib.error.HTTPError as error:
        try:
            document = json.load(error)
            problem = document.get("error") or document  # (API Gateway's own 401: message)
            message = problem.get("message", error.reason)
        except ValueError:
            message = error.reason
        print(f"HTTP {error.code}: {message}", file=sys.stderr)
        return None, 1
    except urllib.error.URLError as error:
        print(f"cannot reach {args.api}: {error.reason}", file=sys.stderr)
        return None, 1


def _logs(args: argparse.Namespace) -> int:
    import urllib.parse

    path = f"/runs/{urllib.parse.quote(args.run_id, safe='')}/logs"
    document, status = _call(args, "GET", path)
    if document is None:
        return status
    for line in document["lines"]:
        print(line)
    return 0


def _cost(args: argparse.Namespace) -> int:
    from chronoq.local.usage import EVENTBRIDGE_SCHEDULER_PER_MILLION, per_million_runs, price

    usage, status = _call(args, "GET", "/_local/usage")
    if usage is None:
        return status
    if args.reset:
        _call(args, "POST", "/_local/usage/reset")
    totals, per_run = price(usage), per_million_runs(usage)
    if args.json:
        print(
            json.dumps(
                {
                    "usage": usage,
                    "cost": {k: float(v) for k, v in totals.items()},
                    "cost_per_million_runs": {k: float(v) for k, v in per_run.items()},
                },
                indent=2,
            )
        )
        return 0
    runs = usage["runs_finished"]
    print(f"runs finished: {runs}")
    if not runs:
        print("no run has finished since the last reset: nothing to price per run")
        return 0
    sfn, ddb = usage["stepfunctions"], usage["dynamodb"]
    notes = {
        "dynamodb": f"{ddb['write_units']:g} write, {ddb['read_units']:g} read units",
        "stepfunctions": f"standard {sfn['standard']['executions']} executions, "
        f"{sfn['standard']['transitions']} transitions; express {sfn['express']['executions']}",
        "lambda": ", ".join(f"{n} {u['invocations']}" for n, u in usage["lambda"].items()),
        "sqs": f"{usage['sqs']['requests']} requests",
    }
    print(f"{'':16}{'per million runs':>18}")
    for service, cost in per_run.items():
        if service == "total":
            continue
        amount = f"${cost:,.2f}"
        print(f"  {service:<14}{amount:>18}   {notes.get(service, '')}")
    total = f"${per_run['total']:,.2f}"
    print(f"  {'total':<14}{total:>18}")
    print(
        f"EventBridge Scheduler: ${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f} per million invocations"
        " (no history kept)"
    )
    return 0


def _topic_statuses(text: str) -> str:
    from chronoq.domain.notifications import topic_statuses

    try:
        return ",".join(sorted(topic_statuses(text)))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _networks(text: str) -> str:
    from chronoq.domain.network import NetworkPolicy

    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        NetworkPolicy.of(True, names)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return ",".join(names)


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="chronoq", description="chronoq job scheduler")
    commands = main.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="run the whole system locally, on embedded AWS")
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--port", type=int, default=8080)
    local.add_argument("--data-dir", type=Path, default=Path(".chronoq"))
    local.add_argument("--shards", type=int, default=r.DEFAULT_SHARDS)
    local.add_argument(
        "--tick-seconds",
        type=float,
        default=1.0,
        help="how often the dispatcher is invoked (AWS: every 60 s)",
    )
    local.add_argument("--user", default="local-user", help="user of the token printed at start-up")
    local.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level of chronoq local and of the functions it runs",
    )
    local.add_argument(
        "--task-modules",
        default="",
        help="comma-separated modules holding your own Python tasks (importable from here)",
    )
    local.add_argument(
        "--topic-statuses",
        type=_topic_statuses,
        default=",".join(r.DEFAULT_TOPIC_STATUSES),
        help="comma-separated final statuses of the runs published to the SNS topic"
        " (default: %(default)s; jobs' own webhooks and e-mails follow their notify.on)",
    )
    local.add_argument(
        "--block-private-targets",
        action="store_true",
        help="refuse http targets and webhooks on loopback, private, link-local and metadata"
        " addresses, as the AWS deployment does (off by default locally)",
    )
    local.add_argument(
        "--allowed-target-networks",
        type=_networks,
        default="",
        metavar="CIDRS",
        help="comma-separated networks targets and webhooks may call all the same"
        " (with --block-private-targets)",
    )
    local.add_argument(
        "--max-jobs-per-owner",
        type=int,
        default=r.DEFAULT_MAX_JOBS_PER_OWNER,
        help="jobs one owner may have (default: %(default)s)",
    )
    local.set_defaults(run=_local)

    token = commands.add_parser("token", help="print a token for USER, valid for chronoq local")
    token.add_argument("user")
    token.add_argument("--data-dir", type=Path, default=Path(".chronoq"))
    token.add_argument("--ttl", type=int, default=7 * 24 * 3600, help="seconds the token is valid")
    token.set_defaults(run=_token)

    schedule = commands.add_parser("schedule", help="work with schedules")
    schedule_commands = schedule.add_subparsers(dest="schedule_command", required=True)
    preview = schedule_commands.add_parser(
        "preview", help="print the next fire times of a schedule (UTC, then local time)"
    )
    kind = preview.add_mutually_exclusive_group(required=True)
    kind.add_argument("--cron", help='five-field cron expression, e.g. "30 2 * * 1-5"')
    kind.add_argument("--rate", help='interval, e.g. "5 minutes", "2 hours", "1 day"')
    kind.add_argument("--at", help="one instant, ISO 8601 with offset")
    kind.add_argument("--json", help="a schedule object as in the API")
    preview.add_argument("--timezone", default="UTC", help="IANA time zone of --cron")
    preview.add_argument("--start-at", dest="start_at")
    preview.add_argument("--end-at", dest="end_at")
    preview.add_argument("--count", type=int, default=10, choices=range(1, 101), metavar="1-100")
    preview.set_defaults(run=_preview)

    runs = commands.add_parser("runs", help="work with runs")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    logs = runs_commands.add_parser("logs", help="print the log lines of a run, attempt by attempt")
    logs.add_argument("run_id")
    logs.set_defaults(run=_logs)

    cost = commands.add_parser(
        "cost",
        help="what the workload on chronoq local would cost on AWS, per million runs",
    )
    cost.add_argument("--reset", action="store_true", help="start counting again afterwards")
    cost.add_argument("--json", action="store_true", help="the usage and its prices as JSON")
    for command in (logs, cost):
        command.add_argument(
            "--api",
            default=os.environ.get("CHRONOQ_API", "http://127.0.0.1:8080"),
            help="the API's base URL (default: $CHRONOQ_API, else chronoq local's)",
        )
        command.add_argument(
            "--token", default=os.environ.get("CHRONOQ_TOKEN", ""), help="default: $CHRONOQ_TOKEN"
        )
    cost.set_defaults(run=_cost)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
