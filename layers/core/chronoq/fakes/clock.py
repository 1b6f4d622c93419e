"""A clock that moves only when told to (or when someone sleeps on it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC))
    #: Every sleep asked for, in seconds.
    slept: list[float] = field(default_factory=list)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def set(self, instant: datetime) -> None:
        self.now = instant

    def sleep(self, seconds: float) -> None:
        """Sleeping on a fake clock moves it on."""
        self.slept.append(seconds)
        self.advance(seconds)
