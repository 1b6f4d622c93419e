"""A deployment's own tasks, as a user would write them (used by the tests)."""

from __future__ import annotations

from typing import Any

from chronoq.tasks import RunContext, task


@task
def double(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    return {"doubled": args["n"] * 2, "attempt": context.attempt}
