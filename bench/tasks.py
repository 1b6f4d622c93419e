"""Python tasks of the benchmarks (``chronoq local --task-modules bench.tasks``)."""

from __future__ import annotations

from typing import Any

from chronoq.tasks import RunContext, task


@task
def work(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """A small task: fails its first attempt if ``args["fail_first"]``, else answers at once."""
    if args.get("fail_first") and context.attempt == 1:
        raise RuntimeError("attempt 1 fails on purpose; attempt 2 will succeed")
    return {"attempt": context.attempt}
