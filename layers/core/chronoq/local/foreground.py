"""Requests first: while chronoq local answers API requests, its background work (the ticker,
the workers, the state machine's executions, the streams' readers) makes way between the
AWS calls it makes, so that a request is answered in about the time its own work takes,
however busy the system is (one process shares its cores between all of them: without this,
a request waits its turn behind every busy thread at each call it makes).

A background call waits at most ``pause_seconds`` for the requests in flight to end, and a
thread that has just made way does not make way again for as long: under requests that never
stop, the background's work goes on at half its pace or better (and a background thread
holding something a request waits for delays that request by ``pause_seconds`` at most).
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import threading
import time
from collections.abc import Callable, Iterator

#: Does this context answer an API request? (A context, not a thread: what a request hands
#: to a pool of threads in a copy of its context is the request's work too.)
_serving: contextvars.ContextVar[bool] = contextvars.ContextVar("chronoq_serving", default=False)

#: How long a background call waits at most for the requests in flight.
PAUSE_SECONDS = 0.05


class Foreground:
    def __init__(
        self, pause_seconds: float = PAUSE_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.pause_seconds = pause_seconds
        self._clock = clock
        self._in_flight = 0
        self._waiting = 0
        self._ended = threading.Condition()
        #: When each background thread last went on after making way.
        self._went_on = threading.local()

    @property
    def in_flight(self) -> int:
        """Requests being answered."""
        return self._in_flight

    @property
    def waiting(self) -> int:
        """Background calls making way right now."""
        return self._waiting

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """A request is answered meanwhile, in this context."""
        token = _serving.set(True)
        with self._ended:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._ended:
                self._in_flight -= 1
                if not self._in_flight:
                    self._ended.notify_all()
            _serving.reset(token)

    def make_way(self) -> None:
        """Called by background work between its calls: wait for the requests in flight to
        end (at most ``pause_seconds``, and not again within ``pause_seconds`` of going on).
        A request's own calls never wait."""
        if not self._in_flight or _serving.get():
            return
        went_on: float | None = getattr(self._went_on, "at", None)
        if went_on is not None and self._clock() - went_on < self.pause_seconds:
            return  # (it made way a moment ago: its turn to go on)
        with self._ended:
            self._waiting += 1
            try:
                self._ended.wait_for(lambda: not self._in_flight, timeout=self.pause_seconds)
            finally:
                self._waiting -= 1
        self._went_on.at = self._clock()


def freeze_startup_heap() -> None:
    """What ``chronoq local`` built as it started (the modules, the AWS models, the
    resources) lives as long as the process: kept out of the garbage collector's full
    collections from now on, each of which would otherwise walk it all, stopping every thread
    for up to half a second on a busy machine (docs/performance.md, "What chronoq local
    carries")."""
    gc.collect()
    gc.freeze()
