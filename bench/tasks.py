"""Python tasks of the benchmarks (``chronoq local --task-modules bench.tasks``)."""

from __future__ import annotations

import time
from typing import Any

from chronoq.tasks import RunContext, task


@task
def work(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """A small task: fails its first attempt if ``args["fail_first"]``, else answers at once."""
    if args.get("fail_first") and context.attempt == 1:
        raise RuntimeError("attempt 1 fails on purpose; attempt 2 will succeed")
    return {"attempt": context.attempt}


@task
def sleep(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """A task that takes ``args["seconds"]`` (a long run of one owner's: bench/fairness.py)."""
    time.sleep(float(args.get("seconds", 1)))
    return {"slept": args.get("seconds", 1)}
