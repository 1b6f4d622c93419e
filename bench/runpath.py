"""The whole run path on chronoq local: AWS requests, DynamoDB units and cost per run of a
standard workload, and the start lag of a burst, each beside its value before the cost work.

Like bench/lag.py, starts ``chronoq local`` in subprocesses and drives them over the HTTP API
only (an HTTP sink in this process is the http jobs' target, ``bench.tasks:work`` the python
jobs'); the counts come from ``GET /_local/usage``. Three phases:

(a) the common path: cron jobs (``* * * * *``, each firing ``--cron-runs`` times) and one-time
    jobs, half with http targets and half with python targets, all succeeding at once;
(b) the standard workload: the same jobs, of which ``--failing-percent`` fail their first
    attempt and succeed on the retry (the sink answers 500, the task raises), and one
    container job;
(c) a burst: ``--burst`` http runs due in the same second (bench/lag.py's burst), for its
    start lag.

(a) and (b) run one after the other, each alone in its own chronoq local (what is billed by
the millisecond is not slowed by the other), whose dispatcher ticks once a minute as on AWS.
Their jobs are created first, due at the start of a minute the dispatcher has not opened
yet; the usage is reset once they are all created (creating jobs is not part of the run
path), just before the dispatcher may open that minute, and read once every run has finished
and the counts have settled. Figures are per finished run; costs are per million runs at us-
east-1 list prices, beside EventBridge Scheduler's $1.00. (c) runs after them, alone. A cron
job's last run chains on to no next one: with ``--cron-runs`` N, N-1 of every N cron runs
write their successor, as every run of a job that keeps firing does.

``--flow JSON`` gives every job of the phases that flow (say ``{"key": "k", "max_running":
100}``): beside a run without it, what flow control costs per run. ``--secret`` makes every
job name one secret (an http job in its ``Authorization`` header, a python job in its
``environment``): what a secret costs per run.

Every figure is printed beside its value in ``--before`` (bench/before.json: measured before
the cost work, on the commit it names); ``--save-before`` writes this run's figures there.
The last line of output is one JSON object with the main figures. Exits 1 if a run did not
end as planned or the time limit was reached.

Why this module is long: one benchmark: its three phases, the planning of their workload, the
measuring and the table of figures beside the before values, read top to bottom as a script is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq.domain.ids import first_unopened, opened_at
from chronoq.local.usage import EVENTBRIDGE_SCHEDULER_PER_MILLION, per_million_runs

from bench.lag import Api, Clock, Sink, TimeLimit, burst, chronoq_local, http_sink, percentile

ROOT = Path(__file__).resolve().parent.parent
BEFORE = Path(__file__).with_name("before.json")
#: The python jobs' task (chronoq local is told to load bench.tasks).
TASK = "bench.tasks:work"
#: Every job's retry policy: one retry, a second after the failure.
RETRY = {"max_attempts": 2, "interval_seconds": 1, "backoff_rate": 1.0, "jitter": False}
#: Fargate pulls the image; chronoq local runs the command on this machine.
CONTAINER = {
    "type": "container",
    "image": "public.ecr.aws/docker/library/busybox:1.36",
    "command": ["sh", "-c", "echo chronoq runpath benchmark"],
}
#: chronoq local's dispatcher ticks once a minute, as the EventBridge rule does on AWS; the
#: container job runs its command on this machine (the benchmark's own: trusted); no heartbeat
#: (the deployment's own runs, a fixed cost, not the workload's: they would count among its
#: runs).
LOCAL_OPTIONS = (
    "--no-heartbeat",
    "--tick-seconds",
    "60",
    "--task-modules",
    "bench.tasks",
    "--allow-host-commands",
)
#: The counts are reset this long before the dispatcher can open the jobs' first minute.
RESET_AHEAD_SECONDS = 2
#: Operations counted by time rather than by run: the notifier's event source mapping
#: polling the runs stream (free on AWS for Lambda triggers).
STREAM_POLLS = "dynamodbstreams:"


# --- the workload -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    cron_jobs: int
    at_jobs: int
    cron_runs: int
    failing_percent: int

    def runs(self, container: bool) -> int:
        return self.cron_jobs * self.cron_runs + self.at_jobs + int(container)


@dataclass(frozen=True)
class Planned:
    """A job to create: its definition, the runs it makes, whether attempt 1 of each fails."""

    spec: dict[str, Any]
    runs: int
    fail_first: bool = False


@dataclass(frozen=True)
class Job:
    id: str
    name: str
    runs: int
    fail_first: bool


def fails(i: int, percent: int) -> bool:
    """Whether job ``i`` of a kind is one of the ``percent`` % that fail first (spread out)."""
    return (i + 1) * percent // 100 > i * percent // 100


def halves(count: int) -> Iterator[tuple[str, int]]:
    yield "http", count - count // 2
    yield "python", count // 2


def plan(
    workload: Workload, sink: Sink, minute: datetime, failing: bool, container: bool
) -> list[Planned]:
    """The jobs of a phase, all first due at ``minute`` (as cron jobs fire, at the start of
    each minute, and one-time jobs set for the hour do)."""

    def target(kind: str, fail_first: bool) -> dict[str, Any]:
        if kind == "http":
            return {"type": "http", "url": f"{sink.url}/runpath"}
        return {"type": "python", "task": TASK, "args": {"fail_first": fail_first}}

    cron = {
        "type": "cron",
        "expression": "* * * * *",
        "start_at": minute.isoformat(),
        # the last of its runs, and no more
        "end_at": (minute + timedelta(minutes=workload.cron_runs - 1, seconds=30)).isoformat(),
    }
    at = {"type": "at", "at": minute.isoformat()}
    planned = []
    for schedule, count, runs in (
        (cron, workload.cron_jobs, workload.cron_runs),
        (at, workload.at_jobs, 1),
    ):
        for kind, n in halves(count):
            for i in range(n):
                fail_first = failing and fails(i, workload.failing_percent)
                spec = {
                    "name": f"runpath-{schedule['type']}-{kind}-{i}",
                    "schedule": schedule,
                    "target": target(kind, fail_first),
                    "retry": RETRY,
                }
                planned.append(Planned(spec, runs, fail_first))
    if container:
        spec = {"name": "runpath-container", "schedule": at, "target": CONTAINER, "retry": RETRY}
        planned.append(Planned(spec, 1))
    return planned


#: The secret every job names with ``--secret``.
SECRET = "bench-token"  # noqa: S105 - a secret's name


def with_secret(target: dict[str, Any]) -> dict[str, Any]:
    """``target`` naming the benchmark's secret (a container takes it as ECS would)."""
    if target["type"] == "http":
        return {**target, "headers": {"Authorization": f"Bearer {{{{ secret.{SECRET} }}}}"}}
    return {**target, "environment": {"TOKEN": {"secret": SECRET}}}


# --- a phase on its own chronoq local ---------------------------------------------------------


@dataclass
class Phase:
    key: str
    title: str
    api: Api
    planned: list[Planned]
    jobs: list[Job] = field(default_factory=list)
    reset_at: float = 0.0
    window_s: float = 0.0
    usage: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def expected(self) -> int:
        return sum(p.runs for p in self.planned)

    def create(self, sink: Sink) -> None:
        for planned in self.planned:
            status, job = self.api.call("POST", "/jobs", planned.spec)
            if status != 201:
                raise RuntimeError(f"creating {planned.spec['name']} answered {status}: {job}")
            if planned.fail_first and planned.spec["target"]["type"] == "http":
                sink.fail_first.add(job["id"])
            self.jobs.append(Job(job["id"], job["name"], planned.runs, planned.fail_first))

    def reset(self) -> None:
        status, answer = self.api.call("POST", "/_local/usage/reset")
        if status != 200:
            raise RuntimeError(f"POST /_local/usage/reset answered {status}: {answer}")
        self.reset_at = time.monotonic()

    def read(self) -> dict[str, Any]:
        status, usage = self.api.call("GET", "/_local/usage")
        if status != 200:
            raise RuntimeError(f"GET /_local/usage answered {status}: {usage}")
        document: dict[str, Any] = usage
        return document

    def verify(self) -> None:
        """Every job made its runs, each SUCCEEDED, in the attempts planned."""
        for job in self.jobs:
            runs = self.api.runs(job.id)
            attempts = 2 if job.fail_first else 1
            statuses = [r["status"] for r in runs]
            if len(runs) != job.runs or set(statuses) != {"SUCCEEDED"}:
                self.problems.append(f"{job.name}: runs {statuses}, {job.runs} planned")
            for run in runs:
                # the attempts as the API lists them (not checked if it only counts them)
                took = run.get("attempts")
                if isinstance(took, list) and len(took) != attempts:
                    self.problems.append(
                        f"{job.name}: {run['id']} took {len(took)} attempts, {attempts} planned"
                    )


def seconds_per_creation(api: Api) -> float:
    """Create a job a day ahead twice (the first pays the api's cold start) and delete them:
    how long the second creation took."""
    at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    spec = {
        "name": "runpath-warm-up",
        "schedule": {"type": "at", "at": at.isoformat()},
        "target": {"type": "python", "task": TASK},
    }
    took = 0.0
    for _ in range(2):
        started = time.monotonic()
        status, job = api.call("POST", "/jobs", spec)
        took = time.monotonic() - started
        if status != 201:
            raise RuntimeError(f"creating a job answered {status}: {job}")
        api.call("DELETE", f"/jobs/{job['id']}")
    return took


def settled(usage: dict[str, Any]) -> str:
    """What stops changing once the runs and what follows them (notifications) are over."""
    requests = {k: v for k, v in usage["aws_requests"].items() if not k.startswith(STREAM_POLLS)}
    return json.dumps({**usage, "aws_requests": requests, "aws_requests_by_caller": None})


def measure(phases: list[Phase], minute: datetime, clock: Clock) -> None:
    """Wait for the runs due at ``minute`` and after: read each phase's usage once its
    runs have finished and two readings 1.5 s apart agree."""
    while datetime.now(UTC) < minute:
        if clock.left() <= 0:
            raise TimeLimit(f"time limit of {clock.seconds:.0f} s reached before {minute:%H:%M}")
        time.sleep(min(1.0, (minute - datetime.now(UTC)).total_seconds() + 0.01))
    previous: dict[str, str] = {}
    while True:
        for phase in phases:
            if phase.usage is not None:
                continue
            usage = phase.read()
            state = settled(usage)
            if usage["runs_finished"] >= phase.expected and previous.get(phase.key) == state:
                phase.usage = usage
                phase.window_s = time.monotonic() - phase.reset_at
            previous[phase.key] = state
        waiting = [p for p in phases if p.usage is None]
        if not waiting:
            return
        if clock.left() <= 0:
            counts = ", ".join(
                f"({p.key}) {json.loads(previous[p.key])['runs_finished']} of {p.expected}"
                for p in waiting
            )
            raise TimeLimit(f"time limit of {clock.seconds:.0f} s reached: runs finished {counts}")
        time.sleep(1.5)


# --- figures ----------------------------------------------------------------------------------

Figures = dict[str, float]


def phase_figures(key: str, usage: dict[str, Any]) -> Figures:
    runs = usage["runs_finished"]
    if not runs:
        return {}
    figures: Figures = {f"{key}.runs": runs}
    by_caller = usage["aws_requests_by_caller"]
    for caller, count in by_caller.items():
        figures[f"{key}.requests_per_run.{caller}"] = count / runs
    figures[f"{key}.requests_per_run.total"] = sum(by_caller.values()) / runs
    polls = sum(n for op, n in usage["aws_requests"].items() if op.startswith(STREAM_POLLS))
    figures[f"{key}.stream_polls_per_run"] = polls / runs
    figures[f"{key}.write_units_per_run"] = usage["dynamodb"]["write_units"] / runs
    figures[f"{key}.read_units_per_run"] = usage["dynamodb"]["read_units"] / runs
    for service, cost in per_million_runs(usage).items():
        figures[f"{key}.cost_per_million.{service}"] = float(cost)
    return figures


def burst_figures(start: list[float], target: list[float]) -> Figures:
    figures: Figures = {}
    for name, values in (("start_lag", start), ("target_lag", target)):
        if values:
            figures[f"burst.{name}_p50_ms"] = percentile(values, 50)
            figures[f"burst.{name}_p99_ms"] = percentile(values, 99)
            figures[f"burst.{name}_max_ms"] = max(values)
    return figures


def summary(figures: Figures) -> dict[str, float | None]:
    """The figures of the last line."""
    names = {
        "common_path_cost_per_million": "common.cost_per_million.total",
        "common_path_requests_per_run": "common.requests_per_run.total",
        "common_path_stream_polls_per_run": "common.stream_polls_per_run",
        "common_path_write_units_per_run": "common.write_units_per_run",
        "common_path_read_units_per_run": "common.read_units_per_run",
        "standard_cost_per_million": "standard.cost_per_million.total",
        "standard_requests_per_run": "standard.requests_per_run.total",
        "standard_write_units_per_run": "standard.write_units_per_run",
        "standard_read_units_per_run": "standard.read_units_per_run",
        "burst_lag_p50_ms": "burst.start_lag_p50_ms",
        "burst_lag_p99_ms": "burst.start_lag_p99_ms",
        "burst_lag_max_ms": "burst.start_lag_max_ms",
    }
    return {name: _round(figures.get(key)) for name, key in names.items()}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def row(label: str, key: str, now: Figures, before: Figures, form: str, indent: int = 4) -> str:
    """A figure now and before: ``form`` is "$" (dollars) or the number of decimals."""

    def show(value: float | None) -> str:
        if value is None:
            return "-"
        return f"${value:,.2f}" if form == "$" else f"{value:,.{form}f}"

    label = f"{' ' * indent}{label:<{34 - indent}}"
    return f"{label}{show(now.get(key)):>12}{show(before.get(key)):>12}"


def names_under(prefix: str, *figures: Figures) -> list[str]:
    """The names after ``prefix`` of the figures that have one, ``total`` last."""
    names = {k[len(prefix) :] for f in figures for k in f if k.startswith(prefix)}
    return [*sorted(names - {"total"}), "total"]


def print_phase(phase: Phase, now: Figures, before: Figures) -> None:
    key = phase.key
    print(f"\n{phase.title}")
    if phase.usage is None:
        print("  not measured")
        return
    runs_before = before.get(f"{key}.runs")
    print(
        f"  {phase.usage['runs_finished']} runs finished of {phase.expected} planned (before: "
        f"{'-' if runs_before is None else f'{runs_before:.0f}'}), counted over "
        f"{phase.window_s:.0f} s"
    )
    print(f"  {'':<32}{'now':>12}{'before':>12}")
    print("  AWS requests per run, by caller")
    prefix = f"{key}.requests_per_run."
    for caller in names_under(prefix, now, before):
        print(row(caller, prefix + caller, now, before, "2"))
    print(row("of which runs-stream polls", f"{key}.stream_polls_per_run", now, before, "2", 6))
    print("  DynamoDB units per run")
    print(row("write", f"{key}.write_units_per_run", now, before, "2"))
    print(row("read", f"{key}.read_units_per_run", now, before, "2"))
    print("  cost per million runs (us-east-1 list prices, Lambda on arm64)")
    prefix = f"{key}.cost_per_million."
    for service in names_under(prefix, now, before):
        print(row(service, prefix + service, now, before, "$"))
    print(f"    {'EventBridge Scheduler':<30}{f'${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f}':>12}")
    for problem in phase.problems[:5]:
        print(f"  not as planned: {problem}")
    if len(phase.problems) > 5:
        print(f"  ... and {len(phase.problems) - 5} more")


def print_burst(count: int, now: Figures, before: Figures) -> None:
    print(f"\n(c) {count} http runs due in the same second: lag after that second")
    print(f"  {'':<32}{'now':>12}{'before':>12}")
    for name in ("start_lag", "target_lag"):
        for stat in ("p50", "p99", "max"):
            label = f"{name.replace('_', ' ')} {stat} (ms)"
            print(row(label, f"burst.{name}_{stat}_ms", now, before, "0"))


def load_before(path: Path) -> dict[str, Any]:
    try:
        before: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return before


def commit_of(directory: Path) -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"],  # noqa: S607 - git from PATH, fixed arguments
            cwd=directory,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# --- main -------------------------------------------------------------------------------------


def phase_for(key: str, workload: Workload, sink: Sink, api: Api, minute: datetime) -> Phase:
    jobs = (
        f"{workload.cron_jobs} cron jobs (* * * * *, each firing "
        f"{'once' if workload.cron_runs == 1 else f'{workload.cron_runs} times'}) and "
        f"{workload.at_jobs} one-time jobs, half http and half python"
    )
    if key == "common":
        return Phase(
            "common",
            f"(a) common path: {jobs}, all succeeding at once",
            api,
            plan(workload, sink, minute, failing=False, container=False),
        )
    return Phase(
        "standard",
        f"(b) standard workload: {jobs}, {workload.failing_percent}% of them failing "
        "their first attempt; one container job",
        api,
        plan(workload, sink, minute, failing=True, container=True),
    )


def run_phase(
    key: str,
    workload: Workload,
    sink: Sink,
    api: Api,
    clock: Clock,
    phases: list[Phase],
    flow: dict[str, Any] | None = None,
    secret: bool = False,
) -> None:
    """One phase, alone on the machine: create its jobs, reset the counts, wait for the
    runs, read the counts, check the runs. The phase goes into ``phases`` as soon as it
    exists, so that what was measured is there even if the time limit is reached."""
    per_job = seconds_per_creation(api)
    count = workload.cron_jobs + workload.at_jobs + 1
    # Its first minute: one the dispatcher opens only after the jobs are created.
    ready_by = datetime.now(UTC) + timedelta(seconds=RESET_AHEAD_SECONDS + 5 + 2 * per_job * count)
    minute = first_unopened(ready_by)
    phase = phase_for(key, workload, sink, api, minute)
    if flow is not None:  # every job of the phase shares one flow (what flow control costs)
        phase.planned = [
            Planned({**p.spec, "flow": flow}, p.runs, p.fail_first) for p in phase.planned
        ]
    if secret:  # every job names one secret (what resolving it costs)
        status, answer = api.call("PUT", f"/secrets/{SECRET}", {"value": "bench-secret-value"})
        if status not in (200, 201):
            raise RuntimeError(f"PUT /secrets/{SECRET} answered {status}: {answer}")
        phase.planned = [
            Planned({**p.spec, "target": with_secret(p.spec["target"])}, p.runs, p.fail_first)
            for p in phase.planned
        ]
    phases.append(phase)
    started = time.monotonic()
    phase.create(sink)
    created_in = time.monotonic() - started
    # The counting starts at the same time before the minute whenever the benchmark starts,
    # so that what is counted by time (idle ticks, stream polls) is alike from run to run.
    reset_at = opened_at(minute) - timedelta(seconds=RESET_AHEAD_SECONDS)
    if datetime.now(UTC) > reset_at:
        raise RuntimeError(
            f"creating the jobs took {created_in:.1f} s, too long to end before the "
            f"dispatcher opens {minute:%H:%M}: try fewer jobs"
        )
    print(
        f"({key}) {len(phase.jobs)} jobs created in {created_in:.1f} s, first due at "
        f"{minute:%H:%M:%SZ}; counting from {reset_at:%H:%M:%S}"
    )
    time.sleep(max(0.0, (reset_at - datetime.now(UTC)).total_seconds()))
    phase.reset()
    measure([phase], minute, clock)
    phase.verify()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cron-jobs", type=int, default=40, help="per phase, half http")
    parser.add_argument("--cron-runs", type=int, default=2, help="runs of each cron job")
    parser.add_argument("--at-jobs", type=int, default=40, help="per phase, half http")
    parser.add_argument(
        "--failing-percent", type=int, default=10, help="of the standard workload's jobs"
    )
    parser.add_argument("--burst", type=int, default=100, help="runs due in the same second")
    parser.add_argument("--before", type=Path, default=BEFORE, help="the before figures (JSON)")
    parser.add_argument(
        "--save-before", action="store_true", help="write this run's figures to --before"
    )
    parser.add_argument(
        "--time-limit", type=float, default=900.0, help="give up after this many seconds"
    )
    parser.add_argument(
        "--phases",
        type=lambda text: set(text.split(",")),
        default={"common", "standard", "burst"},
        help="the phases to run (comma-separated; default: common,standard,burst)",
    )
    parser.add_argument(
        "--usage-json", type=Path, help="also write each phase's usage document to this file"
    )
    parser.add_argument(
        "--flow",
        type=json.loads,
        metavar="JSON",
        help='give every job of the phases this flow, e.g. \'{"key": "k", "max_running": 100}\''
        " (what flow control costs per run)",
    )
    parser.add_argument(
        "--secret",
        action="store_true",
        help="every job names one secret (what a secret costs per run)",
    )
    args = parser.parse_args()
    if args.cron_runs < 1 or args.cron_jobs < 0 or args.at_jobs < 0:
        parser.error("--cron-runs must be at least 1, job counts at least 0")
    workload = Workload(args.cron_jobs, args.at_jobs, args.cron_runs, args.failing_percent)
    clock = Clock(args.time_limit)
    # chronoq local imports bench.tasks from here
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    before_document = load_before(args.before)
    before: Figures = before_document.get("figures", {})
    if before_document:
        same = before_document.get("workload") == asdict(workload) | {"burst": args.burst}
        print(
            f"before: measured on commit {before_document.get('commit', '?')[:12]}"
            + ("" if same else f", with another workload: {before_document.get('workload')}")
        )
    figures: Figures = {}
    complete = True
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="chronoq-runpath-") as data, http_sink() as sink:
        directories = [Path(data) / name for name in ("common", "standard", "burst")]
        for directory in directories:
            directory.mkdir()
        try:
            # Each phase alone on the machine: what is billed by the millisecond (functions,
            # EXPRESS executions) is not slowed by the other.
            for key, directory in zip(("common", "standard"), directories[:2], strict=True):
                if key not in args.phases:
                    continue
                t0 = time.monotonic()
                with chronoq_local(directory, clock, LOCAL_OPTIONS) as api:
                    print(f"({key}) chronoq local started in {time.monotonic() - t0:.1f} s")
                    run_phase(key, workload, sink, api, clock, phases, args.flow, args.secret)
            if args.burst > 0 and "burst" in args.phases:
                t0 = time.monotonic()
                with chronoq_local(directories[2], clock, ("--no-heartbeat",)) as api:
                    print(f"chronoq local for the burst started in {time.monotonic() - t0:.1f} s")
                    result = burst(api, sink, args.burst, "normal", clock)
                figures.update(burst_figures(result.lags.start, result.lags.target))
                complete = complete and not result.lags.missing
        except TimeLimit as error:
            print(f"\nstopped: {error}")
            complete = False
    for phase in phases:
        if phase.usage is not None:
            figures.update(phase_figures(phase.key, phase.usage))
        complete = complete and phase.usage is not None and not phase.problems

    if args.usage_json:
        args.usage_json.write_text(
            json.dumps({p.key: p.usage for p in phases}, indent=2, default=str) + "\n"
        )
    for phase in phases:
        print_phase(phase, figures, before)
    if args.burst > 0:
        print_burst(args.burst, figures, before)
    duration = time.monotonic() - clock.start
    print(f"\ntook {duration:.0f} s")
    if args.save_before:
        document = {
            "commit": commit_of(ROOT),
            "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "workload": asdict(workload) | {"burst": args.burst},
            "duration_s": round(duration),
            "summary": summary(figures),
            "figures": {k: round(v, 4) for k, v in sorted(figures.items())},
        }
        args.before.write_text(json.dumps(document, indent=2) + "\n")
        print(f"before figures written to {args.before}")
    last = {
        **summary(figures),
        "duration_s": round(duration),
        "complete": complete,
        "before": before_document.get("summary"),
        "before_commit": before_document.get("commit"),
    }
    print(json.dumps(last))
    sys.exit(0 if complete else 1)


if __name__ == "__main__":
    main()
