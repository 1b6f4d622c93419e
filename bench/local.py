"""chronoq local's engine under load: what a machine's worth of runs, and of history, costs.

Starts ``chronoq local`` in a subprocess (as bench/lag.py does), with an HTTP sink in this
process as the jobs' target (another process than chronoq local's), once per ``--engine``
(``local``, the engine built for one machine; ``moto``, the embedded AWS), and measures:

- bursts: ``--bursts`` (e.g. ``100,1000``) http runs due in the same second: start lag p50, p99
  and max (bench/lag.py's burst); while the largest burst runs, ``GET /jobs`` and
  ``GET /jobs/{id}/runs`` are asked for without pause: their latency p50, p99 and max;
- sustained: ``--rate`` runs a second for ``--seconds``: ``rate * 60`` jobs on ``* * * * *``
  with a 60 s window (each run starts at its own offset in its minute), created ahead; then
  the runs that reached the sink per second over the whole period, the runs planned to start
  within the period that reached it (per second, and how many did not), and the start lag of
  a sample of them;
- history: ``--history`` run records (1 KB each) seeded straight into a fresh data
  directory's tables (spread over ``--history-jobs`` jobs), then a start on it: seconds from
  the process's start to its first API answer, its resident memory then and after a page of
  runs of each of 50 jobs, a job's first page of runs (median and max of 50), and the disk
  the tables take per run record. The moto engine is seeded through its snapshot file (its
  kept state), the local engine through its tables.

The last line is one JSON object with every figure, by engine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus, Trigger
from chronoq.domain.time import format_instant
from chronoq.local.aws import table_name

from bench.lag import Api, Clock, Sink, burst, chronoq_local, http_sink, spread

#: An owner whose jobs the seeded history belongs to.
OWNER = "bench"
#: How long after the sustained period its last runs may still arrive (they are counted as
#: the period's: runs planned in it, whenever they arrive), a few times the start lag a
#: saturated chronoq local shows (p99 about 8 s).
GRACE_SECONDS = 20
#: How much a seeded run record carries besides its keys (its output): about 1 KB in all.
PADDING = 640


def _print(name: str, figures: dict[str, Any]) -> None:
    print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in figures.items()), flush=True)


# --- bursts, and the API while one runs -------------------------------------------------------


class Sampler(threading.Thread):
    """Asks ``GET /jobs`` and a job's ``GET /jobs/{id}/runs`` in turn, without pause, until
    stopped: each answer's latency."""

    def __init__(self, api: Api, job_id: str) -> None:
        super().__init__(daemon=True)
        self.api, self.job_id = api, job_id
        self.halt = threading.Event()
        self.latencies: dict[str, list[float]] = {"jobs": [], "runs": []}
        self.errors = 0

    def run(self) -> None:
        while not self.halt.is_set():
            for name, path in (("jobs", "/jobs?limit=50"), ("runs", f"/jobs/{self.job_id}/runs")):
                started = time.perf_counter()
                status, _ = self.api.call("GET", path)
                self.latencies[name].append((time.perf_counter() - started) * 1000)
                self.errors += status != 200


def bursts(
    api: Api, sink: Sink, sizes: list[int], clock: Clock, sampled: bool = True
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for size in sizes:
        status, job = api.call(
            "POST",
            "/jobs",
            {
                "name": f"sampled-{size}",
                "schedule": {"type": "rate", "every": "1 minute"},
                "target": {"type": "http", "url": f"{sink.url}/sampled"},
            },
        )
        sampler = Sampler(api, job["id"]) if status == 201 and sampled else None
        if sampler is not None:
            sampler.start()
        result = burst(api, sink, size, "normal", clock)
        if sampler is not None:
            sampler.halt.set()
            sampler.join()
        lags = result.lags
        figures[f"burst_{size}"] = {
            **{f"start_{k}": v for k, v in spread(lags.start).items()},
            "measured": len(lags.start),
            "missing": len(lags.missing),
        }
        _print(f"{size} runs due in one second", figures[f"burst_{size}"])
        if sampler is not None:
            for name, values in sampler.latencies.items():
                figures[f"api_during_burst_{name}"] = {**spread(values), "answers": len(values)}
                _print(f"GET /{name} during that burst", figures[f"api_during_burst_{name}"])
    return figures


# --- sustained --------------------------------------------------------------------------------


def sustained(api: Api, sink: Sink, rate: int, seconds: int, clock: Clock) -> dict[str, Any]:
    """``rate`` runs a second for ``seconds``: ``rate * 60`` jobs every minute, each at its own
    offset in a 60 s window."""
    count = rate * 60
    created: list[str] = []
    lock = threading.Lock()

    def create(part: range) -> None:
        for i in part:
            status, job = api.call(
                "POST",
                "/jobs",
                {
                    "name": f"steady-{i}",
                    "schedule": {"type": "cron", "expression": "* * * * *", "window_seconds": 60},
                    "target": {"type": "http", "url": f"{sink.url}/steady"},
                },
            )
            if status != 201:
                raise RuntimeError(f"creating a job answered {status}: {job}")
            with lock:
                created.append(job["id"])

    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(create, range(n, count, 4)) for n in range(4)]:
            done.result()  # (raises what a creation raised)
    print(f"  {count} jobs created in {time.monotonic() - started:.0f} s", flush=True)
    # the first whole minute all of them fire in, then the period
    begin = (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)
    end = begin + timedelta(seconds=seconds)
    # (then as long again as a run of the period's last second may lag at this rate: its
    # runs arrive after it)
    while datetime.now(UTC) < end + timedelta(seconds=GRACE_SECONDS):
        time.sleep(1)
        if clock.left() <= 0:
            break
    arrived = dict(sink.arrived)
    steady = [at for at in arrived.values() if begin <= at < end]
    # runs planned to start within the period that reached the sink (whenever they did: the
    # runs of its last seconds arrive after it, by their start lag)
    planned = [run_id for run_id in arrived if begin <= _planned_start(run_id) < end]
    per_second: dict[int, int] = {}
    for at in steady:
        key = int((at - begin).total_seconds())
        per_second[key] = per_second.get(key, 0) + 1
    sample = created[:: max(1, len(created) // 200)]
    lags = []
    statuses: dict[str, int] = {}
    for job_id in sample:
        for run in api.runs(job_id):
            scheduled = datetime.fromisoformat(run["scheduled_at"])
            if begin <= scheduled < end:
                statuses[run["status"]] = statuses.get(run["status"], 0) + 1
                if run["lag_ms"] is not None:
                    lags.append(float(run["lag_ms"]))
    for job_id in created:  # (stop them: the next engine starts afresh anyway)
        if clock.left() <= 0:
            break
        api.call("PATCH", f"/jobs/{job_id}", {"state": "PAUSED"})
    figures = {
        "runs_per_second": round(len(steady) / seconds, 1),
        "planned_runs_done_per_second": round(len(planned) / seconds, 1),
        "planned_runs_missing": rate * seconds - len(planned),
        "slowest_second": min(per_second.get(s, 0) for s in range(seconds)),
        # the seconds of the period (from its start) that saw under half the rate
        "slow_seconds": [s for s in range(seconds) if per_second.get(s, 0) < rate / 2][:30],
        "jobs": count,
        **{f"start_{k}": v for k, v in spread(lags).items()},
        "lag_sample": len(lags),
        "sample_statuses": statuses,
    }
    _print(f"{rate} runs a second for {seconds} s", figures)
    return figures


def _planned_start(run_id: str) -> datetime:
    """When a scheduled run was planned to start: its fire time (in its id) plus its window
    offset."""
    stamp = run_id.partition("-")[0].rpartition("_")[2]
    fire = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return fire + timedelta(seconds=ids.window_offset_of(run_id))


# --- history ----------------------------------------------------------------------------------


def _job(i: int, now: datetime) -> Job:
    return Job.model_validate(
        {
            "id": f"job_history{i:08d}",
            "owner": OWNER,
            "name": f"history-{i}",
            "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
            "target": {"type": "http", "url": "http://127.0.0.1:9/never"},
            "state": "PAUSED",
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
    )


def _runs(jobs: list[Job], count: int, now: datetime) -> Any:
    """``count`` ended runs, round robin over ``jobs``, one a second back from ``now``."""
    for n in range(count):
        job = jobs[n % len(jobs)]
        at = now - timedelta(seconds=count - n)
        run = Run(
            id=ids.run_id(job.id, at),
            job_id=job.id,
            owner=job.owner,
            status=RunStatus.SUCCEEDED,
            priority=job.priority,
            trigger=Trigger.SCHEDULE,
            scheduled_at=at,
            queued_at=at,
        )
        item: dict[str, Any] = codecs.dump(
            {
                **codecs.new_run_item(run, at),
                "started_at": format_instant(at),
                "finished_at": format_instant(at + timedelta(milliseconds=120)),
                "output": _output(n),
            }
        )
        yield item


def _output(n: int) -> str:
    """A run's output of PADDING characters that compresses as real output does (hex digits
    of hashes, not one letter repeated)."""
    digest = hashlib.sha256(str(n).encode()).hexdigest()
    return (digest * (PADDING // len(digest) + 1))[: PADDING // 2] + "".join(
        hashlib.sha256(f"{n}.{i}".encode()).hexdigest() for i in range(PADDING // 128)
    )[: PADDING - PADDING // 2]


def seed_local(data_dir: Path, jobs: list[Job], count: int, now: datetime) -> Path:
    from chronoq.local.backup import ENGINE_DIR
    from chronoq.local.engine.tables import SqliteTables

    path = data_dir / ENGINE_DIR / "tables.db"
    path.parent.mkdir(parents=True)
    tables = SqliteTables(path, r.TABLES, names={t.id: table_name(t) for t in r.TABLES})
    for job in jobs:
        tables.put_item(TableName=table_name(r.JOBS_TABLE), Item=codecs.dump(codecs.job_item(job)))
    runs = table_name(r.RUNS_TABLE)
    batch: list[dict[str, Any]] = []
    for item in _runs(jobs, count, now):
        batch.append({"PutRequest": {"Item": item}})
        if len(batch) == 25:
            tables.batch_write_item(RequestItems={runs: batch})
            batch = []
        if len(batch) == 0:
            tables.trim_stream(1 << 62)  # (history, not news: nothing to notify)
    if batch:
        tables.batch_write_item(RequestItems={runs: batch})
    tables.trim_stream(1 << 62)
    tables.close()
    return path


def seed_moto(data_dir: Path, jobs: list[Job], count: int, now: datetime) -> Path:
    from chronoq.local import persist

    state = data_dir / persist.STATE_DIR
    state.mkdir(parents=True)
    snapshot = {
        table_name(r.JOBS_TABLE): [codecs.dump(codecs.job_item(job)) for job in jobs],
        table_name(r.RUNS_TABLE): list(_runs(jobs, count, now)),
    }
    path = state / persist.SNAPSHOT_FILE
    path.write_text(json.dumps(snapshot))
    return path


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def history(engine: str, count: int, job_count: int, clock: Clock) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    jobs = [_job(i, now) for i in range(job_count)]
    with tempfile.TemporaryDirectory(prefix="chronoq-history-") as folder:
        data_dir = Path(folder)
        started = time.monotonic()
        kept = (seed_local if engine == "local" else seed_moto)(data_dir, jobs, count, now)
        print(f"  {count:,} run records seeded in {time.monotonic() - started:.0f} s", flush=True)
        disk = sum(p.stat().st_size for p in kept.parent.iterdir() if p.is_file())
        options = ["--engine", engine, "--no-heartbeat", "--aws-port", "0"]
        began = time.monotonic()
        with chronoq_local(data_dir, clock, options) as api:
            pid = _pid_on(api)
            while api.call("GET", "/jobs?limit=1")[0] != 200:
                time.sleep(0.05)
            first_answer = time.monotonic() - began
            rss_start = _rss_mb(pid)
            pages = []
            for job in jobs[:50]:
                t = time.perf_counter()
                status, answer = api.call("GET", f"/jobs/{job.id}/runs")
                pages.append((time.perf_counter() - t) * 1000)
                if status != 200 or not answer["runs"]:
                    raise RuntimeError(f"a page of runs answered {status}: {answer}")
            figures = {
                "records": count,
                "first_answer_s": round(first_answer, 2),
                "rss_mb": round(max(rss_start, _rss_mb(pid)), 0),
                "first_page_median_ms": round(statistics.median(pages), 1),
                "first_page_max_ms": round(max(pages), 1),
                "disk_bytes_per_record": round(disk / count),
            }
    _print(f"{count:,} run records kept", figures)
    return figures


def _pid_on(api: Api) -> int:
    """The pid of the chronoq local answering on ``api`` (its port's listener)."""
    port = api.url.rsplit(":", 1)[-1]
    out = subprocess.run(  # noqa: S603 - fixed program and arguments
        ["/usr/bin/env", "ss", "-Hltnp", f"sport = :{port}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return int(out.split("pid=", 1)[1].split(",", 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", default="local,moto", help="engines, comma-separated")
    parser.add_argument("--bursts", default="100,1000", help="burst sizes, comma-separated")
    parser.add_argument("--rate", type=int, default=200, help="sustained runs a second")
    parser.add_argument("--seconds", type=int, default=300, help="of sustained load (0: none)")
    parser.add_argument("--history", type=int, default=1_000_000, help="run records kept")
    parser.add_argument("--history-jobs", type=int, default=1_000)
    parser.add_argument("--moto-history", type=int, default=30_000, help="on the moto engine")
    parser.add_argument("--time-limit", type=float, default=3600.0)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores",
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
    }
    for engine in args.engine.split(","):
        print(f"\nengine {engine}:", flush=True)
        clock = Clock(args.time_limit)
        figures: dict[str, Any] = {}
        sizes = [int(s) for s in args.bursts.split(",") if s]
        options = ["--engine", engine, "--no-heartbeat", "--aws-port", "0"]
        options += ["--max-jobs-per-owner", str(max(10_000, args.rate * 60 + 10))]
        for size in sizes:  # (each in a fresh chronoq local: the jobs' names are reused)
            with (
                tempfile.TemporaryDirectory(prefix="chronoq-bench-") as data_dir,
                http_sink() as sink,
                chronoq_local(Path(data_dir), clock, options) as api,
            ):
                figures |= bursts(api, sink, [size], clock, sampled=size == max(sizes))
        if args.seconds and engine == "local":
            with (
                tempfile.TemporaryDirectory(prefix="chronoq-bench-") as data_dir,
                http_sink() as sink,
                chronoq_local(Path(data_dir), clock, options) as api,
            ):
                figures["sustained"] = sustained(api, sink, args.rate, args.seconds, clock)
        count = args.history if engine == "local" else args.moto_history
        if count:
            figures["history"] = history(engine, count, args.history_jobs, clock)
        results[engine] = figures
    print(json.dumps(results))
    sys.exit(0)


if __name__ == "__main__":
    main()
