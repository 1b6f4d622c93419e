"""How long an attempt or a notification waited on something outside chronoq: a target's
answer, a webhook's, a python task's own work. Whoever listens is told (chronoq local prices
the time an invocation spends waiting from it: chronoq.local.durations); nothing listens in
Lambda, where a wait costs one clock reading."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: Told the seconds of each wait, in the thread that waited.
_listeners: list[Callable[[float], None]] = []


def listen(listener: Callable[[float], None]) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def unlisten(listener: Callable[[float], None]) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


@contextmanager
def waiting() -> Iterator[None]:
    """A wait on something outside chronoq."""
    if not _listeners:
        yield
        return
    started = time.monotonic()
    try:
        yield
    finally:
        waited = time.monotonic() - started
        for listener in list(_listeners):
            listener(waited)
