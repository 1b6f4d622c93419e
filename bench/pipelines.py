"""Completion triggers on chronoq local (docs/guides/pipelines.md): what a downstream run costs, and
what an instant whose wait lapses costs, in AWS requests, DynamoDB units and dollars per million,
counted by ``GET /_local/usage``.

Four phases, each alone in its own chronoq local, each counted over the same span of time
(from just before its upstream runs are due to ``--span`` seconds after: the dispatcher's idle
ticks and the stream's polls alike in all four):

(plain) ``--pipelines`` pairs of one-time http jobs (extract, clean), due at the same second,
        that nothing follows;
(plain+run) the same, and for each pair a third one-time http job (load) due 5 s later: the
        same runs as the fan-in phase's, none of them triggered;
(fan-in) the pairs, each followed by a job ``after`` both (``within_seconds`` 60): one
        downstream run each, http, succeeding;
(lapse) the pairs, clean due a second later than extract, each followed as in fan-in: each
        follower's two instants wait for the upstream they lack and are recorded SKIPPED.

What a downstream run adds is (fan-in - plain+run) per downstream run (beyond a scheduled
run's own cost); what a lapsed wait adds is (lapse - plain) per lapsed instant. Exits 1 if a
run did not end as planned.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from chronoq.local.usage import price

from bench.lag import Api, Clock, chronoq_local, http_sink

ROOT = Path(__file__).resolve().parent.parent
COMMON = {"retry": {"max_attempts": 1}, "timeout_seconds": 30}


def create(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    status, job = api.call("POST", "/jobs", body)
    if status != 201:
        raise RuntimeError(f"POST /jobs answered {status}: {job}")
    return dict(job)


def phase(name: str, pipelines: int, span: float, clock: Clock) -> tuple[dict[str, Any], int]:
    """One phase: its usage over the span, and how many downstream runs (fan-in) or lapsed
    instants (lapse) it made."""
    with (
        tempfile.TemporaryDirectory(prefix=f"chronoq-bench-pipelines-{name}-") as data,
        http_sink() as sink,
        chronoq_local(Path(data), clock) as api,
    ):
        due = (datetime.now(UTC) + timedelta(seconds=15 + 0.3 * pipelines)).replace(microsecond=0)
        followers = []
        for i in range(pipelines):
            url = f"{sink.url}/p{i}"
            for job, at in (
                ("extract", due),
                ("clean", due + timedelta(seconds=1 if name == "lapse" else 0)),
            ):
                create(
                    api,
                    {
                        "name": f"{job}-{i}",
                        "schedule": {"type": "at", "at": at.isoformat()},
                        "target": {"type": "http", "url": url},
                        **COMMON,
                    },
                )
            if name == "plain+run":
                create(
                    api,
                    {
                        "name": f"load-{i}",
                        "schedule": {"type": "at", "at": (due + timedelta(seconds=5)).isoformat()},
                        "target": {"type": "http", "url": url},
                        **COMMON,
                    },
                )
            elif name != "plain":
                followers.append(
                    create(
                        api,
                        {
                            "name": f"load-{i}",
                            "schedule": {
                                "type": "after",
                                "jobs": [f"extract-{i}", f"clean-{i}"],
                                "within_seconds": 60,
                            },
                            "target": {"type": "http", "url": url},
                            **COMMON,
                        },
                    )
                )
        if datetime.now(UTC) > due - timedelta(seconds=2):
            raise RuntimeError(f"({name}) creating the jobs took too long: try fewer pipelines")
        time.sleep(max(0.0, (due - timedelta(seconds=2) - datetime.now(UTC)).total_seconds()))
        status, answer = api.call("POST", "/_local/usage/reset")
        if status != 200:
            raise RuntimeError(f"POST /_local/usage/reset answered {status}: {answer}")
        time.sleep(max(0.0, (due + timedelta(seconds=span) - datetime.now(UTC)).total_seconds()))
        status, usage = api.call("GET", "/_local/usage")
        if status != 200:
            raise RuntimeError(f"GET /_local/usage answered {status}: {usage}")
        made = 0
        wanted = {"fan-in": ["SUCCEEDED"], "lapse": ["SKIPPED", "SKIPPED"]}.get(name, [])
        for follower in followers:
            statuses = sorted(r["status"] for r in api.runs(follower["id"]))
            if statuses != wanted:
                raise RuntimeError(f"({name}) {follower['name']}: runs {statuses}, not {wanted}")
            made += len(statuses)
        print(f"({name}) {pipelines} pipelines: {made} downstream runs or lapsed instants")
        return dict(usage), made


def difference(more: dict[str, Any], base: dict[str, Any]) -> dict[str, float]:
    """What ``more`` counted beyond ``base``: requests by operation, DynamoDB units."""
    out: dict[str, float] = {}
    for key in {*more["aws_requests"], *base["aws_requests"]}:
        delta = more["aws_requests"].get(key, 0) - base["aws_requests"].get(key, 0)
        if delta and "streams:" not in key:  # (stream reads are free on AWS)
            out[key] = delta
    for unit in ("read_units", "write_units"):
        delta = more["dynamodb"].get(unit, 0) - base["dynamodb"].get(unit, 0)
        if delta:
            out[f"dynamodb {unit}"] = delta
    return out


def dollars(usage: dict[str, Any]) -> Decimal:
    return sum(price(usage).values(), Decimal(0))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pipelines", type=int, default=20, help="per phase")
    parser.add_argument(
        "--span", type=float, default=150.0, help="seconds counted after the runs are due"
    )
    parser.add_argument("--time-limit", type=float, default=900.0)
    args = parser.parse_args()
    clock = Clock(args.time_limit)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    plain, _ = phase("plain", args.pipelines, args.span, clock)
    with_runs, _ = phase("plain+run", args.pipelines, args.span, clock)
    fanin, runs = phase("fan-in", args.pipelines, args.span, clock)
    lapse, lapsed = phase("lapse", args.pipelines, args.span, clock)
    for label, more, count, base in (
        ("downstream run (2 upstreams), beyond a scheduled run", fanin, runs, with_runs),
        ("lapsed wait (an instant SKIPPED)", lapse, lapsed, plain),
    ):
        added = difference(more, base)
        per = {k: round(v / max(1, count), 2) for k, v in sorted(added.items())}
        cost = (dollars(more) - dollars(base)) / max(1, count)
        print(f"\n{label}: per one ({count} counted)")
        for key, value in per.items():
            print(f"  {key:<40} {value:>8}")
        print(f"  {'cost per million':<40} ${cost * 1_000_000:>7.2f}")


if __name__ == "__main__":
    main()
