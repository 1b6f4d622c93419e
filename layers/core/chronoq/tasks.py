"""The task registry: the Python functions a ``python`` target may call.

Only registered tasks run: a target naming anything else (``os:system``, say) is refused
when the job is created, and again by the runner. Register a function with ``@task``; a
deployment lists the modules holding its tasks in ``CHRONOQ_TASK_MODULES`` (comma-separated),
which the api and the runner import on first use (their settings carry the list).

A task is called as ``function(args, context)``: ``args`` is the target's JSON ``args``,
``context`` a RunContext. What it returns (anything JSON can hold) is the run's output.
Raising fails the attempt; raising PermanentError says that trying again cannot help.
What the task logs through ``context.logger`` becomes the run's log
(``GET /runs/{id}/logs``).
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chronoq.domain.errors import PermanentError

__all__ = ["PermanentError", "RunContext", "lookup", "task"]


@dataclass(frozen=True)
class RunContext:
    job_id: str
    run_id: str
    attempt: int
    scheduled_at: str
    #: Lines logged here are kept with the run.
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("chronoq.task"))
    #: The target's ``environment``, its secrets resolved (never the process's environment:
    #: other runs' tasks share it).
    environment: Mapping[str, str] = field(default_factory=dict)


Task = Callable[[dict[str, Any], RunContext], Any]
_registry: dict[str, Task] = {}


def task(function: Task) -> Task:
    """Register ``function`` under ``module:name``."""
    _registry[f"{function.__module__}:{function.__qualname__}"] = function
    return function


def lookup(name: str, modules: Iterable[str] = ()) -> Task | None:
    """The registered task called ``name``, after importing ``modules`` (the deployment's
    task modules)."""
    for module in modules:
        importlib.import_module(module)
    return _registry.get(name)


# --- built-in tasks ---------------------------------------------------------------------------


@task
def heartbeat(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """chronoq's own heartbeat (chronoq.heartbeat): a run that went the whole way."""
    return {"scheduled_at": context.scheduled_at}


@task
def echo(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """Return the arguments and the run context."""
    context.logger.info("echo %s", args)
    return {"args": args, "job_id": context.job_id, "run_id": context.run_id}


@task
def sleep(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """Sleep ``args["seconds"]`` seconds (for trying timeouts)."""
    seconds = float(args.get("seconds", 1))
    context.logger.info("sleeping %s s", seconds)
    time.sleep(seconds)
    return {"slept": seconds}


@task
def fail(args: dict[str, Any], context: RunContext) -> None:
    """Fail with ``args["message"]``; permanently if ``args["permanent"]``."""
    message = str(args.get("message", "failed on purpose"))
    context.logger.error("about to fail: %s", message)
    if args.get("permanent"):
        raise PermanentError(message)
    raise RuntimeError(message)


@task
def flaky(args: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """Fail until attempt ``args["succeed_on_attempt"]`` (for trying retries)."""
    succeed_on = int(args.get("succeed_on_attempt", 2))
    context.logger.info("attempt %s of a flaky task", context.attempt)
    if context.attempt < succeed_on:
        raise RuntimeError(f"attempt {context.attempt} fails; attempt {succeed_on} will succeed")
    return {"attempt": context.attempt}
