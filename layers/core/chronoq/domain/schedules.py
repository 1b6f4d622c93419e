"""Schedules: when a job fires. The models (``at``, ``cron``, ``rate``) and pure functions over
them.

Cron expressions are matched on local wall-clock time in the schedule's time zone, then mapped
to instants the way users expect across daylight-saving changes:

- a local time that does not exist (skipped by spring-forward) fires once, at the first valid
  instant after the gap (the moment the clocks jump);
- a local time that exists twice (repeated by fall-back) fires once, at its first occurrence.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from pydantic import AwareDatetime, Field, ValidationInfo, field_validator

from chronoq import resources as r
from chronoq.domain.base import Model
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.time import format_instant, utc_second

_EARLIEST = datetime(r.EARLIEST_YEAR, 1, 1, tzinfo=UTC)
_LATEST = datetime(r.LATEST_YEAR, 1, 1, tzinfo=UTC)


def bounded_instant(value: datetime) -> datetime:
    """``value`` in UTC, rounded up to the whole second, if it lies in the years a schedule
    may name (instants near the calendar's ends cannot be computed with)."""
    try:
        utc = value.astimezone(UTC)
        if not _EARLIEST <= utc < _LATEST:
            raise OverflowError
        return utc_second(utc)
    except OverflowError:
        raise ValueError(
            f"must be from {r.EARLIEST_YEAR}-01-01 to before {r.LATEST_YEAR}-01-01 (UTC)"
        ) from None


class NeverFires(ValueError):
    """A cron expression matches no date (e.g. February 30th), or none for too long."""


class AtSchedule(Model):
    """Once, at an instant. Fractions of a second are rounded up to the next whole second."""

    type: Literal["at"]
    at: AwareDatetime

    @field_validator("at")
    @classmethod
    def _to_utc_second(cls, value: datetime) -> datetime:
        return bounded_instant(value)


class _Recurring(Model):
    """Optional bounds of a recurring schedule: it fires at or after ``start_at`` and at or
    before ``end_at``."""

    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None
    #: Each occurrence starts within this many seconds after its fire time, at an offset
    #: derived from the job and the instant (see chronoq.domain.windows); 0: at its fire time.
    window_seconds: int = Field(default=0, ge=0, le=r.MAX_WINDOW_SECONDS, strict=True)

    @field_validator("start_at")
    @classmethod
    def _start_to_utc_second(cls, value: datetime | None) -> datetime | None:
        return bounded_instant(value) if value else None

    @field_validator("end_at")
    @classmethod
    def _end_after_start(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if value is None:
            return None
        value = bounded_instant(value)
        start = info.data.get("start_at")
        if start is not None and value <= start:
            raise ValueError("must be after start_at")
        return value


_SINGLE_VALUE_RANGE = re.compile(r"^(\w+)-\1(?:/\d+)?$", re.IGNORECASE)
#: The largest value of each cron field (and so the largest sensible step).
_CRON_FIELD_MAX = (59, 23, 31, 12, 7)
#: Where a cron expression is first tried, to refuse one that matches no date at all.
_CRON_PROBE = datetime(2001, 1, 1)


class CronSchedule(_Recurring):
    """Recurring by a five-field cron expression evaluated in an IANA time zone."""

    type: Literal["cron"]
    expression: str = Field(max_length=r.MAX_CRON_EXPRESSION_LENGTH)
    timezone: str = Field(default="UTC", max_length=64)

    @field_validator("expression")
    @classmethod
    def _valid_expression(cls, value: str) -> str:
        value = " ".join(value.split())
        if len(value.split(" ")) != 5:
            raise ValueError("must have five fields: minute hour day-of-month month day-of-week")
        for field, largest in zip(value.split(" "), _CRON_FIELD_MAX, strict=True):
            for term in field.split(","):
                _, slash, step = term.partition("/")
                if slash and not (step.isdigit() and 1 <= int(step) <= largest):
                    raise ValueError(f"has a step out of range: {term!r} (1 to {largest})")
        # croniter reads a range whose ends are equal ("5-5") as the whole field; cron
        # means the single value.
        value = " ".join(
            ",".join(_SINGLE_VALUE_RANGE.sub(r"\1", term) for term in field.split(","))
            for field in value.split(" ")
        )
        if not croniter.is_valid(value):
            raise ValueError(f"is not a valid cron expression: {value!r}")
        try:
            croniter(value, _CRON_PROBE).get_next(datetime)
        except CroniterError:
            raise ValueError(f"never fires: {value!r} matches no date") from None
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"is not a known IANA time zone: {value!r}") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


_RATE = re.compile(r"^(\d+)\s+(minute|minutes|hour|hours|day|days)$")
_UNIT = {"minute": 60, "hour": 3600, "day": 86400}


class RateSchedule(_Recurring):
    """Recurring every fixed interval: ``"every": "5 minutes"`` (minutes, hours or days; at
    least one minute). It fires at ``start_at`` and every interval after; without a
    ``start_at``, the first run is one interval after the job is created."""

    type: Literal["rate"]
    every: str = Field(max_length=32)

    @field_validator("every")
    @classmethod
    def _valid_every(cls, value: str) -> str:
        value = " ".join(value.lower().split())
        match = _RATE.match(value)
        if not match:
            raise ValueError('must be "<n> minutes", "<n> hours" or "<n> days" (at least 1 minute)')
        count, unit = int(match[1]), match[2].rstrip("s")
        if count < 1:
            raise ValueError("must be at least 1 minute")
        if count * _UNIT[unit] > r.MAX_RATE_SECONDS:
            raise ValueError("must be at most 365 days")
        return f"{count} {unit}{'s' if count != 1 else ''}"

    @property
    def period(self) -> timedelta:
        count, unit = self.every.split(" ")
        return timedelta(seconds=int(count) * _UNIT[unit.rstrip("s")])

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo("UTC")


#: Any schedule, told apart by ``type``.
Schedule = Annotated[AtSchedule | CronSchedule | RateSchedule, Field(discriminator="type")]
#: The same, as a plain union (for isinstance checks and signatures).
AnySchedule = AtSchedule | CronSchedule | RateSchedule


def anchored(schedule: AnySchedule, now: datetime) -> AnySchedule:
    """The schedule as stored: a rate without a ``start_at`` starts one interval from now."""
    if isinstance(schedule, RateSchedule) and schedule.start_at is None:
        return schedule.model_copy(update={"start_at": utc_second(now + schedule.period)})
    return schedule


# --- Fire times ---------------------------------------------------------------------------

# Longer than any UTC offset change, so that scanning local times from here never misses one.
_LOOKBACK = timedelta(hours=3)
_SECOND = timedelta(seconds=1)


def next_fire(schedule: AnySchedule, after: datetime) -> datetime | None:
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
    # Where the zone's offset did not change in the last hours, local time runs with UTC
    # from ``after`` on: the scan starts there (one step), not hours back.
    zone = schedule.zone
    steady = (after - _LOOKBACK).astimezone(zone).utcoffset() == after.astimezone(zone).utcoffset()
    try:
        for instant in _cron_instants(schedule, after if steady else after - _LOOKBACK):
            if instant > after:
                return instant
    except (CroniterError, OverflowError):
        raise NeverFires(f"{schedule.expression!r} fires no more") from None
    raise AssertionError("unreachable: croniter iterates without end")


def first_fire(schedule: AnySchedule, now: datetime) -> datetime | None:
    """The first fire time after ``now`` of a schedule a user asks for (create, change,
    preview). Raises InvalidRequest, naming the field, for a cron expression that fires no
    more, or not for longer than MAX_CRON_GAP_DAYS."""
    try:
        first = next_fire(schedule, now)
    except NeverFires as error:
        raise InvalidRequest("schedule.expression", f"never fires: {error}") from None
    if isinstance(schedule, CronSchedule) and first is not None:
        since = max(now, schedule.start_at or now)
        if first - since > timedelta(days=r.MAX_CRON_GAP_DAYS):
            raise InvalidRequest(
                "schedule.expression",
                f"next fires at {format_instant(first)}: more than {r.MAX_CRON_GAP_DAYS} days away",
            )
    return first


def fire_times(schedule: AnySchedule, after: datetime, count: int) -> list[datetime]:
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
    walker = copy.copy(_parsed(schedule.expression))  # parsed once, walked from here
    walker.set_current(local_start, force=True)
    while True:
        local: datetime = walker.get_next(datetime)
        yield to_instant(local, zone)


@functools.lru_cache(maxsize=4096)
def _parsed(expression: str) -> croniter:
    """A walker of ``expression``, parsed (each use walks a copy of it)."""
    return croniter(expression, datetime(2000, 1, 1))


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


def preview(schedule: AnySchedule, now: datetime, count: int) -> list[dict[str, str]]:
    """The next ``count`` fire instants after ``now``, in UTC and in the schedule's zone (a
    rate without ``start_at`` is taken as created now)."""
    schedule = anchored(schedule, now)
    zone = schedule.zone if isinstance(schedule, CronSchedule) else ZoneInfo("UTC")
    first = first_fire(schedule, now)
    if first is None:
        return []
    return [
        {"utc": format_instant(t), "local": t.astimezone(zone).isoformat()}
        for t in [first, *fire_times(schedule, first, count - 1)]
    ]
