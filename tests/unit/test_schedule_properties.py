"""Property tests: chronoq's cron fire times against an independent reference.

The reference below uses nothing from ``chronoq.domain``. It parses the five cron fields into
sets of allowed values and walks UTC time one minute at a time, reading the local wall clock of
the schedule's zone, which makes the documented semantics direct:

- a UTC minute whose wall time matches fires, unless that wall time is a repeat (fold=1) after
  a fall-back: only its first occurrence fires;
- when the wall clock jumps forward, the UTC minute of the jump fires if any skipped wall minute,
  or the wall minute it lands on, matches: everything in a gap collapses into the jump.

To stay fast it jumps ahead over local hours and days that cannot match, but only where the UTC
offset does not change (checked; real zones never change offset twice within a day).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from chronoq.domain.schedules import CronSchedule, fire_times
from hypothesis import example, given, settings
from hypothesis import strategies as st

MINUTE = timedelta(minutes=1)
# Generated expressions fire at least every ~62 days (a monthly day-of-month in a year with
# one month left out); the reference gives up well after that.
SCAN_LIMIT = timedelta(days=100)
FIRES = 5

ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",  # changes at local midnight
    "Australia/Lord_Howe",  # a 30-minute DST shift
    "Pacific/Chatham",  # +12:45 / +13:45
    "Asia/Kolkata",  # +05:30, no DST
    "America/St_Johns",  # -03:30 / -02:30
    "Europe/London",
)

# The range over which transitions are collected (and checked to be far apart); `after`
# instants are drawn from 2024-2028, so everything the reference scans falls inside.
TRANSITIONS_FROM = datetime(2023, 7, 1, tzinfo=UTC)
TRANSITIONS_TO = datetime(2029, 12, 31, tzinfo=UTC)


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# --- The reference ------------------------------------------------------------------------


def parse_field(text: str, low: int, high: int) -> frozenset[int]:
    """The values a cron field allows: ``*``, ``*/n``, ``a``, ``a/n``, ``a-b``, ``a-b/n`` and
    comma lists of those."""
    values: set[int] = set()
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = int(step_text) if slash else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            start, _, end = base.partition("-")
            first, last = int(start), int(end)
        else:
            first = int(base)
            last = high if slash else first
        assert low <= first <= last <= high, f"{part!r} is out of {low}-{high}"
        assert step >= 1, f"{part!r} has a bad step"
        values.update(range(first, last + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    either_day: bool  # neither day field starts with '*': a day matches if either does (Vixie cron)

    @classmethod
    def parse(cls, expression: str) -> Cron:
        minute, hour, day, month, weekday = expression.split()
        return cls(
            minutes=parse_field(minute, 0, 59),
            hours=parse_field(hour, 0, 23),
            days=parse_field(day, 1, 31),
            months=parse_field(month, 1, 12),
            weekdays=frozenset(value % 7 for value in parse_field(weekday, 0, 7)),
            either_day=not (day.startswith("*") or weekday.startswith("*")),
        )

    def matches_day(self, wall: datetime) -> bool:
        if wall.month not in self.months:
            return False
        by_day = wall.day in self.days
        by_weekday = wall.isoweekday() % 7 in self.weekdays
        return (by_day or by_weekday) if self.either_day else (by_day and by_weekday)

    def matches(self, wall: datetime) -> bool:
        return wall.minute in self.minutes and wall.hour in self.hours and self.matches_day(wall)


def wall_clock(instant: datetime, zone: ZoneInfo) -> tuple[datetime, int]:
    """The naive local wall time of ``instant`` in ``zone``, and its fold (1 for the second
    occurrence of a repeated wall time)."""
    local = instant.astimezone(zone)
    return local.replace(tzinfo=None, fold=0), local.fold


def reference_next(cron: Cron, zone: ZoneInfo, after: datetime) -> datetime:
    """The first instant strictly after ``after`` at which ``cron`` fires in ``zone``."""
    after = after.astimezone(UTC)
    instant = after.replace(second=0, microsecond=0) + MINUTE  # the first whole minute > after
    limit = instant + SCAN_LIMIT
    while instant < limit:
        wall, fold = wall_clock(instant, zone)
        previous_wall, _ = wall_clock(instant - MINUTE, zone)
        if wall - previous_wall > MINUTE:
            # Spring-forward: the wall minutes strictly between were skipped. They, and the
            # wall time the clocks land on, all fire now.
            skipped = previous_wall + MINUTE
            while skipped <= wall:
                if cron.matches(skipped):
                    return instant
                skipped += MINUTE
        elif fold == 0 and cron.matches(wall):
            return instant
        instant += _skip(cron, zone, instant, wall)
    raise AssertionError(f"no fire within {SCAN_LIMIT} after {after}: generate denser crons")


def _skip(cron: Cron, zone: ZoneInfo, instant: datetime, wall: datetime) -> timedelta:
    """How far the scan may move on from ``instant`` (already examined): to the next local
    day or hour when this one cannot match and the UTC offset stays put until there, so that
    every minute jumped over has a wall time in the same non-matching day or hour."""
    if not cron.matches_day(wall):
        target = datetime.combine(wall.date() + timedelta(days=1), time())
    elif wall.hour not in cron.hours:
        target = wall.replace(minute=0) + timedelta(hours=1)
    else:
        return MINUTE
    step = target - wall
    if instant.astimezone(zone).utcoffset() != (instant + step).astimezone(zone).utcoffset():
        return MINUTE
    return step


def reference_fire_times(
    expression: str, zone_name: str, after: datetime, count: int
) -> list[datetime]:
    cron = Cron.parse(expression)
    zone = ZoneInfo(zone_name)
    result: list[datetime] = []
    for _ in range(count):
        after = reference_next(cron, zone, after)
        result.append(after)
    return result


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """The instants at which ``zone`` changes its UTC offset, to the second."""
    zone = ZoneInfo(zone_name)
    found: list[datetime] = []
    hour = timedelta(hours=1)
    instant = TRANSITIONS_FROM
    offset = instant.astimezone(zone).utcoffset()
    while instant < TRANSITIONS_TO:
        later = instant + hour
        later_offset = later.astimezone(zone).utcoffset()
        if later_offset != offset:
            low, high = int(instant.timestamp()), int(later.timestamp())
            while high - low > 1:  # invariant: low has the old offset, high the new one
                middle = (low + high) // 2
                if datetime.fromtimestamp(middle, zone).utcoffset() == later_offset:
                    high = middle
                else:
                    low = middle
            found.append(datetime.fromtimestamp(high, UTC))
            offset = later_offset
        instant = later
    # What the reference relies on: gaps end on whole minutes, and the offset never changes
    # twice within two days (so equal offsets a day apart mean no change in between).
    assert all(moment.second == 0 for moment in found), found
    assert all(b - a > timedelta(days=2) for a, b in itertools.pairwise(found)), found
    return tuple(found)


# --- The reference, checked by hand -------------------------------------------------------


def test_given_cron_fields_when_parsed_by_the_reference_then_they_expand_as_cron_does() -> None:
    assert parse_field("*/15", 0, 59) == {0, 15, 30, 45}
    assert parse_field("5-20/5,59", 0, 59) == {5, 10, 15, 20, 59}
    assert parse_field("3,1", 0, 23) == {1, 3}
    assert parse_field("20/2", 0, 23) == {20, 22}
    cron = Cron.parse("0 0 * * 5-7")
    assert cron.weekdays == {5, 6, 0}
    assert not cron.either_day
    assert Cron.parse("0 0 13 * 5").either_day


def test_given_a_restricted_day_of_month_and_weekday_when_the_reference_scans_then_either_matches() -> (
    None
):
    # 2026-11-13 is a Friday: "13th or Sunday" fires on Sundays and on the 13th.
    assert reference_fire_times("0 12 13 * 0", "UTC", utc(2026, 11, 1, 13), 3) == [
        utc(2026, 11, 8, 12),
        utc(2026, 11, 13, 12),
        utc(2026, 11, 15, 12),
    ]
    # Sunday as 7.
    assert reference_fire_times("0 12 * * 7", "UTC", utc(2026, 11, 1, 13), 1) == [
        utc(2026, 11, 8, 12)
    ]


def test_given_berlin_spring_forward_when_the_reference_scans_then_a_skipped_time_fires_when_the_clocks_jump() -> (
    None
):
    # 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00 UTC; 02:30 does not exist that day.
    assert reference_fire_times("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), 2) == [
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 30, 0, 30),
    ]
    # 02:00, 02:20, 02:40 and 03:00 collapse into the jump; 03:20 CEST follows.
    assert reference_fire_times("*/20 2-3 * * *", "Europe/Berlin", utc(2026, 3, 28, 23), 3) == [
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 1, 20),
        utc(2026, 3, 29, 1, 40),
    ]


def test_given_berlin_fall_back_when_the_reference_scans_then_a_repeated_time_fires_once_at_its_first_occurrence() -> (
    None
):
    # 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00 UTC; 02:30 happens twice, at
    # 00:30 UTC (CEST) and 01:30 UTC (CET). Only the first fires.
    assert reference_fire_times("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), 2) == [
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 26, 1, 30),
    ]
    # Starting between the two occurrences, the repeat does not fire.
    assert reference_fire_times("30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 1), 1) == [
        utc(2026, 10, 26, 1, 30)
    ]


def test_given_odd_offset_zones_when_the_reference_scans_then_half_hour_gaps_and_midnight_changes_are_handled() -> (
    None
):
    # Lord Howe 2026-10-04: 02:00 (+10:30) jumps to 02:30 (+11:00) at 15:30 UTC the day before.
    assert reference_fire_times("15 2 * * *", "Australia/Lord_Howe", utc(2026, 10, 3), 2) == [
        utc(2026, 10, 3, 15, 30),
        utc(2026, 10, 4, 15, 15),
    ]
    # Santiago 2026-09-06: midnight (-04:00) jumps to 01:00 (-03:00) at 04:00 UTC.
    assert reference_fire_times("0 0 * * *", "America/Santiago", utc(2026, 9, 5, 5), 2) == [
        utc(2026, 9, 6, 4, 0),
        utc(2026, 9, 7, 3, 0),
    ]
    # Chatham 2026-04-05: 03:45 (+13:45) falls back to 02:45 (+12:45) at 14:00 UTC.
    assert reference_fire_times("0 3 * * *", "Pacific/Chatham", utc(2026, 4, 4), 2) == [
        utc(2026, 4, 4, 13, 15),
        utc(2026, 4, 5, 14, 15),
    ]


def test_given_the_zones_under_test_when_scanned_then_their_transitions_are_found() -> None:
    assert utc(2026, 3, 29, 1) in transitions("Europe/Berlin")
    assert utc(2026, 10, 3, 15, 30) in transitions("Australia/Lord_Howe")
    assert transitions("Asia/Kolkata") == ()
    for zone_name in ZONES:
        transitions(zone_name)  # asserts what the reference relies on


# --- Strategies ---------------------------------------------------------------------------


@st.composite
def time_field(draw: st.DrawFn, low: int, high: int, favourites: tuple[int, ...]) -> str:
    """A minute or hour field; values lean towards ``favourites`` (where DST changes happen).
    Ranges may be of one value ("5-5"), as may day and weekday ranges."""
    value = st.one_of(st.integers(low, high), st.sampled_from(favourites))
    kind = draw(st.sampled_from(["*", "*/n", "a", "a-b", "a,b", "a-b/n"]))
    if kind == "*":
        return "*"
    if kind == "*/n":
        return f"*/{draw(st.integers(1, high - low))}"
    first, second = sorted((draw(value), draw(value)))
    if kind == "a":
        return str(first)
    if kind == "a-b":
        return f"{first}-{second}"
    if kind == "a,b":
        return f"{draw(value)},{draw(value)}"
    return f"{first}-{second}/{draw(st.integers(1, high - low))}"


def months_but(left_out: int) -> str:
    """A month field for every month but one, e.g. "1,3-12" (not "1-1,3-12": see the
    "5-5" example on the property)."""
    before = "" if left_out == 1 else "1" if left_out == 2 else f"1-{left_out - 1}"
    after = "" if left_out == 12 else "12" if left_out == 11 else f"{left_out + 1}-12"
    return ",".join(part for part in (before, after) if part)


@st.composite
def expressions(draw: st.DrawFn) -> str:
    """Five-field expressions that fire at least every ~62 days."""
    minute = draw(time_field(0, 59, (0, 1, 15, 29, 30, 45, 59)))
    hour = draw(time_field(0, 23, (0, 1, 2, 3, 23)))
    day = draw(
        st.one_of(
            st.just("*"),
            st.just("*"),
            st.integers(1, 28).map(str),
            st.tuples(st.integers(1, 28), st.integers(0, 7)).map(
                lambda pair: f"{pair[0]}-{min(pair[0] + pair[1], 28)}"
            ),
        )
    )
    months = st.integers(1, 12).map(months_but)
    month = draw(st.one_of(st.just("*"), st.just("*"), st.just("*"), months))
    weekday_value = st.integers(0, 7)
    weekday = draw(
        st.one_of(
            st.just("*"),
            weekday_value.map(str),
            st.tuples(weekday_value, weekday_value).map(lambda pair: f"{min(pair)}-{max(pair)}"),
            st.lists(weekday_value, min_size=1, max_size=3).map(
                lambda values: ",".join(map(str, values))
            ),
        )
    )
    return f"{minute} {hour} {day} {month} {weekday}"


@st.composite
def instants(draw: st.DrawFn, zone_name: str) -> datetime:
    """Uniformly random instants in 2024-2028, or instants within three hours of one of the
    zone's offset changes; often on a whole minute or second."""
    changes = [t for t in transitions(zone_name) if utc(2024, 1, 1) <= t < utc(2029, 1, 1)]
    near_a_change = draw(st.booleans())
    if changes != [] and near_a_change:
        change = draw(st.sampled_from(changes))
        instant = change + timedelta(minutes=draw(st.integers(-180, 180)))
        instant += timedelta(microseconds=draw(st.integers(0, 60_000_000 - 1)))
    else:
        instant = draw(
            st.datetimes(
                min_value=datetime(2024, 1, 1), max_value=datetime(2028, 12, 31, 23, 59, 59)
            )
        ).replace(tzinfo=UTC)
    precision = draw(st.sampled_from(["minute", "second", "microsecond"]))
    if precision == "minute":
        return instant.replace(second=0, microsecond=0)
    if precision == "second":
        return instant.replace(microsecond=0)
    return instant


@dataclass(frozen=True)
class Case:
    expression: str
    zone_name: str
    after: datetime


@st.composite
def cases(draw: st.DrawFn) -> Case:
    zone_name = draw(st.sampled_from(ZONES))
    return Case(draw(expressions()), zone_name, draw(instants(zone_name)))


# --- The property -------------------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(case=cases())
@example(case=Case("*/20 2-3 * * *", "Europe/Berlin", utc(2026, 3, 29, 0, 30)))
@example(case=Case("30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 30)))
@example(case=Case("15,45 2 * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 15)))
@example(case=Case("0 0 * * *", "America/Santiago", utc(2026, 4, 4, 2, 59, 59)))
@example(case=Case("50 2-3 * * *", "Pacific/Chatham", utc(2026, 9, 26, 13, 30)))
@example(case=Case("* 2 * * *", "America/St_Johns", utc(2026, 11, 1, 4)))
# A range of one value is that value in cron ("5-5" is minute 5), not the whole field.
@example(case=Case("5-5 * * * *", "UTC", utc(2026, 1, 1)))
def test_given_random_cron_and_zone_when_computing_fire_times_then_they_match_the_reference(
    case: Case,
) -> None:
    schedule = CronSchedule.model_validate(
        {"type": "cron", "expression": case.expression, "timezone": case.zone_name}
    )
    expected = reference_fire_times(case.expression, case.zone_name, case.after, FIRES)
    actual = fire_times(schedule, case.after, FIRES)
    assert actual == expected, (
        f"{case.expression!r} in {case.zone_name} after {case.after.isoformat()}:\n"
        f"  chronoq:   {[t.isoformat() for t in actual]}\n"
        f"  reference: {[t.isoformat() for t in expected]}"
    )
    assert all(t.tzinfo is not None and t.utcoffset() == timedelta(0) for t in actual)
    assert all(t.microsecond == 0 for t in actual)
    assert all(a < b for a, b in zip([case.after, *actual], actual, strict=False))


@pytest.mark.parametrize("zone_name", ZONES)
def test_given_each_zone_when_firing_around_its_offset_changes_then_chronoq_matches_the_reference(
    zone_name: str,
) -> None:
    # Around every offset change of 2026, from each of the five minutes either side and every
    # fourth minute up to an hour away: the next three fires of two dense expressions.
    for change in (t for t in transitions(zone_name) if t.year == 2026):
        for minutes in sorted({*range(-60, 61, 4), *range(-5, 6)}):
            after = change + timedelta(minutes=minutes)
            for expression in ("*/7 * * * *", "30 * * * *"):
                schedule = CronSchedule.model_validate(
                    {"type": "cron", "expression": expression, "timezone": zone_name}
                )
                assert fire_times(schedule, after, 3) == reference_fire_times(
                    expression, zone_name, after, 3
                ), (expression, zone_name, after)
