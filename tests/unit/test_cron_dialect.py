"""chronoq's cron dialect, example by example: what cron answers (checked against cronsim as
well as written out), and what chronoq refuses, naming the field."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import JobSpec
from chronoq.domain.schedules import CronSchedule, Schedule, fire_times, first_fire, next_fire
from chronoq.http_api import ApiError, validation_error
from cronsim import CronSim
from pydantic import TypeAdapter, ValidationError

schedule = TypeAdapter(Schedule).validate_python


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def cron(expression: str, **more: str) -> CronSchedule:
    return CronSchedule.model_validate({"type": "cron", "expression": expression, **more})


def crons_answer(expression: str, after: datetime, count: int) -> list[datetime]:
    return list(itertools.islice(CronSim(expression, after), count))


def api_error(document: dict[str, Any]) -> ApiError:
    """The API's answer to a job with this schedule (the mapping of validation errors that
    the API's handler uses)."""
    job = {"name": "n", "schedule": document, "target": {"type": "http", "url": "https://e.com/"}}
    with pytest.raises(ValidationError) as raised:
        JobSpec.model_validate(job)
    return validation_error(raised.value.errors())


def days(*dates: tuple[int, int, int]) -> list[datetime]:
    return [utc(*d) for d in dates]


# --- The day fields: both must match when either starts with '*', else either -------------


@pytest.mark.parametrize(
    ("expression", "fires"),
    [
        # Mondays that are odd days (day-of-month starts with '*': both must match).
        ("0 0 */2 * MON", days((2026, 1, 5), (2026, 1, 19), (2026, 2, 9), (2026, 2, 23))),
        # Fridays and Sundays: day-of-week starts with '*' (0 and 5 of 0-7).
        ("0 0 1-31 * */5", days((2026, 1, 2), (2026, 1, 4), (2026, 1, 9), (2026, 1, 11))),
        # Odd days: day-of-month starts with '*', every weekday matches.
        ("0 0 */2 * 0-7", days((2026, 1, 1), (2026, 1, 3), (2026, 1, 5), (2026, 1, 7))),
        # Neither starts with '*': every day is in 1-31, so every day.
        ("0 0 1-31 * MON", days((2026, 1, 1), (2026, 1, 2), (2026, 1, 3), (2026, 1, 4))),
        # The 13th or a Friday (2026-02-13 is a Friday: once).
        ("0 0 13 * 5", days((2026, 1, 2), (2026, 1, 9), (2026, 1, 13), (2026, 1, 16))),
        # The 1st, or a month's second Saturday.
        ("0 0 1 * 6#2", days((2026, 1, 1), (2026, 1, 10), (2026, 2, 1), (2026, 2, 14))),
        # Second Saturdays that are the 1st, 12th or 23rd: both must match.
        ("0 0 */11 * 6#2", days((2026, 9, 12), (2026, 12, 12), (2027, 6, 12), (2028, 2, 12))),
        # The last day of the month, or its last Friday.
        ("0 0 L * 5L", days((2026, 1, 30), (2026, 1, 31), (2026, 2, 27), (2026, 2, 28))),
        # The last weekday (Monday to Friday) of the month.
        ("0 0 LW * *", days((2026, 1, 30), (2026, 2, 27), (2026, 3, 31), (2026, 4, 30))),
        # Sunday as 7 and as 0, and names in any case.
        ("0 0 * jan sun#1,7L", days((2026, 1, 4), (2026, 1, 25), (2027, 1, 3), (2027, 1, 31))),
    ],
)
def test_given_day_fields_when_fired_then_cron_s_rule_decides_the_days(
    expression: str, fires: list[datetime]
) -> None:
    after = utc(2025, 12, 31, 12)
    assert fire_times(cron(expression), after, 4) == fires
    assert crons_answer(expression, after, 4) == fires


@pytest.mark.parametrize(
    "expression",
    [
        "30 2 * * 1-5",
        "0 0 13 * FRI",
        "0 18 LW * *",
        "0 * * * *",
        "0 0 * * FRI-SAT,SUN-MON",
        "0 22-23,0-2 * * *",
        "50/3 * * * *",
    ],
)
def test_given_the_docs_other_examples_when_fired_then_they_are_cron_s_answer(
    expression: str,
) -> None:
    after = utc(2026, 5, 17, 8, 30)
    assert fire_times(cron(expression), after, 30) == crons_answer(expression, after, 30)


# --- Ranges whose ends are the same value, however spelled ---------------------------------


@pytest.mark.parametrize(
    ("expression", "fires"),
    [
        ("5-05 * * * *", [utc(2026, 1, 1, 0, 5), utc(2026, 1, 1, 1, 5), utc(2026, 1, 1, 2, 5)]),
        ("0 3-03 * * *", [utc(2026, 1, 1, 3), utc(2026, 1, 2, 3), utc(2026, 1, 3, 3)]),
        ("0 0 * * 1-MON", days((2026, 1, 5), (2026, 1, 12), (2026, 1, 19))),
        ("0 0 1 jan-1 *", days((2026, 1, 1), (2027, 1, 1), (2028, 1, 1))),
        ("0 0 1 * wed-3", days((2026, 1, 1), (2026, 1, 7), (2026, 1, 14))),
    ],
)
def test_given_a_range_whose_ends_are_one_value_when_fired_then_it_is_that_value(
    expression: str, fires: list[datetime]
) -> None:
    after = utc(2025, 12, 31, 23, 30)
    assert fire_times(cron(expression), after, 3) == fires
    assert crons_answer(expression, after, 3) == fires


def test_given_a_stepped_range_of_one_value_when_fired_then_it_is_that_value_as_in_vixie_cron() -> (
    None
):
    # Vixie cron runs 5-5/10 from 5 to 5; cronsim reads it as 5-59/10.
    assert fire_times(cron("5-5/10 * * * *"), utc(2026, 1, 1), 2) == [
        utc(2026, 1, 1, 0, 5),
        utc(2026, 1, 1, 1, 5),
    ]


def test_given_a_single_value_with_a_step_when_fired_then_it_runs_to_the_field_s_end() -> None:
    assert fire_times(cron("50/3 * * * *"), utc(2026, 1, 1), 4) == [
        utc(2026, 1, 1, 0, 50),
        utc(2026, 1, 1, 0, 53),
        utc(2026, 1, 1, 0, 56),
        utc(2026, 1, 1, 0, 59),
    ]


# --- What the dialect refuses ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("0 0 15W * MON", "only LW"),
        ("30 3 3W * SAT", "only LW"),
        ("0 0 W * *", "only LW"),
        ("0 0 ? * MON", "'?'"),
        ("0 0 1 * ?", "'?'"),
        ("0 0 * * FRI-MON", "reversed range"),
        ("0 0 * * 5-1", "reversed range"),
        ("0 22-2 * * *", "reversed range"),
        ("0 0 * DEC-JAN *", "reversed range"),
        ("0 0 * * 7-SUN", "reversed range"),
        ("0 0 L/2 * *", "not supported"),
        ("0 0 L-3 * *", "not supported"),
        ("0 0 * * FRIL", "not supported"),
        ("0 0 * * L", "not supported"),
        ("0 0 * * 1-5L", "not supported"),
        ("0 0 * * 1#6", "1 to 5"),
        ("0 0 * * 1#0", "1 to 5"),
        ("0 0 * * 1-5#2", "not a number"),
        ("0 0 6#2 * *", "not a number"),
        ("0 L * * *", "not a number"),
        ("*/60 * * * *", "step out of range"),
        ("0 */24 * * *", "step out of range"),
        ("0 0 */0 * *", "step out of range"),
        ("0 0 * * 8", "out of range"),
        ("0 0 0 * *", "out of range"),
        ("0 0 1,,2 * *", "not a number"),
        ("0 0 1 13 *", "out of range"),
        ("0 0 1 JANUARY *", "not a number or a name"),
        ("0 0 30 2 *", "matches no date"),
        ("0 0 31 4,6,9,11 *", "matches no date"),
        ("0 0 * * * *", "five fields"),
    ],
)
def test_given_an_expression_outside_the_dialect_when_posted_then_422_names_schedule_expression(
    expression: str, says: str
) -> None:
    error = api_error({"type": "cron", "expression": expression})
    assert (error.status, error.field) == (422, "schedule.expression")
    assert says in error.message


def test_given_a_30th_of_february_or_a_monday_when_validated_then_it_fires_on_mondays() -> None:
    # Neither day field starts with '*': either matches, and February has Mondays.
    assert fire_times(cron("0 0 30 2 MON"), utc(2026, 1, 1), 2) == days((2026, 2, 2), (2026, 2, 9))


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "posix/Europe/Berlin", "right/UTC"])
def test_given_a_zone_file_that_is_not_an_iana_zone_when_posted_then_422_names_schedule_timezone(
    zone: str,
) -> None:
    error = api_error({"type": "cron", "expression": "0 9 * * *", "timezone": zone})
    assert (error.status, error.field) == (422, "schedule.timezone")


@pytest.mark.parametrize("zone", ["Europe/Berlin", "UTC", "Etc/GMT+5", "America/Argentina/Salta"])
def test_given_an_iana_zone_when_validated_then_it_is_kept(zone: str) -> None:
    assert cron("0 9 * * *", timezone=zone).timezone == zone


# --- Bounds to the second, and far-away fire times ------------------------------------------


def test_given_an_end_at_a_fraction_before_a_fire_time_when_fired_then_that_fire_time_is_excluded() -> (
    None
):
    daily = schedule(
        {"type": "cron", "expression": "0 9 * * *", "end_at": "2026-11-26T08:59:59.200Z"}
    )
    assert isinstance(daily, CronSchedule)
    assert daily.end_at == utc(2026, 11, 26, 8, 59, 59)
    assert fire_times(daily, utc(2026, 11, 25), 5) == [utc(2026, 11, 25, 9)]
    rate = schedule(
        {
            "type": "rate",
            "every": "1 hour",
            "start_at": "2026-11-26T06:00:00Z",
            "end_at": "2026-11-26T08:59:59.999Z",
        }
    )
    assert fire_times(rate, utc(2026, 11, 26), 5) == [
        utc(2026, 11, 26, 6),
        utc(2026, 11, 26, 7),
        utc(2026, 11, 26, 8),
    ]


def test_given_an_end_at_with_a_fraction_after_a_fire_time_when_fired_then_that_fire_time_is_kept() -> (
    None
):
    daily = schedule(
        {"type": "cron", "expression": "0 9 * * *", "end_at": "2026-11-26T09:00:00.500Z"}
    )
    assert fire_times(daily, utc(2026, 11, 25, 12), 5) == [utc(2026, 11, 26, 9)]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"type": "at", "at": "2999-12-31T23:59:59.5Z"}, "at"),
        ({"type": "rate", "every": "1 day", "start_at": "2999-12-31T23:59:59.001Z"}, "start_at"),
    ],
)
def test_given_an_instant_a_fraction_before_3000_when_rounded_up_then_it_is_refused(
    value: dict[str, Any], field: str
) -> None:
    error = api_error(value)
    assert (error.status, error.field) == (422, f"schedule.{field}")


def test_given_an_instant_in_the_last_second_before_3000_when_validated_then_it_is_kept() -> None:
    at = schedule({"type": "at", "at": "2999-12-31T23:59:59Z"})
    assert next_fire(at, utc(2999, 1, 1)) == utc(2999, 12, 31, 23, 59, 59)
    bounded = schedule(
        {"type": "cron", "expression": "* * * * *", "end_at": "2999-12-31T23:59:59.5Z"}
    )
    assert isinstance(bounded, CronSchedule)
    assert bounded.end_at == utc(2999, 12, 31, 23, 59, 59)


def test_given_a_leap_day_cron_when_asked_in_2097_then_it_is_refused_as_too_far_and_from_2099_03_01_not() -> (
    None
):
    leap_day = cron("0 0 29 2 *")
    # 2100 is no leap year: from 2097 the next 29 February is in 2104, over five years away.
    with pytest.raises(InvalidRequest) as raised:
        first_fire(leap_day, utc(2097, 6, 1))
    assert raised.value.field == "schedule.expression"
    # From 1 March 2099, 29 February 2104 is just under five years away: accepted.
    assert first_fire(leap_day, utc(2099, 3, 1)) == utc(2104, 2, 29)
