from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from chronoq.domain.schedules import (
    AtSchedule,
    CronSchedule,
    RateSchedule,
    Schedule,
    _change_within,
    anchored,
    fire_times,
    next_fire,
    preview,
)
from pydantic import TypeAdapter, ValidationError

schedule = TypeAdapter(Schedule).validate_python


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_given_an_every_five_minutes_cron_when_asked_for_the_next_fires_then_they_are_five_minutes_apart() -> (
    None
):
    cron = schedule({"type": "cron", "expression": "*/5 * * * *"})
    assert fire_times(cron, utc(2026, 11, 25, 21, 48, 10), 3) == [
        utc(2026, 11, 25, 21, 50),
        utc(2026, 11, 25, 21, 55),
        utc(2026, 11, 25, 22, 0),
    ]


def test_given_a_fire_instant_when_asked_for_the_next_fire_after_it_then_it_is_strictly_later() -> (
    None
):
    cron = schedule({"type": "cron", "expression": "* * * * *"})
    assert next_fire(cron, utc(2026, 11, 25, 21, 48)) == utc(2026, 11, 25, 21, 49)


def test_given_a_berlin_cron_when_evaluated_then_local_wall_time_is_used() -> None:
    cron = schedule({"type": "cron", "expression": "0 9 * * *", "timezone": "Europe/Berlin"})
    # 09:00 in Berlin is 08:00 UTC in winter (CET) and 07:00 UTC in summer (CEST).
    assert next_fire(cron, utc(2026, 1, 10)) == utc(2026, 1, 10, 8)
    assert next_fire(cron, utc(2026, 7, 10)) == utc(2026, 7, 10, 7)


def test_given_spring_forward_in_berlin_when_a_daily_time_is_skipped_then_it_fires_once_when_the_clocks_jump() -> (
    None
):
    # 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); 02:30 does not exist that day.
    cron = schedule({"type": "cron", "expression": "30 2 * * *", "timezone": "Europe/Berlin"})
    assert fire_times(cron, utc(2026, 3, 27, 12), 3) == [
        utc(2026, 3, 28, 1, 30),
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 30, 0, 30),
    ]


def test_given_spring_forward_when_several_times_fall_in_the_gap_then_they_fire_once_together() -> (
    None
):
    cron = schedule({"type": "cron", "expression": "*/20 2-3 * * *", "timezone": "Europe/Berlin"})
    fires = fire_times(cron, utc(2026, 3, 28, 23), 4)
    # 02:00, 02:20, 02:40 and 03:00 local all map to the jump at 01:00 UTC: one fire.
    assert fires == [
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 1, 20),
        utc(2026, 3, 29, 1, 40),
        utc(2026, 3, 30, 0, 0),
    ]


def test_given_fall_back_in_berlin_when_a_local_time_repeats_then_it_fires_once_at_its_first_occurrence() -> (
    None
):
    # 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 local happens at 00:30 and 01:30 UTC.
    cron = schedule({"type": "cron", "expression": "30 2 * * *", "timezone": "Europe/Berlin"})
    assert fire_times(cron, utc(2026, 10, 24, 12), 3) == [
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 26, 1, 30),
        utc(2026, 10, 27, 1, 30),
    ]


def test_given_fall_back_when_an_hourly_cron_runs_through_it_then_no_instant_repeats_and_none_is_lost() -> (
    None
):
    cron = schedule({"type": "cron", "expression": "0 * * * *", "timezone": "Europe/Berlin"})
    fires = fire_times(cron, utc(2026, 10, 24, 21, 59), 6)
    # Local 00:00, 01:00, 02:00 CEST (the first 02:00), then 03:00, 04:00, 05:00 CET.
    assert fires == [
        utc(2026, 10, 24, 22),
        utc(2026, 10, 24, 23),
        utc(2026, 10, 25, 0),
        utc(2026, 10, 25, 2),
        utc(2026, 10, 25, 3),
        utc(2026, 10, 25, 4),
    ]
    assert len(set(fires)) == len(fires)


def test_given_an_at_schedule_when_asked_before_and_after_it_then_it_fires_once() -> None:
    at = schedule({"type": "at", "at": "2026-11-25T22:48:05+01:00"})
    assert next_fire(at, utc(2026, 11, 25, 21)) == utc(2026, 11, 25, 21, 48, 5)
    assert next_fire(at, utc(2026, 11, 25, 21, 48, 5)) is None


def test_given_an_at_with_a_fraction_of_a_second_when_parsed_then_it_rounds_up_to_the_second() -> (
    None
):
    at = schedule({"type": "at", "at": "2026-11-25T21:48:05.200Z"})
    assert isinstance(at, AtSchedule)
    assert at.at == utc(2026, 11, 25, 21, 48, 6)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"type": "cron", "expression": "61 * * * *"}, "expression"),
        ({"type": "cron", "expression": "* * * *"}, "expression"),
        ({"type": "cron", "expression": "* * * * * *"}, "expression"),
        ({"type": "cron", "expression": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"type": "at", "at": "2026-11-25T21:48:05"}, "at"),
        ({"type": "weekly"}, "type"),
    ],
)
def test_given_an_invalid_schedule_when_validated_then_the_error_names_the_field(
    value: dict[str, str], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        schedule(value)
    assert any(
        field in ".".join(str(p) for p in e["loc"]) or e["type"] == "union_tag_invalid"
        for e in raised.value.errors()
    )


def test_given_whitespace_in_a_cron_expression_when_validated_then_it_is_normalised() -> None:
    cron = schedule({"type": "cron", "expression": "  */5  *  * * * "})
    assert isinstance(cron, CronSchedule)
    assert cron.expression == "*/5 * * * *"


def test_given_a_cron_when_listing_many_fires_then_they_strictly_increase() -> None:
    cron = schedule(
        {"type": "cron", "expression": "*/7 */3 * * 1-5", "timezone": "America/New_York"}
    )
    fires = fire_times(cron, utc(2026, 3, 1), 200)
    assert all(b - a > timedelta(0) for a, b in itertools.pairwise(fires))


# --- rate schedules and bounds ----------------------------------------------------------------


def test_given_a_rate_without_start_when_anchored_then_it_first_fires_one_interval_after_now() -> (
    None
):
    rate = anchored(schedule({"type": "rate", "every": "5 minutes"}), utc(2026, 11, 25, 21, 48, 10))
    assert fire_times(rate, utc(2026, 11, 25, 21, 48, 10), 3) == [
        utc(2026, 11, 25, 21, 53, 10),
        utc(2026, 11, 25, 21, 58, 10),
        utc(2026, 11, 25, 22, 3, 10),
    ]


def test_given_a_rate_with_a_start_when_asked_later_then_it_keeps_its_phase() -> None:
    rate = schedule({"type": "rate", "every": "2 hours", "start_at": "2026-11-25T09:15:00+01:00"})
    assert next_fire(rate, utc(2026, 11, 25)) == utc(2026, 11, 25, 8, 15)
    assert next_fire(rate, utc(2026, 11, 25, 8, 15)) == utc(2026, 11, 25, 10, 15)
    assert next_fire(rate, utc(2026, 11, 27, 11)) == utc(2026, 11, 27, 12, 15)


@pytest.mark.parametrize(
    ("every", "normalised"),
    [
        ("1 minute", "1 minute"),
        ("90 Minutes", "90 minutes"),
        ("2 days", "2 days"),
        ("1 hours", "1 hour"),
    ],
)
def test_given_rate_spellings_when_validated_then_they_are_normalised(
    every: str, normalised: str
) -> None:
    rate = schedule({"type": "rate", "every": every})
    assert isinstance(rate, RateSchedule)
    assert rate.every == normalised


@pytest.mark.parametrize(
    "every", ["30 seconds", "0 minutes", "5", "every 5 minutes", "366 days", "1.5 hours"]
)
def test_given_an_invalid_rate_when_validated_then_every_is_named(every: str) -> None:
    with pytest.raises(ValidationError) as raised:
        schedule({"type": "rate", "every": every})
    assert [e["loc"] for e in raised.value.errors()] == [("rate", "every")]


def test_given_start_and_end_when_a_cron_fires_then_only_instants_inside_the_bounds_count() -> None:
    cron = schedule(
        {
            "type": "cron",
            "expression": "0 * * * *",
            "start_at": "2026-11-26T00:00:00Z",
            "end_at": "2026-11-26T02:00:00Z",
        }
    )
    assert fire_times(cron, utc(2026, 11, 25, 12), 10) == [
        utc(2026, 11, 26, 0),
        utc(2026, 11, 26, 1),
        utc(2026, 11, 26, 2),
    ]
    assert next_fire(cron, utc(2026, 11, 26, 2)) is None


def test_given_an_end_before_the_start_when_validated_then_end_at_is_named() -> None:
    with pytest.raises(ValidationError) as raised:
        schedule(
            {
                "type": "rate",
                "every": "1 hour",
                "start_at": "2026-11-26T00:00:00Z",
                "end_at": "2026-11-25T00:00:00Z",
            }
        )
    assert [e["loc"] for e in raised.value.errors()] == [("rate", "end_at")]


def test_given_a_cron_in_berlin_when_previewed_then_instants_are_given_in_utc_and_local_time() -> (
    None
):
    cron = schedule({"type": "cron", "expression": "30 2 * * *", "timezone": "Europe/Berlin"})
    assert preview(cron, utc(2026, 3, 28, 12), 2) == [
        {"utc": "2026-03-29T01:00:00Z", "local": "2026-03-29T03:00:00+02:00"},
        {"utc": "2026-03-30T00:30:00Z", "local": "2026-03-30T02:30:00+02:00"},
    ]


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("5-5 * * * *", "5 * * * *"),
        ("5-05 * * * *", "5 * * * *"),
        ("0 3-03 * * *", "0 3 * * *"),
        ("0 9-9 * * 1-1", "0 9 * * 1"),
        ("0 0 * * 1-MON", "0 0 * * 1"),
        ("0 0 1 jan-1 *", "0 0 1 1 *"),
        ("0 0 1 JAN-jan *", "0 0 1 1 *"),
        ("* * * 1-1,3-12 *", "* * * 1,3-12 *"),
        ("7-7/5 * * * *", "7 * * * *"),
    ],
)
def test_given_a_range_with_equal_ends_when_validated_then_it_means_the_single_value(
    written: str, meant: str
) -> None:
    cron = schedule({"type": "cron", "expression": written})
    assert isinstance(cron, CronSchedule)
    assert cron.expression == written  # kept as written
    single = schedule({"type": "cron", "expression": meant})
    assert fire_times(cron, utc(2026, 1, 1), 5) == fire_times(single, utc(2026, 1, 1), 5)


def test_given_spans_around_an_offset_change_when_its_instant_is_searched_then_it_is_found_even_when_the_widened_span_holds_another() -> (
    None
):
    # The search widens its span (so that instants near one change share the cache); for a
    # span of months the widened one reaches the next change too, and the span itself counts.
    spring = int(utc(2026, 3, 29, 1).timestamp())
    for days in range(1, 200, 7):
        low, high = spring - 3600, spring + days * 86400
        assert _change_within(ZoneInfo("Europe/Berlin"), low, high) == utc(2026, 3, 29, 1), days
