"""What the archive costs: one owner running ``--rate`` runs a second (manual triggers of a few
python-echo jobs) for ``--seconds`` on ``chronoq local`` (live, not simulated), its archiver
gathering batches for ``--window`` seconds (AWS: 240 s; a shorter window here, so that a few
minutes see several of them). From ``GET /_local/usage``: the runs that ended, the archiver's
invocations, billed milliseconds and PUTs (its only requests); from ``GET /archive``: every
object of the owner's days, downloaded, each run's versions counted (none may be missing).

Printed: runs per object and the archiver's cost per million runs as measured (at the local
window), then the same priced for AWS's window from the measured figures (an object per owner
and day per batch window: runs per object = rate x window; an invocation billed as chronoq
local's model bills it, plus its handler's own time per record, measured here on a batch of
1,000 sample stream records and counted LAMBDA_CPU_FACTOR times over, a 512 MB function
having about a third of a vCPU), and the curve below one run a second (cost per run = PUT
price / runs per object, plus the invocation's share). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.domain import archive
from chronoq.local.usage import PRICES

from bench.lag import Api, Clock, chronoq_local

#: The caller the usage document names for the archiver's own requests.
ARCHIVER = r.ARCHIVER_FUNCTION.name
#: Rates (runs a second, one owner) the curve is priced at.
CURVE_RATES = (0.01, 0.1, 0.5, 1, 2, 10)
#: How much slower a 512 MB function's share of a vCPU runs the handler than this machine.
LAMBDA_CPU_FACTOR = 3
#: Records of the batch the handler's time per record is measured on.
SAMPLE_RECORDS = 1000


def per_record_ms() -> float:
    """The archiver's handler's own time per stream record (decoded, grouped, compressed),
    on a batch of SAMPLE_RECORDS copies of events/archiver's first record, written to the
    fake bucket."""
    import copy

    from chronoq.fakes import FakeArchive
    from chronoq.local.lambdas import LambdaContext, _import
    from chronoq.settings import environment
    from chronoq.usecases.archive import Archiver

    from tests.support import load_event

    settings = {r.ENV_ARCHIVE_BUCKET: "bench"}
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # (its "archived" lines)
    with environment(settings):
        handler: Any = _import("archiver_bench_handler", r.ARCHIVER_FUNCTION.handler_file)
    handler.archiver = Archiver(FakeArchive())
    template = load_event("archiver/stream_batch")["Records"][0]
    records = []
    for n in range(SAMPLE_RECORDS):
        record = copy.deepcopy(template)
        record["dynamodb"]["SequenceNumber"] = str(10**20 + n)
        record["dynamodb"]["NewImage"]["run_id"]["S"] += f"-{n}"
        records.append(record)
    context = LambdaContext("bench", r.ARCHIVER_FUNCTION.memory_mb, 300, "arn:bench")
    with environment(settings):
        handler.handler({"Records": records[:10]}, context)  # (warm)
        started = time.perf_counter()
        handler.handler({"Records": records}, context)
        return (time.perf_counter() - started) * 1000 / SAMPLE_RECORDS


def _jobs(api: Api, count: int) -> list[str]:
    ids = []
    for n in range(count):
        status, job = api.call(
            "POST",
            "/jobs",
            {
                "name": f"archive-bench-{n}",
                "schedule": {"type": "rate", "every": "1 day"},
                "target": {"type": "python", "task": "chronoq.tasks:echo", "args": {"n": n}},
                "retry": {"max_attempts": 1},
            },
        )
        if status != 201:
            raise RuntimeError(f"POST /jobs answered {status}: {job}")
        ids.append(job["id"])
    return ids


def _load(api: Api, jobs: list[str], rate: float, seconds: float) -> list[dict[str, Any]]:
    """Trigger ``rate`` runs a second, round the jobs, for ``seconds``: the runs."""
    runs = []
    start = time.monotonic()
    n = 0
    while (due := start + n / rate) < start + seconds:
        time.sleep(max(0.0, due - time.monotonic()))
        status, run = api.call("POST", f"/jobs/{jobs[n % len(jobs)]}/trigger")
        if status != 202:
            raise RuntimeError(f"a trigger answered {status}: {run}")
        runs.append(run)
        n += 1
    return runs


def _ended(api: Api, runs: list[dict[str, Any]]) -> bool:
    return all(api.call("GET", f"/runs/{run['id']}")[1]["status"] == "SUCCEEDED" for run in runs)


def _archived(api: Api, days: set[str]) -> tuple[list[dict[str, Any]], int, int]:
    """Every line of the owner's objects of ``days``; how many objects, and their bytes."""
    lines: list[dict[str, Any]] = []
    objects = size = 0
    for day in sorted(days):
        status, page = api.call("GET", f"/archive?day={day}")
        if status != 200:
            raise RuntimeError(f"GET /archive answered {status}: {page}")
        for found in page["objects"]:
            with urllib.request.urlopen(found["url"], timeout=60) as answer:  # noqa: S310 - chronoq local's link
                lines += archive.decode(answer.read())
            objects += 1
            size += found["size"]
    return lines, objects, size


def _invocation_cost(memory_mb: int, billed_ms: float) -> Decimal:
    gb_seconds = Decimal(memory_mb) / 1024 * Decimal(str(billed_ms)) / 1000
    return PRICES["lambda_request"] + gb_seconds * PRICES["lambda_gb_second"]


def curve(runs_per_object: float, invocation_ms: float, record_ms: float) -> Decimal:
    """The archiver's cost per million runs at AWS's window when an object (and an
    invocation) holds ``runs_per_object`` runs: a PUT per object, and an invocation's share
    (billed ``invocation_ms``, and ``record_ms`` per record)."""
    runs = max(1.0, runs_per_object)
    billed = invocation_ms + record_ms * LAMBDA_CPU_FACTOR * runs
    per_run = PRICES["s3_put"] / Decimal(str(runs))
    per_run += _invocation_cost(r.ARCHIVER_FUNCTION.memory_mb, billed) / Decimal(str(runs))
    return per_run * 1_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=2.0, help="runs a second, one owner")
    parser.add_argument("--seconds", type=float, default=150.0, help="how long the load lasts")
    parser.add_argument("--window", type=float, default=30.0, help="the local batching window")
    parser.add_argument("--jobs", type=int, default=10)
    args = parser.parse_args()
    clock = Clock(args.seconds + 4 * args.window + 240)
    with tempfile.TemporaryDirectory(prefix="chronoq-bench-archive-") as scratch:
        options = ["--no-heartbeat", "--archive-window", str(args.window), "--aws-port", "0"]
        with chronoq_local(Path(scratch), clock, options) as api:
            jobs = _jobs(api, args.jobs)
            api.call("POST", "/_local/usage/reset")
            started = datetime.now(UTC)
            runs = _load(api, jobs, args.rate, args.seconds)
            clock.poll(lambda: _ended(api, runs), "the runs to end", interval=1.0)
            days = {(started + timedelta(days=d)).date().isoformat() for d in (0, 1)}
            wanted = {run["id"] for run in runs}

            def all_archived() -> tuple[list[dict[str, Any]], int, int] | None:
                found = _archived(api, days)
                return found if wanted <= {line["id"] for line in found[0]} else None

            lines, objects, size = clock.poll(all_archived, "every run archived", interval=2.0)
            usage = api.call("GET", "/_local/usage")[1]
    use = usage["lambda"].get(ARCHIVER, {"invocations": 0, "billed_ms": 0.0, "memory_mb": 0})
    batches = usage["archive_batches"]
    # (as made here, at the local window; chronoq cost prices them as the stack's window)
    invocations, puts = batches["local"], batches["objects_local"]
    ended = usage["runs_finished"]
    versions = [line for line in lines if line["id"] in wanted]
    per_invocation_ms = use["billed_ms"] / max(1, invocations)
    record_ms = per_record_ms()
    gb_seconds = Decimal(r.ARCHIVER_FUNCTION.memory_mb) / 1024 * Decimal(str(use["billed_ms"]))

    def per_million(put_count: int, invocation_count: int) -> Decimal:
        cost = put_count * PRICES["s3_put"] + invocation_count * PRICES["lambda_request"]
        cost += gb_seconds / 1000 * PRICES["lambda_gb_second"]
        return cost * 1_000_000 / max(1, int(ended))

    measured = per_million(puts, invocations)
    as_priced = per_million(batches["objects_priced"], batches["priced"])
    aws_runs_per_object = args.rate * r.ARCHIVER_BATCHING_WINDOW_SECONDS
    at_aws = curve(aws_runs_per_object, per_invocation_ms, record_ms)
    result = {
        "archive_rate_runs_per_second": args.rate,
        "archive_seconds": args.seconds,
        "archive_local_window_seconds": args.window,
        "archive_runs": len(runs),
        "archive_runs_ended": ended,
        "archive_runs_missing": len(wanted - {line["id"] for line in versions}),
        "archive_versions": len(versions),
        "archive_objects": objects,
        "archive_bytes_per_run": round(size / max(1, len(runs))),
        "archive_runs_per_object": round(len(runs) / max(1, objects), 1),
        "archiver_invocations": invocations,
        "archiver_billed_ms_per_invocation": round(per_invocation_ms, 1),
        "archiver_puts": puts,
        "archiver_handler_ms_per_record": round(record_ms, 3),
        "archive_cost_per_million_local_window": float(round(measured, 4)),
        "archive_cost_per_million_as_chronoq_cost_prices": float(round(as_priced, 4)),
        "archive_cost_per_million_aws_window": float(round(at_aws, 4)),
        "archive_curve_per_million": {
            str(rate): float(
                round(
                    curve(rate * r.ARCHIVER_BATCHING_WINDOW_SECONDS, per_invocation_ms, record_ms),
                    4,
                )
            )
            for rate in CURVE_RATES
        },
    }
    print(
        f"{len(runs)} runs at {args.rate}/s for {args.seconds:.0f} s, window {args.window:.0f} s:"
        f" {objects} objects ({result['archive_runs_per_object']} runs each,"
        f" {result['archive_bytes_per_run']} bytes a run gzipped), {len(versions)} versions,"
        f" {result['archive_runs_missing']} runs missing"
    )
    print(
        f"archiver: {invocations} invocations ({per_invocation_ms:.0f} ms billed each),"
        f" {puts} PUTs: ${measured:.4f} per million runs at this window; chronoq cost prices"
        f" them as the stack's {r.ARCHIVER_BATCHING_WINDOW_SECONDS} s windows:"
        f" {batches['priced']} invocations, {batches['objects_priced']} PUTs, ${as_priced:.4f}"
    )
    print(
        f"the handler's own time: {record_ms:.3f} ms a record here"
        f" (x{LAMBDA_CPU_FACTOR} on a 512 MB function)"
    )
    print(
        f"at AWS's {r.ARCHIVER_BATCHING_WINDOW_SECONDS} s window: {aws_runs_per_object:.0f} runs"
        f" per object, ${at_aws:.4f} per million runs (one shard: an owner whose runs spread"
        " over k shards of the stream has k objects per window)"
    )
    for rate, cost in result["archive_curve_per_million"].items():
        print(f"  {rate:>5} runs/s: ${cost:.4f} per million runs")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
