"""One owner's burst against another owner's schedule, on ``chronoq local``: how long bob's runs
and API requests wait while alice floods the system.

- alice: one high-priority job whose flow lets one run at a time (each a python task of
  ``--run-seconds``), triggered ``--triggers`` times; and ``--backfills`` backfills of another
  job's past fire times (one every minute, up to 1,000 each).
- bob: ``--bob-jobs`` jobs every minute, each at its own second of a 60 s window (an http target
  served by this process), and ``GET /jobs`` asked twice a second.

After ``--minutes`` whole minutes of this, it prints bob's start lag (from his run records:
p50, p99, max), his API latency, and how far alice got. Then, on a fresh ``chronoq local``,
what a run that waits for a flow slot costs on AWS: ``--waiting`` triggers of a job whose flow
lets one run at a time (each ``--run-seconds``), priced per million runs from
``GET /_local/usage`` once all have ended, beside their average wait; and the same triggers
with a flow that lets them all run at once (none waits). Requests per run count chronoq's
functions and state machine (not the polling of event source mappings, free on AWS). The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq.local import tokens
from chronoq.local.usage import per_million_runs

from bench.lag import Api, Clock, chronoq_local, http_sink, spread


def _create(api: Api, body: dict[str, Any]) -> str:
    status, job = api.call("POST", "/jobs", body)
    if status != 201:
        raise RuntimeError(f"creating a job answered {status}: {job}")
    return str(job["id"])


#: Who makes the requests a run costs: chronoq's own functions and state machine (not the
#: event source mappings' polling, free on AWS, nor the API calls the bench makes).
RUN_CALLERS = ("dispatcher", "worker", "notifier", "statemachine", "runner")


def waiting_cost(count: int, run_seconds: float, clock: Clock, max_running: int) -> dict[str, Any]:
    """What ``count`` triggered runs of a job whose flow lets ``max_running`` run at once cost
    per million runs (``count`` runs behind one slot: all but one wait), the requests each
    makes, and how long they waited on average."""
    options = ["--no-heartbeat", "--aws-port", "0", "--task-modules", "bench.tasks"]
    with (
        tempfile.TemporaryDirectory(prefix="chronoq-bench-") as data_dir,
        chronoq_local(Path(data_dir), clock, options) as admin,
    ):
        job = _create(
            admin,
            {
                "name": "flowed",
                "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                "flow": {"key": "one", "max_running": max_running},
                "target": {
                    "type": "python",
                    "task": "bench.tasks:sleep",
                    "args": {"seconds": run_seconds},
                },
            },
        )
        admin.call("POST", "/_local/usage/reset")
        for _ in range(count):
            admin.call("POST", f"/jobs/{job}/trigger")
        usage: dict[str, Any] = {}
        while clock.left() > 0:  # (the usage document: no request of the API counted)
            _, usage = admin.call("GET", "/_local/usage")
            if usage["runs_finished"] >= count:
                break
            time.sleep(0.5)
        lags = [float(r["lag_ms"]) for r in admin.runs(job) if r["lag_ms"] is not None]
    costs = per_million_runs(usage)
    callers = usage["aws_requests_by_caller"]
    return {
        "runs": count,
        "max_running": max_running,
        "average_wait_s": round(sum(lags) / max(1, len(lags)) / 1000, 1),
        "cost_per_million": round(float(costs.get("total", 0)), 2),
        "requests_per_run": round(
            sum(callers.get(c, 0) for c in RUN_CALLERS) / max(1, usage["runs_finished"]), 1
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--triggers", type=int, default=300)
    parser.add_argument("--backfills", type=int, default=10)
    parser.add_argument("--run-seconds", type=float, default=1.0)
    parser.add_argument("--bob-jobs", type=int, default=20)
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--waiting", type=int, default=20)
    parser.add_argument("--time-limit", type=float, default=900.0)
    args = parser.parse_args()
    clock = Clock(args.time_limit)
    options = ["--no-heartbeat", "--aws-port", "0", "--task-modules", "bench.tasks"]
    # (alice's limits raised: fair share, not a refusal, is what is measured)
    options += ["--max-running-backfills-per-job", str(max(1, args.backfills))]
    options += ["--max-running-backfills-per-owner", str(max(1, args.backfills))]
    options += ["--max-queued-runs-per-owner", str(max(1, 1000 * args.backfills))]
    with (
        tempfile.TemporaryDirectory(prefix="chronoq-bench-") as data_dir,
        http_sink() as sink,
        chronoq_local(Path(data_dir), clock, options) as admin,
    ):
        alice = Api(admin.url, tokens.mint(Path(data_dir), "alice"))
        bob = Api(admin.url, tokens.mint(Path(data_dir), "bob"))
        bob_jobs = [
            _create(
                bob,
                {
                    "name": f"bob-{n}",
                    "schedule": {"type": "cron", "expression": "* * * * *", "window_seconds": 60},
                    "target": {"type": "http", "url": f"{sink.url}/bob"},
                },
            )
            for n in range(args.bob_jobs)
        ]
        slow = _create(
            alice,
            {
                "name": "slow",
                "priority": "high",
                "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                "flow": {"key": "slow", "max_running": 1},
                "target": {
                    "type": "python",
                    "task": "bench.tasks:sleep",
                    "args": {"seconds": args.run_seconds},
                },
            },
        )
        history = _create(
            alice,
            {
                "name": "history",
                "schedule": {"type": "cron", "expression": "* * * * *"},
                "target": {"type": "http", "url": f"{sink.url}/alice"},
            },
        )
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        for n in range(args.backfills):
            status, answer = alice.call(
                "POST",
                f"/jobs/{history}/backfill",
                {
                    "from": (now - timedelta(minutes=999 * (n + 1))).isoformat(),
                    "to": (now - timedelta(minutes=999 * n + 1)).isoformat(),
                },
            )
            if status != 202:
                raise RuntimeError(f"a backfill answered {status}: {answer}")
        for _ in range(args.triggers):
            status, answer = alice.call("POST", f"/jobs/{slow}/trigger")
            if status != 202:
                raise RuntimeError(f"a trigger answered {status}: {answer}")
        print(f"  alice: {args.triggers} triggers, {args.backfills} backfills sent", flush=True)
        begin = (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)
        end = begin + timedelta(minutes=args.minutes)
        latencies: list[float] = []
        done = threading.Event()

        def ask() -> None:
            while not done.wait(0.5):
                started = time.monotonic()
                bob.call("GET", "/jobs?limit=50")
                latencies.append((time.monotonic() - started) * 1000)

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        while datetime.now(UTC) < end + timedelta(seconds=10) and clock.left() > 0:
            time.sleep(1)
        done.set()
        asker.join()
        lags = [
            float(run["lag_ms"])
            for job_id in bob_jobs
            for run in bob.runs(job_id)
            if begin <= datetime.fromisoformat(run["scheduled_at"]) < end
            and run["lag_ms"] is not None
        ]
        planned = args.bob_jobs * args.minutes
        _, slow_runs = alice.call("GET", f"/jobs/{slow}/runs?limit=100")
        figures = {
            "machine": f"{os.cpu_count()} cores",
            "date": f"{datetime.now(UTC):%Y-%m-%d}",
            "bob_runs": f"{len(lags)} of {planned}",
            **{f"bob_start_lag_{k}": v for k, v in spread(lags).items()},
            **{f"bob_get_jobs_{k}": v for k, v in spread(latencies).items()},
            "alice_slow_runs_ended_of_last_100": sum(
                1 for run in slow_runs["runs"] if run["status"] == "SUCCEEDED"
            ),
            "alice_backfill_runs_reached_target": sum(
                1 for run_id in list(sink.arrived) if run_id.startswith(history)
            ),
        }
        print(
            f"  bob, while alice floods: {figures['bob_runs']} runs, start lag "
            f"{spread(lags)}; GET /jobs {spread(latencies)}",
            flush=True,
        )
    waited = waiting_cost(args.waiting, args.run_seconds, clock, max_running=1)
    alone = waiting_cost(args.waiting, args.run_seconds, clock, max_running=args.waiting)
    figures |= {f"waiting_{k}": v for k, v in waited.items()}
    figures |= {f"not_waiting_{k}": v for k, v in alone.items()}
    print(
        f"  {args.waiting} runs behind one flow slot: waited {waited['average_wait_s']} s on"
        f" average; ${waited['cost_per_million']} per million runs,"
        f" {waited['requests_per_run']} AWS requests per run (the same runs, none waiting:"
        f" ${alone['cost_per_million']}, {alone['requests_per_run']} requests per run)",
        flush=True,
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
