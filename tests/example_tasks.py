"""A deployment's own tasks, as a user would write them (used by the tests)."""

from __future__ import annotations

from typing import Any

from chronoq.tasks import PermanentError, RunContext, task


@task
def double(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    return {"doubled": args["n"] * 2, "attempt": context.attempt}


class MissingSetting(PermanentError):
    """A user's own kind of permanent failure."""


@task
def misconfigured(args: dict[str, Any], context: RunContext) -> None:
    context.logger.error("first line of the problem\nsecond line of the problem")
    raise MissingSetting("REPORT_BUCKET is not set")
