"""moto's SQS by chronoq local's clock."""

from __future__ import annotations

import datetime

from chronoq.local.emulation.state import active


def queues_follow_the_clock() -> None:
    """moto's SQS times message delays, visibility timeouts and retention by the wall clock:
    make it follow chronoq local's clock (the active state's: see chronoq.local.emulation.state)
    too, so that a run sent with a delay reaches a worker when that clock says, as everything
    else in chronoq local sees it."""
    from moto.sqs import models

    if getattr(models.unix_time, "clocked", False):  # type: ignore[attr-defined]
        return

    def unix_time(dt: datetime.datetime | None = None) -> float:
        instant = active().clock.now() if dt is None else dt.replace(tzinfo=datetime.UTC)
        return instant.timestamp()

    def unix_time_millis(dt: datetime.datetime | None = None) -> float:
        return unix_time(dt) * 1000.0

    unix_time.clocked = True  # type: ignore[attr-defined]
    models.unix_time = unix_time  # type: ignore[attr-defined]
    models.unix_time_millis = unix_time_millis  # type: ignore[attr-defined]
