"""chronoq local's time: what its functions (through chronoq.compose) and the state machine's
Wait states (through chronoq.local.emulation) take as now, and how they wait.

By default the wall clock. Tests whose subject is not timing give chronoq local a clock that
runs with the wall clock and moves on when something waits (``SKIP``: a run due in three
seconds starts at once, its clock three seconds on; a retry's wait costs nothing), or one that
stands still until the test moves it (``HELD``: a wait lasts until the test advances the clock
past its end, so that a test can act while a run waits, or let minutes pass in an instant;
``waiting`` tells the test when the held waits end, so that it can move the clock straight to
the next one). Either way time only moves forward, and every part of chronoq local that asks
for the time gets the same answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum


class Waits(Enum):
    WALL = "wall"
    SKIP = "skip"
    HELD = "held"


#: How often a held wait looks at whether its execution was stopped meanwhile.
_HELD_POLL_SECONDS = 0.05


class LocalClock:
    """The wall clock, shifted forward by what waits skipped or a test advanced."""

    def __init__(self, waits: Waits = Waits.WALL) -> None:
        self.waits = waits
        self._offset = 0.0
        self._moved = threading.Condition()
        #: A held clock stands still (at the instant it was made) until it is moved.
        self._held_at = datetime.now(UTC) if waits is Waits.HELD else None
        #: Told each time the clock moves on (queue pollers: a delayed message may be due).
        self._listeners: list[Callable[[], None]] = []
        #: When each held wait in progress ends.
        self._held: list[datetime] = []

    def listen(self, moved: Callable[[], None]) -> None:
        """Call ``moved`` each time this clock is moved on."""
        self._listeners.append(moved)

    def _tell(self) -> None:
        for moved in list(self._listeners):
            moved()

    def _base(self) -> datetime:
        return self._held_at or datetime.now(UTC)

    def now(self) -> datetime:
        """Now, in UTC, to the millisecond (as chronoq.domain.time.utc_now)."""
        with self._moved:
            offset = self._offset
        instant = self._base() + timedelta(seconds=offset)
        return instant.replace(microsecond=instant.microsecond // 1000 * 1000)

    def advance(self, seconds: float) -> datetime:
        """Move the clock on by ``seconds`` (waits that end by then end)."""
        with self._moved:
            self._offset += max(0.0, seconds)
            self._moved.notify_all()
        self._tell()
        return self.now()

    def advance_to(self, instant: datetime) -> None:
        """Move the clock on to ``instant``, unless it is already past it."""
        with self._moved:
            behind = (instant - self._base()).total_seconds() - self._offset
            if behind <= 0:
                return
            self._offset += behind
            self._moved.notify_all()
        self._tell()

    def waiting(self) -> list[datetime]:
        """When the held waits in progress end, soonest first (none on a clock that does not
        hold its waits)."""
        with self._moved:
            return sorted(self._held)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock (chronoq's functions' ``sleep``)."""
        self.wait(seconds)

    def wait(
        self,
        seconds: float,
        woken: threading.Event | None = None,
        running: Callable[[], bool] = lambda: True,
        announced: bool = True,
    ) -> None:
        """Wait ``seconds`` of this clock; a wall-clock wait ends early when ``woken`` is set
        and ``running()`` no longer holds (an execution stopped), a held one too. A held wait
        is ``announced`` in ``waiting`` (whoever moves the clock may move it to its end); a
        task's timeout is not (the task is at work meanwhile, not waiting for that time)."""
        if seconds <= 0:
            return
        if self.waits is Waits.WALL:
            deadline = time.monotonic() + seconds
            while running() and (left := deadline - time.monotonic()) > 0:
                if woken is None:
                    time.sleep(left)
                else:
                    woken.wait(left)
            return
        until = self.now() + timedelta(seconds=seconds)
        if self.waits is Waits.SKIP:
            self.advance_to(until)
            return
        with self._moved:
            if announced:
                self._held.append(until)
            try:
                while running() and self.now() < until:
                    self._moved.wait(_HELD_POLL_SECONDS)
            finally:
                if announced:
                    self._held.remove(until)


#: The wall clock (what chronoq local runs on unless told otherwise).
WALL = LocalClock()
