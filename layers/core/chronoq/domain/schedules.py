"""Schedules: when a job fires. The models (``at``, ``cron``, ``rate``) and pure functions over
them.

Cron expressions are matched on local wall-clock time in the schedule's time zone, then mapped
to instants the way users expect across daylight-saving changes:

- a local time that does not exist (skipped by spring-forward) fires once, at the first valid
  instant after the gap (the moment the clocks jump);
- a local time that exists twice (repeated by fall-back) fires once, at its first occurrence.

Why this module is long: the schedule models and their pure functions (next fire, previews,
bounds, the DST rules, business calendars' days, completion triggers) are one subject, each
function short.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, ValidationInfo, field_validator

from chronoq.domain import cron
from chronoq.domain import limits as lim
from chronoq.domain.base import Model
from chronoq.domain.calendars import CalendarRules, CalendarUse, OnExcluded
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.time import IsoInstant, format_instant, utc_second

_EARLIEST = datetime(lim.EARLIEST_YEAR, 1, 1, tzinfo=UTC)
_LATEST = datetime(lim.LATEST_YEAR, 1, 1, tzinfo=UTC)


def bounded_instant(value: datetime, *, up: bool = True) -> datetime:
    """``value`` in UTC to the whole second (rounded up, or down when ``up`` is false), if
    that lies in the years a schedule may name (instants near the calendar's ends cannot be
    computed with)."""
    try:
        utc = value.astimezone(UTC)
        second = utc_second(utc) if up else utc.replace(microsecond=0)
        if not _EARLIEST <= second < _LATEST:
            raise OverflowError
        return second
    except OverflowError:
        raise ValueError(
            f"must be from {lim.EARLIEST_YEAR}-01-01 to before {lim.LATEST_YEAR}-01-01 (UTC)"
        ) from None


class NeverFires(ValueError):
    """A cron expression matches no date (e.g. February 30th), or none for too long."""


class AtSchedule(Model):
    """Once, at an instant. Fractions of a second are rounded up to the next whole second."""

    type: Literal["at"]
    at: IsoInstant

    @field_validator("at")
    @classmethod
    def _to_utc_second(cls, value: datetime) -> datetime:
        return bounded_instant(value)


class _Recurring(Model):
    """Optional bounds of a recurring schedule: it fires at or after ``start_at`` and at or
    before ``end_at``. Fire times are whole seconds: ``start_at`` is rounded up to one,
    ``end_at`` down, which keeps exactly the fire times inside the bounds as given."""

    start_at: IsoInstant | None = None
    end_at: IsoInstant | None = None
    #: Each occurrence starts within this many seconds after its fire time, at an offset
    #: derived from the job and the instant (see chronoq.domain.windows); 0: at its fire time.
    window_seconds: int = Field(default=0, ge=0, le=lim.MAX_WINDOW_SECONDS, strict=True)
    #: A business calendar: fire times on its excluded dates are skipped or moved (see
    #: chronoq.domain.calendars).
    calendar: CalendarUse | None = None

    @field_validator("start_at")
    @classmethod
    def _start_to_utc_second(cls, value: datetime | None) -> datetime | None:
        return bounded_instant(value) if value else None

    @field_validator("end_at")
    @classmethod
    def _end_after_start(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if value is None:
            return None
        value = bounded_instant(value, up=False)
        start = info.data.get("start_at")
        if start is not None and value <= start:
            raise ValueError("must be after start_at")
        return value


@functools.cache
def zone_named(key: str) -> ZoneInfo:
    """The time zone ``key``, loaded once per process (``ZoneInfo`` itself keeps only the
    last few in use: a dispatcher going through jobs of many zones would read their files
    again and again)."""
    return ZoneInfo(key)


#: Names ``ZoneInfo`` loads that are not IANA time zones: the host's own zone and files of
#: the zoneinfo directory's build.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})


class CronSchedule(_Recurring):
    """Recurring by a five-field cron expression evaluated in an IANA time zone."""

    # (the dialect: chronoq.domain.cron; its description here is the API document's)

    type: Literal["cron"]
    expression: str = Field(max_length=lim.MAX_CRON_EXPRESSION_LENGTH)
    timezone: str = Field(default="UTC", max_length=64)

    @field_validator("expression")
    @classmethod
    def _valid_expression(cls, value: str) -> str:
        value = " ".join(cron.split_fields(value))
        try:
            parsed = cron.parse(value)
        except cron.CronSyntaxError as error:
            raise ValueError(str(error)) from None
        if not parsed.matches_some_day:
            raise ValueError(f"never fires: {value!r} matches no date")
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        if value in _NOT_ZONES or value.startswith(("posix/", "right/")):
            raise ValueError(f"is not an IANA time zone: {value!r}")
        try:
            zone_named(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"is not a known IANA time zone: {value!r}") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return zone_named(self.timezone)


_RATE = re.compile(r"([0-9]+) (minute|minutes|hour|hours|day|days)")
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
        value = " ".join(cron.split_fields(value)).lower()
        match = _RATE.fullmatch(value)
        if not match:
            raise ValueError('must be "<n> minutes", "<n> hours" or "<n> days" (at least 1 minute)')
        count, unit = int(match[1]), match[2].rstrip("s")
        if count < 1:
            raise ValueError("must be at least 1 minute")
        if count * _UNIT[unit] > lim.MAX_RATE_SECONDS:
            raise ValueError("must be at most 365 days")
        return f"{count} {unit}{'s' if count != 1 else ''}"

    @property
    def period(self) -> timedelta:
        count, unit = self.every.split(" ")
        return timedelta(seconds=int(count) * _UNIT[unit.rstrip("s")])

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo("UTC")


# --- completion triggers (docs/guides/pipelines.md: "Pipelines") ----------------------------------


class AfterSchedule(Model):
    """After other jobs: the job runs once for each instant (an upstream run's
    ``scheduled_at``) at which every job of ``jobs`` (the caller's own, by name or id; kept
    as ids) has a run that ended as ``on`` asks: ``SUCCEEDED``, ``FAILED`` (failed or timed
    out) or ``ENDED`` (any end of a run that was started). An instant waits at most
    ``within_seconds`` from its first upstream's end for the others; then the job's run of
    that instant is recorded SKIPPED, naming the upstreams missing. It has no fire times of
    its own (see chronoq.domain.after)."""

    type: Literal["after"]
    jobs: list[Annotated[str, Field(min_length=1, max_length=lim.MAX_NAME_LENGTH)]] = Field(
        min_length=1, max_length=lim.MAX_UPSTREAMS
    )
    on: Literal["SUCCEEDED", "FAILED", "ENDED"] = "SUCCEEDED"
    within_seconds: int = Field(
        default=lim.DEFAULT_AFTER_WITHIN_SECONDS,
        ge=60,
        le=lim.MAX_AFTER_WITHIN_SECONDS,
        strict=True,
    )

    @field_validator("jobs")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("names a job more than once")
        return value


#: Any schedule, told apart by ``type``.
Schedule = Annotated[
    AtSchedule | CronSchedule | RateSchedule | AfterSchedule, Field(discriminator="type")
]
#: The same, as a plain union (for isinstance checks and signatures).
AnySchedule = AtSchedule | CronSchedule | RateSchedule | AfterSchedule


def anchored(schedule: AnySchedule, now: datetime) -> AnySchedule:
    """The schedule as stored: a rate without a ``start_at`` starts one interval from now."""
    if isinstance(schedule, RateSchedule) and schedule.start_at is None:
        return schedule.model_copy(update={"start_at": utc_second(now + schedule.period)})
    return schedule


# --- Fire times ---------------------------------------------------------------------------

_SECOND = timedelta(seconds=1)


def next_fire(schedule: AnySchedule, after: datetime) -> datetime | None:
    """The first instant strictly after ``after`` at which ``schedule`` fires, in UTC; None
    when it fires no more. A schedule with a calendar (its copy of the rules filled in)
    fires on its business days only (see _next_on_calendar)."""
    after = after.astimezone(UTC)
    if (
        not isinstance(schedule, AtSchedule | AfterSchedule)  # (neither names a calendar)
        and schedule.calendar is not None
        and schedule.calendar.rules is not None
    ):
        return _next_on_calendar(schedule, after)
    return _plain_next(schedule, after)


def _plain_next(schedule: AnySchedule, after: datetime) -> datetime | None:
    """next_fire of the schedule as if it named no calendar."""
    if isinstance(schedule, AtSchedule):
        return schedule.at if schedule.at > after else None
    if isinstance(schedule, AfterSchedule):
        return None  # (its runs follow its upstreams' ends: the dispatcher never plans one)
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


# --- Business calendars ----------------------------------------------------------------------


def _next_on_calendar(schedule: CronSchedule | RateSchedule, after: datetime) -> datetime | None:
    """The first fire time after ``after`` of a schedule on a calendar. Its fire times lie on
    business days only (local dates in the calendar's zone), and within one day in order:
    so the answer is the first of one business day's fire times later than ``after``, from
    the day of ``after`` on: the plain next fire time, on a day that takes none moved from
    excluded days; else the least of that and of the first moved one from each excluded day
    (_first_moved_after). Days with no fire time are jumped over to the day the next plain
    fire time lands on."""
    rules = _rules_of(schedule)
    mode = schedule.calendar.on_excluded if schedule.calendar else OnExcluded.SKIP
    zone = zone_named(rules.timezone)
    first = after.astimezone(zone).date()
    limit = first + timedelta(days=lim.CALENDAR_HORIZON_DAYS)
    day: date | None = first if rules.is_business_day(first) else rules.business_day(first, 1)
    while day is not None and day <= limit:
        if _takes_moved(rules, mode, day):
            found = _first_moved_after(schedule, rules, mode, day, after)
            if found is not None:
                return found
        else:  # (only its own fire times: the plain next one, if it is on this day)
            start = _day_start(day, zone)
            plain = _plain_next(schedule, max(after, start - _SECOND))
            if plain is None:
                return None
            if plain < _day_start(day + timedelta(days=1), zone):
                return plain
        # the next day that receives a fire time: where the next plain one after this day
        # (after the days whose fire times this day took, for next_business_day) lands
        following = rules.business_day(day, 1)
        if following is None:
            return None
        low = following if mode is OnExcluded.PREVIOUS_BUSINESS_DAY else day + timedelta(days=1)
        plain = _plain_next(schedule, _day_start(low, zone))
        if plain is None:
            return None
        landed = plain.astimezone(zone).date()
        if not rules.is_business_day(landed):
            step = -1 if mode is OnExcluded.PREVIOUS_BUSINESS_DAY else 1
            landed = rules.business_day(landed, step) or following
        day = max(following, landed)
    return None


def _takes_moved(rules: CalendarRules, mode: OnExcluded, day: date) -> bool:
    """Does business day ``day`` take fire times moved from excluded days (the day before
    it excluded, for next_business_day; the day after, for previous_business_day)?"""
    if mode is OnExcluded.SKIP:
        return False
    step = -1 if mode is OnExcluded.NEXT_BUSINESS_DAY else 1
    return not rules.is_business_day(day + timedelta(days=step))


def _rules_of(schedule: CronSchedule | RateSchedule) -> CalendarRules:
    if schedule.calendar is None or schedule.calendar.rules is None:
        raise ValueError("the schedule carries no calendar rules")
    return schedule.calendar.rules


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    return to_instant(datetime.combine(day, time()), zone)


def _first_moved_after(
    schedule: CronSchedule | RateSchedule,
    rules: CalendarRules,
    mode: OnExcluded,
    day: date,
    after: datetime,
) -> datetime | None:
    """The first fire time after ``after`` on business day ``day``: its own, or one moved
    to it from the excluded days before it (next_business_day) or after it
    (previous_business_day), at its local time of day on ``day``."""
    zone = zone_named(rules.timezone)
    end = _day_start(day + timedelta(days=1), zone)
    own = _plain_next(schedule, max(after, _day_start(day, zone) - _SECOND))
    best = own if own is not None and own < end else None
    step = -1 if mode is OnExcluded.NEXT_BUSINESS_DAY else 1
    other = day + timedelta(days=step)
    for _ in range(lim.CALENDAR_HORIZON_DAYS):
        if rules.is_business_day(other):
            break
        moved = _first_retimed_after(schedule, other, day, after, zone)
        if moved is not None and (best is None or moved < best):
            best = moved
        other += timedelta(days=step)
    return best


def _retimed(fire: datetime, day: date, zone: ZoneInfo) -> datetime:
    """Fire time ``fire`` at its local time of day (in ``zone``) on ``day``."""
    wall = fire.astimezone(zone).replace(tzinfo=None, fold=0)
    return to_instant(datetime.combine(day, wall.time()), zone)


def _first_retimed_after(
    schedule: AnySchedule, source: date, day: date, after: datetime, zone: ZoneInfo
) -> datetime | None:
    """The least of the plain fire times of date ``source``, each at its local time of day
    on ``day``, that is later than ``after``. A fire time whose local time of day is earlier
    than that of ``after`` (when ``after`` is on ``day``) lands no later than ``after``, and
    so does each fire time before that local time's first instant on ``source`` (or the
    moment the clocks jump, when that day skips it: a fire time may be that very instant):
    the search starts there, and goes on through the day only on a day whose clocks change
    (where local times of day are not in the order of the instants)."""
    start, end = _day_start(source, zone), _day_start(source + timedelta(days=1), zone)
    changes = start.astimezone(zone).utcoffset() != end.astimezone(zone).utcoffset()
    low = start - _SECOND
    if after >= _day_start(day, zone):
        wall = after.astimezone(zone).replace(tzinfo=None, fold=0)
        low = max(low, to_instant(datetime.combine(source, wall.time()), zone) - _SECOND)
    best: datetime | None = None
    current = _plain_next(schedule, low)
    while current is not None and current < end:
        moved = _retimed(current, day, zone)
        if moved > after and (best is None or moved < best):
            best = moved
            if not changes:
                break
        current = _plain_next(schedule, current)
    return best


def _next_rate(schedule: RateSchedule, after: datetime) -> datetime:
    anchor = schedule.start_at or utc_second(after + schedule.period)
    if after < anchor:
        return anchor
    periods = (after - anchor) // schedule.period + 1
    return anchor + periods * schedule.period


def _next_cron(schedule: CronSchedule, after: datetime) -> datetime:
    """Local wall times map to instants in order (a skipped one to the jump, a repeated one
    to its first occurrence), so the answer is the first matching wall time from the first
    one whose instant is later than ``after``: the next wall minute, or, when ``after`` lies
    in the second pass of a repeated hour, the end of the repeat."""
    zone = schedule.zone
    try:
        local = after.astimezone(zone)
        if local.fold:
            start = _ceil_minute(_repeat_end(after, zone, local))
        else:
            start = local.replace(tzinfo=None, second=0, microsecond=0) + _MINUTE
        found = cron.parse(schedule.expression).next_match(start)
        if found is None:
            raise OverflowError
        return to_instant(found, zone)
    except OverflowError:
        raise NeverFires(f"{schedule.expression!r} fires no more") from None


_MINUTE = timedelta(minutes=1)


def _ceil_minute(wall: datetime) -> datetime:
    whole = wall.replace(second=0, microsecond=0)
    return whole if whole == wall else whole + _MINUTE


def _repeat_end(after: datetime, zone: ZoneInfo, local: datetime) -> datetime:
    """The naive wall time at which the repeated local time ``local`` (the instant ``after``,
    in the second pass after clocks went back) stops repeating."""
    back = after - local.replace(fold=0).astimezone(UTC)  # how far the clocks went back
    # The change happened within ``back`` before ``after``: find its second.
    change = _change_within(zone, int((after - back).timestamp()), int(after.timestamp()) + 1)
    return (change + back).astimezone(zone).replace(tzinfo=None)


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
        if first - since > timedelta(days=lim.MAX_CRON_GAP_DAYS):
            raise InvalidRequest(
                "schedule.expression",
                f"next fires at {format_instant(first)}:"
                f" more than {lim.MAX_CRON_GAP_DAYS} days away",
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


def to_instant(local: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant of naive wall-clock time ``local`` in ``zone``.

    Repeated times resolve to their first occurrence; skipped times to the end of the gap.
    """
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == local:
        return first
    # ``local`` falls in a gap: the clocks jumped between the instant that fold=1 maps to
    # (before the jump) and the one that fold=0 maps to (after it).
    before = int(local.replace(tzinfo=zone, fold=1).astimezone(UTC).timestamp())
    return _change_within(zone, before, int(first.timestamp()))


def _change_within(zone: ZoneInfo, low: int, high: int) -> datetime:
    """The instant (a whole second) in (``low``, ``high``] at which ``zone``'s UTC offset
    changes, given that it changes once there. The span is widened to whole multiples of its
    length (changes are days apart: still one change in it, else the answer falls outside the
    span and the span itself is searched), so that the instants around one change ask the
    cache the same question."""
    span = high - low
    found = _change(zone.key, low // span * span, -(-high // span) * span)
    if not low < found.timestamp() <= high:  # another change close by: search the span itself
        found = _change(zone.key, low, high)
    return found


@functools.lru_cache(maxsize=1024)
def _change(zone_key: str, low: int, high: int) -> datetime:
    """The instant (a whole second) in (``low``, ``high``] at which ``zone`` takes the UTC
    offset it has at ``high``, when its offset changes once in that span."""
    zone = zone_named(zone_key)
    offset = datetime.fromtimestamp(high, zone).utcoffset()
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)


def preview(schedule: AnySchedule, now: datetime, count: int) -> list[dict[str, str]]:
    """The next ``count`` fire instants after ``now``, in UTC and in the schedule's zone (a
    rate without ``start_at`` is taken as created now)."""
    if isinstance(schedule, AfterSchedule):
        return []  # (no fire times: see describe)
    schedule = anchored(schedule, now)
    zone = schedule.zone if isinstance(schedule, CronSchedule) else ZoneInfo("UTC")
    first = first_fire(schedule, now)
    if first is None:
        return []
    return [
        {"utc": format_instant(t), "local": t.astimezone(zone).isoformat()}
        for t in [first, *fire_times(schedule, first, count - 1)]
    ]


def describe_after(names: list[str]) -> str:
    """What an ``after`` schedule's preview says: "after extract and clean"."""
    if len(names) == 1:
        return f"after {names[0]}"
    return f"after {', '.join(names[:-1])} and {names[-1]}"
