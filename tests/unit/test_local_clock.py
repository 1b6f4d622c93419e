"""chronoq local's clock (chronoq.local.clock): a held clock tells when its waits in progress
end, so that a test can move it straight to the next one; the wall clock's waits are as
they were."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import pytest
from chronoq.local.clock import LocalClock, Waits

#: Longest real wait for a waiting thread to get where the test expects it.
PATIENCE_SECONDS = 10.0


def _eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"not within {PATIENCE_SECONDS:.0f} s: {what}"
        time.sleep(0.01)


@contextmanager
def _waiting(
    clock: LocalClock, seconds: float, running: Callable[[], bool] = lambda: True
) -> Iterator[threading.Thread]:
    """A thread waiting ``seconds`` of ``clock`` (joined when the block ends)."""
    thread = threading.Thread(target=clock.wait, args=(seconds, None, running), daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        thread.join(PATIENCE_SECONDS)


def _ms(instant: datetime) -> datetime:
    return instant.replace(microsecond=instant.microsecond // 1000 * 1000)


def test_given_a_held_clock_when_threads_wait_then_it_tells_when_their_waits_end_soonest_first() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    start = clock.now()

    with _waiting(clock, 30) as later, _waiting(clock, 2.5) as sooner:
        _eventually(lambda: len(clock.waiting()) == 2, "both waits under way")
        ends = clock.waiting()
        assert [_ms(end) for end in ends] == [
            start + timedelta(seconds=2.5),
            start + timedelta(seconds=30),
        ]

        clock.advance_to(ends[0])  # the next instant a wait ends

        sooner.join(PATIENCE_SECONDS)
        assert not sooner.is_alive()
        assert later.is_alive()
        assert clock.waiting() == ends[1:]
        clock.advance_to(ends[1])
    assert clock.waiting() == []


def test_given_a_held_wait_when_its_execution_stops_then_it_is_no_longer_told() -> None:
    clock = LocalClock(Waits.HELD)
    running = threading.Event()
    running.set()

    with _waiting(clock, 60, running.is_set) as waiting:
        _eventually(lambda: len(clock.waiting()) == 1, "the wait under way")
        running.clear()
        waiting.join(PATIENCE_SECONDS)

    assert not waiting.is_alive()
    assert clock.waiting() == []


def test_given_a_clock_that_skips_or_the_wall_clock_when_threads_wait_then_no_wait_is_told() -> (
    None
):
    skipping = LocalClock(Waits.SKIP)
    before = skipping.now()
    skipping.wait(3600)
    assert skipping.now() >= before + timedelta(hours=1)
    assert skipping.waiting() == []

    wall = LocalClock()
    inside, stop, woken = threading.Event(), threading.Event(), threading.Event()

    def running() -> bool:
        inside.set()
        return not stop.is_set()

    waiting = threading.Thread(target=wall.wait, args=(60, woken, running), daemon=True)
    waiting.start()
    assert inside.wait(PATIENCE_SECONDS)
    told = wall.waiting()
    stop.set()
    woken.set()  # (a wall-clock wait ends early when woken and its execution stopped)
    waiting.join(PATIENCE_SECONDS)

    assert not waiting.is_alive()
    assert told == []


@pytest.mark.parametrize("announced", [True, False])
def test_given_a_held_wait_when_asked_what_waits_then_only_an_announced_one_is_listed(
    announced: bool,
) -> None:
    clock = LocalClock(Waits.HELD)
    inside, done = threading.Event(), threading.Event()

    def running() -> bool:
        inside.set()  # (the wait has begun: it asks whether to go on)
        return not done.is_set()

    waiter = threading.Thread(target=lambda: clock.wait(10, running=running, announced=announced))
    waiter.start()
    assert inside.wait(10)

    listed = clock.waiting()
    done.set()
    waiter.join(10)

    assert bool(listed) is announced
