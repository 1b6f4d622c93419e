"""Dispatcher benchmark: its own code's throughput on the adapters' in-memory fakes, and its
AWS requests per run on the embedded AWS.

1. Own code: ``--runs`` (default 100,000) one-time runs due in one minute, spread over its
   seconds, across ``--fake-shards`` (default 32) shards, dispatched by the real dispatcher
   code (its threads as in Lambda) over the in-memory fakes: runs per second per process,
   and the process's peak memory.
2. On the embedded AWS (moto): ``--jobs`` recurring jobs due in the same minute, one tick
   that enqueues them all and writes each job's next occurrence: the requests it made, by
   operation, per run dispatched; what they cost per million runs at list prices; the
   throughput with and without the time spent inside moto.

3. Own code around a change of the clocks: ``--cron-runs`` (default 10,000) jobs of
   ``* * * * *`` in Europe/London due in one minute, dispatched (each run's job checked and
   chained on to its next minute: two next fire times per run) in an ordinary hour and right
   after the clocks went forward and back: runs per second (the median of three).

The last line of output is one JSON object (``dispatch_requests_per_run``,
``dispatch_runs_per_second``: the fakes' figure, ``dispatch_peak_memory_mb``,
``dispatch_cron_runs_per_second``: by minute of DST_MINUTES),
for tools.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobSpec
from chronoq.domain.runs import Occurrence
from chronoq.fakes import FakeClock, FakeQueues, FakeStore
from chronoq.fakes.audit import FakeAuditTrail
from chronoq.local.usage import calling_as
from chronoq.usecases.dispatch import Dispatcher
from chronoq.usecases.jobs import JobOperations
from chronoq.usecases.pages import PageTokens
from chronoq.usecases.timeindex import TimeIndex

# The dispatcher's cost only: runs are left on their queues.
PRICES = {  # us-east-1 list prices per request-unit
    "dynamodb_write": 0.625e-6,
    "dynamodb_read": 0.125e-6,
    "sqs": 0.40e-6,
}


#: The minute the fakes' runs are due in, and the tick that dispatches it.
MINUTE = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
TICK = MINUTE - timedelta(seconds=55)


def due_minute(store: FakeStore, shards: int, runs: int, clock: FakeClock) -> list[str]:
    """``runs`` one-time jobs due in MINUTE, spread over its seconds, stored with their
    occurrences in the time index (as creating them does, faster); their run ids."""
    queues = FakeQueues()
    index = TimeIndex(store, queues, shards, clock)
    jobs = JobOperations(
        store, index, clock, None, bool, PageTokens(lambda: "bench"), FakeAuditTrail()
    )
    clock.now = MINUTE - timedelta(minutes=10)
    templates: list[Job] = [
        jobs.create_job(
            "bench",
            JobSpec.model_validate(
                {
                    "name": f"bench-{s}",  # (names are unique per owner)
                    "schedule": {"type": "at", "at": (MINUTE + timedelta(seconds=s)).isoformat()},
                    "target": {"type": "http", "url": "https://example.com/"},
                }
            ),
        )
        for s in range(60)
    ]
    store.jobs.clear()
    store.schedule.clear()
    occurrences = []
    for i in range(runs):
        template = templates[i % 60]
        job = template.model_copy(update={"id": f"job_{i:016x}"})
        store.put_new_job(job)
        assert job.next_run_at is not None
        occurrences.append(
            Occurrence(
                job_id=job.id,
                run_id=ids.run_id(job.id, job.next_run_at, job.generation),
                scheduled_at=job.next_run_at,
                priority=job.priority,
                generation=job.generation,
            )
        )
    store.put_occurrences(occurrences, shards, clock.now)
    return [o.run_id for o in occurrences]


def own_code(runs: int, shards: int) -> tuple[float, float]:
    """Runs per second of the dispatcher over the fakes, and the peak memory (MB)."""
    clock = FakeClock(MINUTE)
    store, queues = FakeStore(), FakeQueues()
    due_minute(store, shards, runs, clock)
    dispatcher = Dispatcher(store, TimeIndex(store, queues, shards, clock), shards, clock)
    clock.now = TICK - timedelta(minutes=1)
    dispatcher.dispatch()  # the minutes before: checkpoints exist, as in a deployment
    clock.now = TICK
    started = time.perf_counter()
    report = dispatcher.dispatch()
    elapsed = time.perf_counter() - started
    assert report.dispatched == runs == len(queues.sent), report
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"own code, on the in-memory fakes: {runs:,} runs due in one minute over {shards} "
        f"shards dispatched in {elapsed:.2f} s = {runs / elapsed:,.0f} runs/s per process; "
        f"peak memory {peak_mb:.0f} MB"
    )
    return runs / elapsed, peak_mb


#: A zone whose clocks change, and due minutes of an ordinary hour and of the hours of the
#: changes in 2030: forward at 01:00 UTC on 31 March (01:00-01:59 local is skipped: the jump
#: fires, then 02:01 BST and on), back at 01:00 UTC on 27 October (01:00-01:59 local repeats:
#: every-minute jobs fired in its first pass, and fire again at 02:00 UTC, 02:00 GMT).
DST_ZONE = "Europe/London"
DST_MINUTES = {
    "ordinary": datetime(2030, 3, 24, 1, 30, tzinfo=UTC),
    "at_the_jump_forward": datetime(2030, 3, 31, 1, 0, tzinfo=UTC),
    "after_spring_forward": datetime(2030, 3, 31, 1, 30, tzinfo=UTC),
    "after_fall_back": datetime(2030, 10, 27, 2, 0, tzinfo=UTC),
}


def every_minute(runs: int, shards: int, minute: datetime) -> float:
    """Runs per second of the dispatcher over the fakes, dispatching ``minute`` for ``runs``
    jobs of "* * * * *" in DST_ZONE."""
    clock = FakeClock(minute - timedelta(seconds=1))
    store, queues = FakeStore(), FakeQueues()
    index = TimeIndex(store, queues, shards, clock)
    jobs = JobOperations(
        store, index, clock, None, bool, PageTokens(lambda: "bench"), FakeAuditTrail()
    )
    template = jobs.create_job(
        "bench",
        JobSpec.model_validate(
            {
                "name": "bench",
                "schedule": {"type": "cron", "expression": "* * * * *", "timezone": DST_ZONE},
                "target": {"type": "http", "url": "https://example.com/"},
            }
        ),
    )
    assert template.next_run_at == minute, template.next_run_at
    store.jobs.clear()
    store.schedule.clear()
    occurrences = []
    for i in range(runs):
        job = template.model_copy(update={"id": f"job_{i:016x}"})
        store.put_new_job(job)
        occurrences.append(
            Occurrence(
                job_id=job.id,
                run_id=ids.run_id(job.id, minute, job.generation),
                scheduled_at=minute,
                priority=job.priority,
                generation=job.generation,
            )
        )
    store.put_occurrences(occurrences, shards, clock.now)
    dispatcher = Dispatcher(store, index, shards, clock)
    tick = minute - (MINUTE - TICK)
    clock.now = tick - timedelta(minutes=1)
    dispatcher.dispatch()  # the minutes before: checkpoints exist, as in a deployment
    clock.now = tick
    started = time.perf_counter()
    report = dispatcher.dispatch()
    elapsed = time.perf_counter() - started
    assert report.dispatched == report.scheduled == runs == len(queues.sent), report
    return runs / elapsed


def around_clock_changes(runs: int, shards: int) -> dict[str, float]:
    """Runs per second in each of DST_MINUTES (the median of three, taken in turns)."""
    figures: dict[str, list[float]] = {name: [] for name in DST_MINUTES}
    for _ in range(3):
        for name, minute in DST_MINUTES.items():
            figures[name].append(every_minute(runs, shards, minute))
    medians = {name: statistics.median(values) for name, values in figures.items()}
    ordinary = medians["ordinary"]
    print(
        f"own code, {runs:,} jobs of '* * * * *' in {DST_ZONE} due in one minute, "
        f"on the in-memory fakes (median of 3):"
    )
    for name, minute in DST_MINUTES.items():
        local = minute.astimezone(ZoneInfo(DST_ZONE))
        print(
            f"  {name.replace('_', ' '):<22} {minute:%Y-%m-%d %H:%M}Z ({local:%H:%M %Z}): "
            f"{medians[name]:8,.0f} runs/s  ({medians[name] / ordinary:.2f} x ordinary)"
        )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000, help="runs on the fakes")
    parser.add_argument("--fake-shards", type=int, default=32, help="shards on the fakes")
    parser.add_argument("--jobs", type=int, default=500, help="jobs on the embedded AWS")
    parser.add_argument(
        "--cron-runs", type=int, default=10_000, help="every-minute jobs around clock changes"
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=r.DEFAULT_SHARDS,
        help="shards on the embedded AWS (default: chronoq local's; with 1 the tick runs on one"
        " thread, and the time inside the embedded AWS and chronoq's own add up)",
    )
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    runs_per_second, peak_mb = own_code(args.runs, args.fake_shards)
    print()
    cron_runs_per_second = around_clock_changes(args.cron_runs, args.fake_shards)
    print()

    from chronoq import compose
    from chronoq.local.aws import LocalAWS
    from chronoq.settings import ApiSettings, DispatcherSettings
    from moto.core.botocore_stubber import BotocoreStubber

    aws = LocalAWS(shards=args.shards).start()
    clock = FakeClock(datetime(2030, 1, 1, 11, 58, 30, tzinfo=UTC))
    jobs = compose.api(aws.settings(ApiSettings)).jobs
    dispatcher = compose.dispatcher(aws.settings(DispatcherSettings))
    jobs.clock = jobs.index.clock = dispatcher.clock = dispatcher.index.clock = clock
    dispatcher.dispatch()  # a deployment's dispatcher has been ticking: checkpoints exist
    specs = [  # half recurring, half one-time
        JobSpec.model_validate(
            {
                "name": "bench",
                "schedule": schedule,
                "target": {"type": "http", "url": "https://example.com/"},
            }
        )
        for schedule in (
            {"type": "cron", "expression": "0 12 * * *"},
            {"type": "at", "at": "2030-01-01T12:00:00Z"},
        )
    ]
    started = time.perf_counter()
    for i in range(args.jobs):
        spec = specs[i % 2]
        jobs.create_job("bench", spec.model_copy(update={"name": f"bench-{i}"}))
    print(
        f"created {args.jobs} jobs (half cron, half one-time) due at 12:00 in "
        f"{time.perf_counter() - started:.1f} s"
    )

    calls: Counter[str] = Counter()
    items: Counter[str] = Counter()
    in_aws = 0.0
    original = BotocoreStubber.process_request

    def counting(self: Any, request: Any) -> Any:
        nonlocal in_aws
        target = request.headers.get("X-Amz-Target", b"")
        operation = target.decode().rsplit(".", 1)[-1] if target else "SendMessageBatch"
        calls[operation] += 1
        t0 = time.perf_counter()
        try:
            return original(self, request)
        finally:
            in_aws += time.perf_counter() - t0

    BotocoreStubber.process_request = counting  # type: ignore[method-assign]
    clock.now = datetime(2030, 1, 1, 11, 59, 5, tzinfo=UTC)  # the tick that dispatches 12:00
    aws.reset_usage()
    t0 = time.perf_counter()
    with calling_as(r.DISPATCHER_FUNCTION.name):  # as chronoq local's runtime tells callers apart
        report = dispatcher.dispatch()
    elapsed = time.perf_counter() - t0
    BotocoreStubber.process_request = original  # type: ignore[method-assign]
    usage = aws.usage_document()  # chronoq local's usage meter: requests, units from item sizes
    units = usage["dynamodb"]
    by_dispatcher = usage["aws_requests_by_caller"].get(r.DISPATCHER_FUNCTION.name, 0)
    aws.stop()

    runs = report.dispatched
    assert runs == args.jobs, report
    print(
        f"dispatched {runs} runs over {args.shards} shard(s); "
        f"wrote {report.scheduled} next occurrences"
    )
    print("\nAWS requests by operation (per run):")
    for operation, count in sorted(calls.items()):
        print(f"  {operation:<22} {count:6d}  {count / runs:6.3f}")
    total = sum(calls.values())
    print(f"  {'total':<22} {total:6d}  {total / runs:6.3f}")
    print(
        f"  the usage document's aws_requests_by_caller: dispatcher {by_dispatcher} = "
        f"{by_dispatcher / runs:.3f} per run"
    )
    # Request units as chronoq local's usage meter counts them; an SQS batch request of ten
    # 1-KB messages is 1 request.
    writes, reads = units["write_units"], units["read_units"]
    cost = writes * PRICES["dynamodb_write"] + reads * PRICES["dynamodb_read"]
    cost += (calls["SendMessageBatch"]) * PRICES["sqs"]
    items.update(writes=writes, reads=reads)
    print(f"\nDynamoDB units per run: {writes / runs:.2f} write, {reads / runs:.2f} read")
    print(f"dispatcher cost per million runs: ${cost / runs * 1e6:.2f}")
    print(f"\ntick took {elapsed:.2f} s: {runs / elapsed:,.0f} runs/s on the embedded AWS")
    if args.shards == 1:
        own = elapsed - in_aws
        print(
            f"time inside the embedded AWS: {in_aws:.2f} s; chronoq's own code: {own:.2f} s "
            f"= {runs / own:,.0f} runs/s per process"
        )
    print(
        json.dumps(
            {
                "dispatch_requests_per_run": round(by_dispatcher / runs, 4),
                "dispatch_runs_per_second": round(runs_per_second),
                "dispatch_peak_memory_mb": round(peak_mb, 1),
                "dispatch_cron_runs_per_second": {
                    name: round(value) for name, value in cron_runs_per_second.items()
                },
            }
        )
    )


if __name__ == "__main__":
    main()
