"""Start lag of chronoq local: how long after their scheduled second runs start.

Starts ``chronoq local`` in a subprocess (as the end-to-end tests do), with an HTTP sink in
this process as the jobs' target, and measures over its HTTP API:

- single at-jobs: ``--singles`` jobs, one after another, each due ``--lead`` seconds after it
  is created and alone in the system;
- a burst: ``--runs`` http jobs due in the same second. They are created due a day ahead,
  then moved to the start of a minute chosen from how long creating them took, so that all
  of them are in place before the dispatcher opens it (it then queues them in one tick).
  This takes one to two minutes more than the runs themselves.

Prints, for each, the start lag (a run's ``lag_ms``: started_at - scheduled_at) and the target
lag (when the sink received the request - scheduled_at): p50, p99 and max. Gives up after
``--time-limit`` seconds, printing what it has; exits 1 if a run could not be measured.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from chronoq.domain.ids import first_unopened

T = TypeVar("T")
FINISHED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"})


class TimeLimit(Exception):
    """The benchmark ran out of time."""


@dataclass
class Clock:
    """The benchmark's time limit."""

    seconds: float
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def poll(self, condition: Callable[[], T | None], what: str, interval: float = 0.25) -> T:
        while True:
            value = condition()
            if value:
                return value
            if self.left() <= 0:
                raise TimeLimit(f"time limit of {self.seconds:.0f} s reached waiting for {what}")
            time.sleep(interval)


def whole_second_after(seconds: float) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0) + timedelta(
        seconds=1
    )


# --- the target -------------------------------------------------------------------------------


@dataclass
class Sink:
    """An HTTP server on this machine: when each run's request arrived, by run id, and the
    jobs whose requests arrived. It answers 500 to the first attempt of the jobs in
    ``fail_first`` (by the X-Chronoq-Job-Id and X-Chronoq-Attempt headers), 200 otherwise."""

    url: str = ""
    arrived: dict[str, datetime] = field(default_factory=dict)
    jobs: set[str] = field(default_factory=set)
    fail_first: set[str] = field(default_factory=set)

    def count(self) -> int:
        return len(self.arrived)


@contextmanager
def http_sink() -> Iterator[Sink]:
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        # keeps connections open between requests, as web servers do (HTTP/1.1)
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            at = datetime.now(UTC)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            sink.arrived.setdefault(self.headers.get("X-Chronoq-Run-Id", ""), at)
            job_id = self.headers.get("X-Chronoq-Job-Id", "")
            sink.jobs.add(job_id)
            fail = job_id in sink.fail_first and self.headers.get("X-Chronoq-Attempt") == "1"
            self.send_response(500 if fail else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, name="sink", daemon=True).start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()


# --- chronoq local ----------------------------------------------------------------------------


@dataclass
class Api:
    url: str
    token: str

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        parts = urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        try:
            connection.request(
                method,
                path,
                body=json.dumps(body) if body is not None else None,
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                },
            )
            answer = connection.getresponse()
            data = answer.read()
            return answer.status, json.loads(data) if data else None
        finally:
            connection.close()

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        status, answer = self.call("GET", f"/jobs/{job_id}/runs")
        if status != 200:
            raise RuntimeError(f"GET /jobs/{job_id}/runs answered {status}: {answer}")
        runs: list[dict[str, Any]] = answer["runs"]
        return runs


@contextmanager
def chronoq_local(data_dir: Path, clock: Clock, options: Sequence[str] = ()) -> Iterator[Api]:
    """``chronoq local`` in a subprocess on a free port, until the block ends; ``options``
    are more of its command-line options."""
    log = (data_dir / "local.log").open("w")
    command = [sys.executable, "-m", "chronoq.cli.main", "local", "--port", "0", *options]
    process = subprocess.Popen(  # noqa: S603 - this interpreter running chronoq, fixed arguments
        [*command, "--data-dir", str(data_dir), "--user", "bench"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.strip())

    threading.Thread(target=read, name="chronoq-local-stdout", daemon=True).start()
    try:
        try:
            # "chronoq local listening on URL", "admin token for user 'bench' (...):", the token
            # (an admin token: it may use /_local/usage and the ticker)
            wait = max(1.0, min(120, clock.left()))
            first, _, token = [lines.get(timeout=wait) for _ in range(3)]
        except queue.Empty:
            log.flush()
            raise RuntimeError(
                "chronoq local did not start:\n" + (data_dir / "local.log").read_text()
            ) from None
        yield Api(first.rsplit(" ", 1)[-1], token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


# --- measurements -----------------------------------------------------------------------------


@dataclass
class Lags:
    """Start and target lags, in milliseconds, of the runs measured."""

    start: list[float] = field(default_factory=list)
    target: list[float] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add(self, run: dict[str, Any], sink: Sink) -> None:
        if run["status"] != "SUCCEEDED" or run["lag_ms"] is None:
            self.missing.append(f"{run['id']}: {run['status']} {run.get('error') or ''}")
            return
        self.start.append(float(run["lag_ms"]))
        arrived = sink.arrived.get(run["id"])
        if arrived is not None:
            scheduled = datetime.fromisoformat(run["scheduled_at"])
            self.target.append((arrived - scheduled).total_seconds() * 1000)

    def report(self) -> None:
        print(f"  {'':<12} {'p50':>9} {'p99':>9} {'max':>9} {'runs':>6}")
        for name, values in (("start lag", self.start), ("target lag", self.target)):
            if values:
                figures = (percentile(values, 50), percentile(values, 99), max(values))
                columns = "".join(f" {v:>6.0f} ms" for v in figures)
                print(f"  {name:<12}{columns} {len(values):>6}")
        for missing in self.missing[:5]:
            print(f"  not measured: {missing}")
        if len(self.missing) > 5:
            print(f"  ... and {len(self.missing) - 5} more")


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def spread(values: list[float]) -> dict[str, float]:
    """Milliseconds' p50, p99 and max (none of no values)."""
    if not values:
        return {}
    return {
        "p50_ms": round(percentile(values, 50), 1),
        "p99_ms": round(percentile(values, 99), 1),
        "max_ms": round(max(values), 1),
    }


def finished_run(api: Api, job_id: str) -> dict[str, Any] | None:
    runs = api.runs(job_id)
    return runs[0] if runs and runs[0]["status"] in FINISHED else None


def singles(api: Api, sink: Sink, count: int, lead: float, clock: Clock) -> Lags:
    """``count`` at-jobs, one at a time, each due ``lead`` seconds after it is created."""
    lags = Lags()
    for i in range(count):
        job_id = ""
        while not job_id:
            at = whole_second_after(lead)
            status, job = api.call(
                "POST",
                "/jobs",
                {
                    "name": f"single-{i}",
                    "schedule": {"type": "at", "at": at.isoformat()},
                    "target": {"type": "http", "url": f"{sink.url}/single"},
                },
            )
            if status == 422:  # the second had passed when the request was handled
                lead *= 2
            elif status != 201:
                raise RuntimeError(f"creating an at-job answered {status}: {job}")
            else:
                job_id = job["id"]
        lags.add(clock.poll(partial(finished_run, api, job_id), f"single run {i}"), sink)
    return lags


@dataclass
class Burst:
    lags: Lags
    burst_at: datetime
    created_in: float
    moved_in: float


def burst(api: Api, sink: Sink, count: int, priority: str, clock: Clock) -> Burst:
    """``count`` http jobs due in the same second."""
    placeholder = whole_second_after(24 * 3600)
    started = time.monotonic()
    job_ids = []
    for i in range(count):
        status, job = api.call(
            "POST",
            "/jobs",
            {
                "name": f"burst-{i}",
                "priority": priority,
                "schedule": {"type": "at", "at": placeholder.isoformat()},
                "target": {"type": "http", "url": f"{sink.url}/burst"},
            },
        )
        if status != 201:
            raise RuntimeError(f"creating a job answered {status}: {job}")
        job_ids.append(job["id"])
        if clock.left() <= 0:
            raise TimeLimit(f"time limit reached creating the burst's jobs ({i + 1} created)")
    created_in = time.monotonic() - started
    # The start of a minute that the dispatcher opens only after twice the creations' time
    # from now: a move into a minute not yet opened costs about what a creation did, and the
    # dispatcher then queues all the runs in one tick, as it does any minute's.
    moved_by = datetime.now(UTC) + timedelta(seconds=2 * created_in)
    burst_at = first_unopened(moved_by)
    started = time.monotonic()
    moved: list[str] = []
    lags = Lags()
    for job_id in job_ids:
        schedule = {"schedule": {"type": "at", "at": burst_at.isoformat()}}
        status, answer = api.call("PATCH", f"/jobs/{job_id}", schedule)
        if status == 200:
            moved.append(job_id)
        else:  # moved too late: the second had passed
            lags.missing.append(f"{job_id}: moving it answered {status}: {answer}")
    moved_in = time.monotonic() - started
    wanted = set(moved)
    clock.poll(lambda: wanted <= sink.jobs, "the burst", 0.5)
    for job_id in moved:
        run = clock.poll(partial(finished_run, api, job_id), f"the run of {job_id}")
        lags.add(run, sink)
    return Burst(lags, burst_at, created_in, moved_in)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=300, help="runs due in the same second")
    parser.add_argument(
        "--priority", choices=["high", "normal", "low"], default="normal", help="of those runs"
    )
    parser.add_argument("--singles", type=int, default=5, help="single at-jobs, one at a time")
    parser.add_argument(
        "--lead", type=float, default=3.0, help="seconds from creating a single job to its run"
    )
    parser.add_argument(
        "--time-limit", type=float, default=600.0, help="give up after this many seconds"
    )
    args = parser.parse_args()
    clock = Clock(args.time_limit)
    complete = True
    with tempfile.TemporaryDirectory(prefix="chronoq-bench-") as data_dir, http_sink() as sink:
        t0 = time.monotonic()
        with chronoq_local(Path(data_dir), clock) as api:
            print(f"chronoq local on {api.url} (started in {time.monotonic() - t0:.1f} s)")
            try:
                if args.singles > 0:
                    print(
                        f"\n{args.singles} single at-jobs, one at a time, each due "
                        f"{args.lead:g} s after it was created:"
                    )
                    lags = singles(api, sink, args.singles, args.lead, clock)
                    lags.report()
                    complete = complete and not lags.missing
                if args.runs > 0:
                    result = burst(api, sink, args.runs, args.priority, clock)
                    print(
                        f"\n{args.runs} http runs ({args.priority} priority) due in the same "
                        f"second, {result.burst_at:%H:%M:%SZ} (created in "
                        f"{result.created_in:.1f} s, moved to that second in "
                        f"{result.moved_in:.1f} s):"
                    )
                    result.lags.report()
                    if result.lags.start:
                        last = max(result.lags.start) / 1000
                        print(
                            f"  all {len(result.lags.start)} started within {last:.2f} s of "
                            f"their second: {len(result.lags.start) / max(last, 0.001):,.0f} "
                            "runs/s"
                        )
                    complete = complete and not result.lags.missing
            except TimeLimit as error:
                print(f"\nstopped: {error}")
                complete = False
    sys.exit(0 if complete else 1)


if __name__ == "__main__":
    main()
