"""Reading backfills with 10,000 runs under their job, on ``chronoq local``; and what counting
a backfill's runs as they end costs.

- reads: ``--backfills`` backfills of ``--runs-each`` ended runs each (10 of 1,000: 10,000 run
  records of about 1 KB) seeded straight into a fresh data directory's tables (as
  bench/local.py seeds history), under one job; their progress counted on them, as the
  notifier leaves it, but for one, kept as a backfill made before counting was (no counters:
  read from its runs, as every read of a backfill was before). Then, ``--reads`` times each:
  ``GET /jobs/{id}/backfills`` (the page of them), ``GET /jobs/{id}/backfills/{backfill_id}``
  of a counted one, and of the uncounted one; and a page of the job's runs from
  ``GET /jobs/{id}/runs`` and ``GET /runs?job_id=``: p50, p99 and max in milliseconds.
- counting: a backfill of ``--fires`` fire times of an every-minute job (an http target
  served by this process) run end to end on a fresh ``chronoq local``: the seconds until its
  ``GET`` says COMPLETED with every fire time ended, and from ``GET /_local/usage``, per
  backfill run: the counting's transactions, the notifier's invocations and requests (all it
  does: counting, waking the runs parked on the backfill's slots), and the whole path's cost
  per million runs.

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Priority, Run, RunStatus, Trigger
from chronoq.domain.schedules import CronSchedule
from chronoq.domain.time import format_instant
from chronoq.local.aws import table_name
from chronoq.local.usage import per_million_runs

from bench.lag import Api, Clock, chronoq_local, http_sink, spread
from bench.local import _output

#: The owner of what is seeded: the user chronoq_local's admin token is for.
OWNER = "bench"
EVERY_MINUTE = "* * * * *"


def _job(now: datetime) -> Job:
    return Job.model_validate(
        {
            "id": "job_backfilled00000",
            "owner": OWNER,
            "name": "backfilled",
            "schedule": {"type": "cron", "expression": EVERY_MINUTE},
            "target": {"type": "http", "url": "http://127.0.0.1:9/never"},
            "state": "PAUSED",
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
    )


def _backfills(job: Job, count: int, each: int, now: datetime) -> list[Backfill]:
    """``count`` backfills of ``each`` every-minute fire times, one range after another back
    from ``now``, all ended: counted, but the last (kept as before counting)."""
    found = []
    for n in range(count):
        to = now - timedelta(minutes=each * n)
        counted = n < count - 1
        found.append(
            Backfill(
                id=f"bf{n:011x}bench",
                job_id=job.id,
                owner=job.owner,
                start=to - timedelta(minutes=each),
                to=to,
                state=BackfillState.COMPLETED,
                total=each,
                max_in_flight=lim.BACKFILL_MAX_IN_FLIGHT,
                schedule=CronSchedule(type="cron", expression=EVERY_MINUTE),
                created_at=now,
                finished_at=now,
                ended=each if counted else None,
                runs={RunStatus.SUCCEEDED.value: each} if counted else {},
            )
        )
    return found


def _runs(backfill: Backfill) -> Iterator[dict[str, Any]]:
    """The backfill's runs, one a fire time, ended (marked counted, as the notifier leaves
    them), about 1 KB each."""
    for n in range(backfill.total):
        at = backfill.start + timedelta(minutes=n)
        run = Run(
            id=ids.backfill_run_id(backfill.job_id, at, backfill.id),
            job_id=backfill.job_id,
            owner=backfill.owner,
            status=RunStatus.SUCCEEDED,
            priority=Priority.NORMAL,
            trigger=Trigger.BACKFILL,
            scheduled_at=at,
            queued_at=backfill.created_at,
            backfill_id=backfill.id,
        )
        yield codecs.dump(
            {
                **codecs.new_run_item(run, backfill.created_at),
                "started_at": format_instant(backfill.created_at),
                "finished_at": format_instant(backfill.created_at + timedelta(seconds=1)),
                "output": _output(n),
                codecs.COUNTED: True,
            }
        )


def seed(data_dir: Path, job: Job, backfills: list[Backfill]) -> int:
    """The job, its backfills and their runs, in a fresh data directory's tables; how many
    run records."""
    from chronoq.local.backup import ENGINE_DIR
    from chronoq.local.engine.tables import SqliteTables

    path = data_dir / ENGINE_DIR / "tables.db"
    path.parent.mkdir(parents=True)
    tables = SqliteTables(path, r.TABLES, names={t.id: table_name(t) for t in r.TABLES})
    runs = table_name(r.RUNS_TABLE)
    tables.put_item(TableName=table_name(r.JOBS_TABLE), Item=codecs.dump(codecs.job_item(job)))
    written = 0
    for backfill in backfills:
        tables.put_item(TableName=runs, Item=codecs.dump(codecs.backfill_item(backfill)))
        batch: list[dict[str, Any]] = []
        for item in _runs(backfill):
            batch.append({"PutRequest": {"Item": item}})
            if len(batch) == 25:
                tables.batch_write_item(RequestItems={runs: batch})
                written += len(batch)
                batch = []
        if batch:
            tables.batch_write_item(RequestItems={runs: batch})
            written += len(batch)
        tables.trim_stream(1 << 62)  # (history, not news: nothing to count or notify)
    tables.close()
    return written


def _timed(api: Api, path: str, reads: int) -> tuple[dict[str, float], Any]:
    latencies = []
    answer: Any = None
    for _ in range(reads):
        started = time.perf_counter()
        status, answer = api.call("GET", path)
        latencies.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise RuntimeError(f"GET {path} answered {status}: {answer}")
    return spread(latencies), answer


def reads(count: int, each: int, times: int, clock: Clock) -> dict[str, Any]:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    job = _job(now)
    backfills = _backfills(job, count, each, now)
    counted, uncounted = backfills[0], backfills[-1]
    options = ["--no-heartbeat", "--aws-port", "0"]
    with tempfile.TemporaryDirectory(prefix="chronoq-backfills-") as folder:
        data_dir = Path(folder)
        records = seed(data_dir, job, backfills)
        print(f"  {records:,} runs of {count} backfills seeded under one job", flush=True)
        with chronoq_local(data_dir, clock, options) as api:
            base = f"/jobs/{job.id}/backfills"
            clock.poll(lambda: api.call("GET", base)[0] == 200 or None, "chronoq local")
            listing, page = _timed(api, f"{base}?limit=50", times)
            one, view = _timed(api, f"{base}/{counted.id}", times)
            scanned, old = _timed(api, f"{base}/{uncounted.id}", max(1, times // 10))
            # the other list routes over the same 10,000 runs: a page of them each
            job_runs, runs_page = _timed(api, f"/jobs/{job.id}/runs?limit=50", times)
            all_runs, _ = _timed(api, f"/runs?job_id={job.id}&limit=50", times)
    if len(page["backfills"]) != count or view["ended"] != each or old["ended"] != each:
        raise RuntimeError(f"unexpected answers: {page}, {view}, {old}")
    if len(runs_page["runs"]) != 50:
        raise RuntimeError(f"unexpected page of runs: {len(runs_page['runs'])}")
    figures = {
        "runs_under_the_job": records,
        "backfills": count,
        **{f"list_{k}": v for k, v in listing.items()},
        **{f"get_{k}": v for k, v in one.items()},
        **{f"get_uncounted_{k}": v for k, v in scanned.items()},
        **{f"job_runs_page_{k}": v for k, v in job_runs.items()},
        **{f"runs_page_{k}": v for k, v in all_runs.items()},
    }
    print(
        f"  GET {base} (a page of {count}): {listing}; one backfill: {one};"
        f" one kept before counting (read from its {each:,} runs): {scanned}",
        flush=True,
    )
    print(
        f"  GET /jobs/{{id}}/runs?limit=50: {job_runs}; GET /runs?job_id=…&limit=50: {all_runs}",
        flush=True,
    )
    return figures


def counting(fires: int, clock: Clock) -> dict[str, Any]:
    options = ["--no-heartbeat", "--aws-port", "0"]
    with (
        tempfile.TemporaryDirectory(prefix="chronoq-backfill-") as data_dir,
        http_sink() as sink,
        chronoq_local(Path(data_dir), clock, options) as api,
    ):
        status, job = api.call(
            "POST",
            "/jobs",
            {
                "name": "every-minute",
                "schedule": {"type": "cron", "expression": EVERY_MINUTE},
                "target": {"type": "http", "url": f"{sink.url}/backfilled"},
            },
        )
        if status != 201:
            raise RuntimeError(f"creating the job answered {status}: {job}")
        api.call("POST", f"/jobs/{job['id']}/pause")  # (only the backfill runs)
        api.call("POST", "/_local/usage/reset")
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        body = {"from": (now - timedelta(minutes=fires)).isoformat(), "to": now.isoformat()}
        began = time.monotonic()
        status, backfill = api.call("POST", f"/jobs/{job['id']}/backfill", body)
        if status != 202:
            raise RuntimeError(f"the backfill answered {status}: {backfill}")
        path = f"/jobs/{job['id']}/backfills/{backfill['id']}"

        def completed() -> dict[str, Any] | None:
            view: dict[str, Any] = api.call("GET", path)[1]
            return view if view["state"] == "COMPLETED" else None

        done = clock.poll(completed, "the backfill to complete", interval=0.5)
        seconds = time.monotonic() - began
        time.sleep(2)  # (the notifier's last batches, and the executions' ends, settle)
        _, usage = api.call("GET", "/_local/usage")
    notifier = usage["aws_requests_by_caller"].get(r.NOTIFIER_FUNCTION.name, 0)
    # (the counting's own: its transactions, one per batch and backfill; the backfill's
    # start is one more)
    transactions = usage["aws_requests"].get("dynamodb:TransactWriteItems", 0) - 1
    invocations = usage["lambda"].get(r.NOTIFIER_FUNCTION.name, {}).get("invocations", 0)
    costs = per_million_runs(usage)
    figures = {
        "backfill_fires": fires,
        "backfill_completed_s": round(seconds, 1),
        "backfill_ended": done["ended"],
        "backfill_runs": done["runs"],
        "counting_transactions_per_run": round(transactions / fires, 2),
        "notifier_requests_per_run": round(notifier / fires, 2),
        "notifier_invocations_per_run": round(invocations / fires, 2),
        "backfill_run_cost_per_million": round(float(costs.get("total", 0)), 2),
        "backfill_run_dynamodb_cost_per_million": round(float(costs.get("dynamodb", 0)), 2),
    }
    print(
        f"  a backfill of {fires} fire times: COMPLETED after {seconds:.1f} s, {done['ended']}"
        f" ended {done['runs']}; per run: {figures['counting_transactions_per_run']} counting"
        f" transactions, the notifier's {figures['notifier_invocations_per_run']} invocations"
        f" and {figures['notifier_requests_per_run']} requests (all it does); the whole path"
        f" ${figures['backfill_run_cost_per_million']} per million runs (DynamoDB"
        f" ${figures['backfill_run_dynamodb_cost_per_million']})",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backfills", type=int, default=10)
    parser.add_argument("--runs-each", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--fires", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=900.0)
    args = parser.parse_args()
    clock = Clock(args.time_limit)
    print("backfills with 10,000 runs under their job, on chronoq local:", flush=True)
    figures: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores",
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
    }
    figures |= reads(args.backfills, args.runs_each, args.reads, clock)
    if args.fires:
        figures |= counting(args.fires, clock)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
