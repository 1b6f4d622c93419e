"""Business calendars' arithmetic (chronoq.domain.schedules on a calendar) checked against a
brute-force walk: every plain fire time of a span is taken to its day's fate (kept, dropped,
moved to the next or previous business day at the same local time of day), and the fire
times after an instant are the sorted, distinct results."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from chronoq.domain.calendars import WEEKDAYS, CalendarRules, CalendarUse, OnExcluded
from chronoq.domain.schedules import (
    AfterSchedule,
    AnySchedule,
    AtSchedule,
    CronSchedule,
    RateSchedule,
    fire_times,
    next_fire,
    to_instant,
)

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"]
CRONS = [
    "0 9 * * *",
    "*/20 * * * *",
    "10 1-3 * * *",
    "30 1 * * *",
    "0 2 * * *",
    "15 */6 * * *",
    "0 0 * * 1",
    "45 23 * * *",
]
RATES = ["7 hours", "1 day", "90 minutes", "2 days"]


def brute(schedule: AnySchedule, plain: AnySchedule, after: datetime, span: int) -> list[datetime]:
    """The fire times after ``after`` of ``schedule`` (with a calendar), from ``plain``'s
    fire times within ``span`` days either side."""
    assert not isinstance(schedule, AtSchedule | AfterSchedule)
    assert schedule.calendar is not None
    assert schedule.calendar.rules is not None
    rules, mode = schedule.calendar.rules, schedule.calendar.on_excluded
    zone = ZoneInfo(rules.timezone)
    excluded = set(rules.dates)
    for first, last in rules.ranges:
        excluded.update(first + timedelta(days=i) for i in range((last - first).days + 1))

    def business(day: date) -> bool:
        return WEEKDAYS[day.weekday()] in rules.business_days and day not in excluded

    results: set[datetime] = set()
    current: datetime | None = after - timedelta(days=span)
    while True:
        current = next_fire(plain, current) if current is not None else None
        if current is None or current > after + timedelta(days=span):
            break
        wall = current.astimezone(zone)
        day = wall.date()
        if business(day):
            results.add(current)
        elif mode is not OnExcluded.SKIP:
            step = 1 if mode is OnExcluded.NEXT_BUSINESS_DAY else -1
            target = day + timedelta(days=step)
            while not business(target):
                target += timedelta(days=step)
            moved = datetime.combine(target, wall.replace(tzinfo=None, fold=0).time())
            results.add(to_instant(moved, zone))
    return sorted(t for t in results if t > after)


def random_case(rng: random.Random) -> tuple[AnySchedule, AnySchedule, datetime]:
    base = date(2026, 1, 1) + timedelta(days=rng.randrange(0, 700))
    dates = [base + timedelta(days=rng.randrange(-20, 40)) for _ in range(rng.randrange(0, 8))]
    ranges = []
    for _ in range(rng.randrange(0, 3)):
        first = base + timedelta(days=rng.randrange(-20, 40))
        ranges.append((first, first + timedelta(days=rng.randrange(0, 6))))
    days = rng.sample(WEEKDAYS, rng.randrange(3, 8))
    rules = CalendarRules(
        dates=tuple(dates), ranges=tuple(ranges), timezone=rng.choice(ZONES), business_days=days
    )
    use = CalendarUse(name="c", on_excluded=rng.choice(list(OnExcluded)), rules=rules)
    after = datetime.combine(base, datetime.min.time(), UTC) + timedelta(
        seconds=rng.randrange(0, 86400 * 20)
    )
    plain: AnySchedule
    if rng.random() < 0.7:
        plain = CronSchedule(type="cron", expression=rng.choice(CRONS), timezone=rng.choice(ZONES))
    else:
        start = after - timedelta(days=30, seconds=rng.randrange(0, 86400))
        plain = RateSchedule(type="rate", every=rng.choice(RATES), start_at=start)
    return plain.model_copy(update={"calendar": use}), plain, after


def test_given_1000_random_calendars_and_schedules_when_fire_times_are_computed_then_they_match_the_brute_force_walk() -> (
    None
):
    rng = random.Random(32)
    for case in range(1000):
        schedule, plain, after = random_case(rng)
        expected = brute(schedule, plain, after, span=60)[:5]
        assert fire_times(schedule, after, len(expected)) == expected, (case, schedule, after)


def test_given_a_holiday_when_skipping_then_that_day_has_no_run() -> None:
    schedule = _daily("skip", dates=(date(2026, 12, 25),))
    fires = fire_times(schedule, datetime(2026, 12, 23, tzinfo=UTC), 3)
    assert [f.date() for f in fires] == [date(2026, 12, 23), date(2026, 12, 24), date(2026, 12, 28)]


def test_given_a_holiday_when_moving_to_the_next_business_day_then_it_collapses_with_that_days_run() -> (
    None
):
    schedule = _daily("next_business_day", dates=(date(2026, 12, 25),))
    fires = fire_times(schedule, datetime(2026, 12, 24, 15, tzinfo=UTC), 2)
    # Friday's, Saturday's and Sunday's runs all move to Monday 09:00 New York: one run
    assert fires == [datetime(2026, 12, 28, 14, tzinfo=UTC), datetime(2026, 12, 29, 14, tzinfo=UTC)]


def test_given_a_holiday_when_moving_to_the_previous_business_day_then_it_keeps_its_local_time() -> (
    None
):
    schedule = _daily("previous_business_day", dates=(date(2026, 12, 24),), expression="0 18 * * 4")
    # Thursday 18:00 on Christmas Eve moves to Wednesday 18:00, New York time
    assert next_fire(schedule, datetime(2026, 12, 20, tzinfo=UTC)) == datetime(
        2026, 12, 23, 23, tzinfo=UTC
    )


def test_given_a_move_across_a_dst_change_then_the_local_time_of_day_is_kept() -> None:
    # 2026-11-01: New York falls back; a Saturday run at 09:00 EDT moves to Monday 09:00 EST
    schedule = _daily("next_business_day", dates=(), expression="0 9 * * 6")
    assert next_fire(schedule, datetime(2026, 10, 30, tzinfo=UTC)) == datetime(
        2026, 11, 2, 14, tzinfo=UTC
    )


def test_given_a_calendar_excluding_every_day_then_the_schedule_fires_no_more() -> None:
    schedule = _daily("skip", dates=(), expression="0 9 * * 6")
    assert next_fire(schedule, datetime(2026, 10, 30, tzinfo=UTC)) is None


def _daily(mode: str, dates: tuple[date, ...], expression: str = "0 9 * * *") -> CronSchedule:
    rules = CalendarRules(dates=dates, timezone="America/New_York")
    return CronSchedule(
        type="cron",
        expression=expression,
        timezone="America/New_York",
        calendar=CalendarUse(name="us", on_excluded=OnExcluded(mode), rules=rules),
    )


def test_given_a_fire_time_at_the_moment_clocks_jump_when_moved_back_then_it_keeps_that_local_time() -> (
    None
):
    # Lord Howe Island springs forward 30 minutes at 02:00 on 2027-10-03 (a Sunday, excluded):
    # that day's 02:00 fires at the jump, 02:30 local, and moves to Saturday 02:30 local,
    # half an hour after Saturday's own 02:00
    rules = CalendarRules(timezone="Australia/Lord_Howe", business_days=("sat",))
    use = CalendarUse(name="c", on_excluded=OnExcluded.PREVIOUS_BUSINESS_DAY, rules=rules)
    schedule = CronSchedule(
        type="cron", expression="0 2 * * *", timezone="Australia/Lord_Howe", calendar=use
    )
    saturday = datetime(2027, 10, 1, 15, 30, tzinfo=UTC)  # 02:00 +10:30
    assert next_fire(schedule, saturday - timedelta(seconds=1)) == saturday
    assert next_fire(schedule, saturday) == datetime(2027, 10, 1, 16, tzinfo=UTC)
