"""A time window on chronoq local: many jobs on one cron, each run starting at its own offset
within the window instead of all in the fire time's second.

Starts ``chronoq local`` in a subprocess (as bench/lag.py does), with an HTTP sink in this
process as the jobs' target, and creates ``--jobs`` http jobs on ``* * * * *`` with
``window_seconds: --window``, each firing once: created a day ahead, then moved to the start
of a minute the dispatcher has not opened yet when they are all moved. Once every run has
called the sink, it reads each run and prints:

- how the starts spread over the window: the seconds used, the most starts in any one
  second (without a window every run would start in the fire time's second), and a
  histogram of starts per second;
- the lag of each run after its planned start (its fire time plus its offset): p50, p99,
  max (``lag_ms``, which the run records);
- whether any run started before its planned start (none should).

The last line is one JSON object (``window_max_starts_per_second``, ``window_seconds_used``,
``window_lag_p50_ms``, ``window_lag_p99_ms``, ``window_lag_max_ms``, ...). Exits 1 if a run
could not be measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from chronoq.domain.ids import first_unopened

from bench.lag import Api, Clock, TimeLimit, chronoq_local, http_sink, percentile

FINISHED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"})


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


def spec(i: int, sink_url: str, fire: datetime, window: int) -> dict[str, Any]:
    """A job on ``* * * * *`` firing once, at ``fire``, within a ``window`` s window."""
    return {
        "name": f"window-{i}",
        "schedule": {
            "type": "cron",
            "expression": "* * * * *",
            "start_at": fire.isoformat(),
            "end_at": (fire + timedelta(seconds=30)).isoformat(),
            "window_seconds": window,
        },
        "target": {"type": "http", "url": f"{sink_url}/window"},
        "retry": {"max_attempts": 1},
    }


def run_of(api: Api, job_id: str) -> dict[str, Any] | None:
    runs = api.runs(job_id)
    return runs[0] if runs and runs[0]["status"] in FINISHED else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1000, help="jobs on the one cron")
    parser.add_argument("--window", type=int, default=60, help="their window_seconds")
    parser.add_argument(
        "--time-limit", type=float, default=900.0, help="give up after this many seconds"
    )
    args = parser.parse_args()
    clock = Clock(args.time_limit)
    complete = True
    figures: dict[str, float | int | None] = {}
    with tempfile.TemporaryDirectory(prefix="chronoq-window-") as data, http_sink() as sink:
        t0 = time.monotonic()
        with chronoq_local(Path(data), clock) as api:
            print(f"chronoq local on {api.url} (started in {time.monotonic() - t0:.1f} s)")
            try:
                # Created a day ahead, then moved to the start of a minute the dispatcher
                # opens only after twice the creations' time (as bench/lag.py's burst): all
                # of them are in place before it is dispatched, however slow the machine.
                placeholder = (datetime.now(UTC) + timedelta(days=1)).replace(
                    second=0, microsecond=0
                )
                started = time.monotonic()
                job_ids = []
                for i in range(args.jobs):
                    body = spec(i, sink.url, placeholder, args.window)
                    status, job = api.call("POST", "/jobs", body)
                    if status != 201:
                        raise RuntimeError(f"creating a job answered {status}: {job}")
                    job_ids.append(job["id"])
                    if clock.left() <= 0:
                        raise TimeLimit(f"time limit reached creating the jobs ({i + 1} made)")
                created_in = time.monotonic() - started
                fire = first_unopened(datetime.now(UTC) + timedelta(seconds=2 * created_in + 10))
                started = time.monotonic()
                for job_id in job_ids:
                    moved = {"schedule": spec(0, sink.url, fire, args.window)["schedule"]}
                    status, answer = api.call("PATCH", f"/jobs/{job_id}", moved)
                    if status != 200:
                        raise RuntimeError(f"moving job {job_id} answered {status}: {answer}")
                print(
                    f"{args.jobs} jobs on * * * * * with window_seconds {args.window} created in "
                    f"{created_in:.0f} s, moved to fire at {fire:%H:%M:%SZ} in "
                    f"{time.monotonic() - started:.0f} s"
                )
                clock.poll(lambda: sink.count() >= args.jobs, "every run's call", 1.0)
                runs = [
                    clock.poll(partial(run_of, api, job_id), f"the run of {job_id}")
                    for job_id in job_ids
                ]
            except TimeLimit as error:
                print(f"\nstopped: {error}")
                runs = []
                complete = False
    measured = [r for r in runs if r["status"] == "SUCCEEDED" and r["lag_ms"] is not None]
    if runs:
        complete = complete and len(measured) == args.jobs
        per_second = Counter(parse(r["started_at"]).replace(microsecond=0) for r in measured)
        planned = Counter(parse(r["starts_at"]) for r in measured)
        lags = [float(r["lag_ms"]) for r in measured]
        early = [r["id"] for r in measured if parse(r["started_at"]) < parse(r["starts_at"])]
        busiest = max(per_second.values())
        print(f"\n{len(measured)} of {args.jobs} runs measured")
        print(
            f"  planned starts: {len(planned)} distinct seconds of the {args.window}, at most "
            f"{max(planned.values())} in one (without a window: all {args.jobs} in one)"
        )
        print(
            f"  actual starts:  {len(per_second)} distinct seconds, at most {busiest} in any "
            f"one second (mean {len(measured) / max(1, len(per_second)):.1f})"
        )
        print("  starts per second after the fire time (s: count):")
        for second in sorted(per_second):
            offset = int((second - fire).total_seconds())
            print(f"    {offset:>4} s: {per_second[second]:>4} {'#' * (per_second[second] // 2)}")
        print(
            "  lag after the planned start: "
            f"p50 {percentile(lags, 50):.0f} ms, p99 {percentile(lags, 99):.0f} ms, "
            f"max {max(lags):.0f} ms"
        )
        print(f"  started before their planned start: {len(early)}")
        complete = complete and not early
        figures = {
            "window_jobs": args.jobs,
            "window_seconds": args.window,
            "window_seconds_used": len(per_second),
            "window_max_starts_per_second": busiest,
            "window_max_planned_per_second": max(planned.values()),
            "window_lag_p50_ms": percentile(lags, 50),
            "window_lag_p99_ms": percentile(lags, 99),
            "window_lag_max_ms": max(lags),
            "window_started_early": len(early),
        }
    print(json.dumps({**figures, "complete": complete}))
    sys.exit(0 if complete else 1)


if __name__ == "__main__":
    main()
