"""When does a schedule fire next? Pure functions over the schedule models.

Cron expressions are matched on local wall-clock time in the schedule's time zone, then mapped
to instants the way users expect across daylight-saving changes:

- a local time that does not exist (skipped by spring-forward) fires once, at the first valid
  instant after the gap (the moment the clocks jump);
- a local time that exists twice (repeated by fall-back) fires once, at its first occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from chronoq.models import (
    AtSchedule,
    CronSchedule,
    RateSchedule,
    anchored,
    format_instant,
    utc_second,
)

Schedule = AtSchedule | CronSchedule | RateSchedule

# Longer than any UTC offset change, so that scanning local times from here never misses one.
_LOOKBACK = timedelta(hours=3)
_SECOND = timedelta(seconds=1)


def next_fire(schedule: Schedule, after: datetime) -> datetime | None:
    """The first instant strictly after ``after`` at which ``schedule`` fires, in UTC; None
    when it fires no more."""
    after = after.astimezone(UTC)
    if isinstance(schedule, AtSchedule):
        return schedule.at if schedule.at > after else None
    if schedule.start_at is not None and after < schedule.start_at:
        after = schedule.start_at - _SECOND  # instants are whole seconds: start_at is in reach
    found = (
        _next_rate(schedule, after)
        if isinstance(schedule, RateSchedule)
        else _next_cron(schedule, after)
    )
    if schedule.end_at is not None and found > schedule.end_at:
        return None
    return found


def _next_rate(schedule: RateSchedule, after: datetime) -> datetime:
    anchor = schedule.start_at or utc_second(after + schedule.period)
    if after < anchor:
        return anchor
    periods = (after - anchor) // schedule.period + 1
    return anchor + periods * schedule.period


def _next_cron(schedule: CronSchedule, after: datetime) -> datetime:
    for instant in _cron_instants(schedule, after - _LOOKBACK):
        if instant > after:
            return instant
    raise AssertionError("unreachable: croniter iterates without end")


def fire_times(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """The next ``count`` fire instants strictly after ``after``."""
    result: list[datetime] = []
    current: datetime | None = after
    while current is not None and len(result) < count:
        current = next_fire(schedule, current)
        if current is not None:
            result.append(current)
    return result


def _cron_instants(schedule: CronSchedule, start: datetime) -> Iterator[datetime]:
    """Instants of the cron expression from ``start`` on, non-decreasing."""
    zone = schedule.zone
    local_start = start.astimezone(zone).replace(tzinfo=None)
    walker = croniter(schedule.expression, local_start)
    while True:
        local: datetime = walker.get_next(datetime)
        yield to_instant(local, zone)


def to_instant(local: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant of naive wall-clock time ``local`` in ``zone``.

    Repeated times resolve to their first occurrence; skipped times to the end of the gap.
    """
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == local:
        return first
    # ``local`` falls in a gap: the clocks jumped between the instant that fold=1 maps to
    # (before the jump) and the one that fold=0 maps to (after it). Find the jump.
    low = int(local.replace(tzinfo=zone, fold=1).astimezone(UTC).timestamp())
    high = int(first.timestamp())
    offset_after = first.astimezone(zone).utcoffset()
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset_after:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


def preview(schedule: Schedule, now: datetime, count: int) -> list[dict[str, str]]:
    """The next ``count`` fire instants after ``now``, in UTC and in the schedule's zone (a
    rate without ``start_at`` is taken as created now)."""
    schedule = anchored(schedule, now)
    zone = schedule.zone if isinstance(schedule, CronSchedule) else ZoneInfo("UTC")
    return [
        {"utc": format_instant(t), "local": t.astimezone(zone).isoformat()}
        for t in fire_times(schedule, now, count)
    ]
