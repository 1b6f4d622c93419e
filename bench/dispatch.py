"""Dispatcher benchmark: AWS requests per run and throughput, on the embedded AWS.

Creates N recurring jobs due in the same minute, then times one dispatcher tick that
enqueues them all and writes each job's next occurrence. Prints the requests it made, by
operation, per run dispatched; what they cost per million runs at list prices; and the
throughput with and without the time spent inside the embedded AWS (moto), i.e. of
chronoq's own code.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

# The dispatcher's cost only: runs are left on their queues.
PRICES = {  # us-east-1 list prices per request-unit
    "dynamodb_write": 0.625e-6,
    "dynamodb_read": 0.125e-6,
    "sqs": 0.40e-6,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        help="1 (default) keeps the tick on one thread, so that AWS time and own time add up",
    )
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

    from chronoq import compose
    from chronoq.domain.jobs import JobSpec
    from chronoq.fakes import FakeClock
    from chronoq.local.aws import LocalAWS
    from chronoq.settings import ApiSettings, DispatcherSettings
    from moto.core.botocore_stubber import BotocoreStubber

    aws = LocalAWS(shards=args.shards).start()
    clock = FakeClock(datetime(2030, 1, 1, 11, 58, 30, tzinfo=UTC))
    jobs = compose.api(aws.settings(ApiSettings)).jobs
    dispatcher = compose.dispatcher(aws.settings(DispatcherSettings))
    jobs.clock = jobs.index.clock = dispatcher.clock = dispatcher.index.clock = clock
    dispatcher.dispatch()  # a deployment's dispatcher has been ticking: checkpoints exist
    spec = JobSpec.model_validate(
        {
            "name": "bench",
            "schedule": {"type": "cron", "expression": "0 12 * * *"},
            "target": {"type": "http", "url": "https://example.com/"},
        }
    )
    started = time.perf_counter()
    for _ in range(args.jobs):
        jobs.create_job("bench", spec)
    print(f"created {args.jobs} jobs due at 12:00 in {time.perf_counter() - started:.1f} s")

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
    report = dispatcher.dispatch()
    elapsed = time.perf_counter() - t0
    BotocoreStubber.process_request = original  # type: ignore[method-assign]
    units = aws.usage_document()["dynamodb"]  # as DynamoDB bills them, from item sizes
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


if __name__ == "__main__":
    main()
