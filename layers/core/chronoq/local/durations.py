"""What AWS would bill in milliseconds (Lambda invocations, EXPRESS executions), from what
each one did rather than from how fast this machine did it.

An invocation's billed duration is modeled as its handler's own work (``handler_ms``, warm,
at the function's memory size), plus the round trip of every AWS request it made
(``request_ms``, by service: typical in-region latencies from Lambda), plus the time it
waited on something outside AWS: a target's or a webhook's answer, a python task's own
work (measured: that is the target's time, which AWS bills the same). Requests made side by
side (a worker starting a batch's executions in parallel) count as the longest of the
threads that made them, not their sum.

An EXPRESS execution's duration is its path through its states: ``state_ms`` per state
entered, each task's call (a Lambda invocation as modeled above, or a service integration's
request), the seconds its Wait states and retry intervals held it, and, for a Map, its
longest iteration (see chronoq.local.engine.interpreter). chronoq local's moto engine
measures EXPRESS durations instead (its executions are moto's).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class DurationModel:
    #: Each function's own work per warm invocation, in milliseconds.
    handler_ms: Mapping[str, float]
    #: One request's round trip, by service (as operation keys name it: ``dynamodb``,
    #: ``sqs``, ...), in milliseconds.
    request_ms: Mapping[str, float]
    #: A service the table does not name.
    other_request_ms: float
    #: What entering one state of an EXPRESS execution takes.
    state_ms: float

    def handler(self, function: str) -> float:
        return self.handler_ms.get(function, max(self.handler_ms.values()))

    def request(self, operation: str) -> float:
        return self.request_ms.get(operation.partition(":")[0], self.other_request_ms)


#: The model chronoq local prices with.
MODEL = DurationModel(
    handler_ms={
        "api": 6.0,
        "dispatcher": 10.0,
        "worker": 8.0,  # (128 MB: a slow share of a CPU)
        "runner": 5.0,
        "notifier": 5.0,
        # a batch of ended runs decoded, grouped by owner and day, compressed (bench/archive)
        "archiver": 25.0,
        "console": 3.0,
    },
    request_ms={
        "dynamodb": 4.0,
        "sqs": 8.0,
        "stepfunctions": 15.0,
        "lambda": 10.0,  # (the invoke itself: the function's own time comes on top)
        "s3": 15.0,
        "sns": 12.0,
        "events": 12.0,
        "ses": 25.0,
        "secretsmanager": 10.0,
        "ssm": 10.0,
        "logs": 8.0,
        "ecs": 40.0,
    },
    other_request_ms=10.0,
    state_ms=5.0,
)


@dataclass
class Ledger:
    """The modeled milliseconds of one invocation or task, by the thread that spent them."""

    base_ms: float = 0.0
    _owner: threading.Thread = field(default_factory=threading.current_thread)
    #: (threads, not their idents: an ident is reused once its thread ends, and a pool's
    #: thread that runs several pieces of work in turn spends their sum)
    _by_thread: dict[threading.Thread, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def spend(self, milliseconds: float) -> None:
        thread = threading.current_thread()
        with self._lock:
            self._by_thread[thread] = self._by_thread.get(thread, 0.0) + milliseconds

    @property
    def milliseconds(self) -> float:
        """Its own thread's time, and the longest of the threads it started."""
        with self._lock:
            own = self._by_thread.get(self._owner, 0.0)
            others = [ms for thread, ms in self._by_thread.items() if thread != self._owner]
        return self.base_ms + own + max(others, default=0.0)


_ledger: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar(
    "chronoq_ledger", default=None
)


def modeled(base_ms: float = 0.0) -> contextlib.AbstractContextManager[Ledger]:
    """A new ledger for what runs meanwhile in this context (see ``kept_in``)."""
    return kept_in(Ledger(base_ms))


@contextlib.contextmanager
def kept_in(ledger: Ledger) -> Iterator[Ledger]:
    """``ledger`` for what runs meanwhile in this context (and the threads it hands its
    context to); once closed, its time is spent in the ledger around it, if any (a task
    waits for the invocation it made)."""
    token = _ledger.set(ledger)
    try:
        yield ledger
    finally:
        _ledger.reset(token)
        outer = _ledger.get()
        if outer is not None:
            outer.spend(ledger.milliseconds)


def request(operation: str, model: DurationModel = MODEL) -> None:
    """An AWS request made in this context."""
    ledger = _ledger.get()
    if ledger is not None:
        ledger.spend(model.request(operation))


def outside(seconds: float) -> None:
    """Time this context waited on something outside AWS (a target, a webhook)."""
    ledger = _ledger.get()
    if ledger is not None:
        ledger.spend(seconds * 1000)


def task_cost(call: Callable[[], T], spend: Callable[[float], None]) -> T:
    """Run a state machine task's call (its result), telling ``spend`` its modeled
    milliseconds, also when it fails (a failed invocation is billed too)."""
    with modeled() as ledger:
        try:
            return call()
        finally:
            spend(ledger.milliseconds)
