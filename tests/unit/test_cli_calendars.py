"""``chronoq calendars import|list|show|delete`` against the api function's handler over the
fakes, and the iCalendar reading behind ``import``: all-day events' dates (DTEND exclusive),
folded lines, recurring events named and left out, bad files refused saying where."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from chronoq.cli import ical

from tests.builders import Fakes
from tests.unit.cli_on_fakes import USER, HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)

NYSE = """BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//example//holidays//EN\r
X-WR-TIMEZONE:America/New_York\r
BEGIN:VEVENT\r
UID:1@example\r
DTSTART;VALUE=DATE:20271225\r
DTEND;VALUE=DATE:20271226\r
SUMMARY:Christmas\r
BEGIN:VALARM\r
ACTION:DISPLAY\r
DTSTART:19700101T000000\r
END:VALARM\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:2@example\r
DTSTART;VALUE=DATE:20271224\r
DTEND;VALUE=DATE:\r
 20271227\r
SUMMARY:Long weekend\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:3@example\r
DTSTART;VALUE=DATE:20270704\r
RRULE:FREQ=YEARLY\r
SUMMARY:Independence Day\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:4@example\r
DTSTART;TZID=America/New_York:20270526T093000\r
DTEND;TZID=America/New_York:20270526T160000\r
SUMMARY:Early close\r
END:VEVENT\r
END:VCALENDAR\r
"""


def test_given_an_ics_file_when_parsed_then_all_day_events_give_dates_and_ranges() -> None:
    found = ical.parse(NYSE)

    assert found.dates == [date(2027, 12, 25), date(2027, 5, 26)]
    assert found.ranges == [(date(2027, 12, 24), date(2027, 12, 26))]  # (DTEND exclusive)
    assert found.timezone == "America/New_York"
    assert found.recurring == ["Independence Day"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("hello", "BEGIN:VCALENDAR"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\nEND:VCALENDAR", "no DTSTART"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20271345\nEND:VEVENT", "not a date"),
        ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20271201\nEND:VCALENDAR", "is not ended"),
    ],
)
def test_given_a_bad_ics_file_when_parsed_then_refused_saying_what(text: str, says: str) -> None:
    with pytest.raises(ical.IcsError, match=says):
        ical.parse(text)


def test_given_an_ics_file_when_imported_then_its_dates_are_put_and_listed_shown_and_deleted(
    api: HandlerApi, fakes: Fakes, tmp_path: Path
) -> None:
    path = tmp_path / "nyse.ics"
    path.write_text(NYSE, encoding="utf-8")

    made = chronoq("calendars", "import", "us-market-holidays", str(path))
    assert made.stdout.startswith("made calendar us-market-holidays, version 1: 2 dates, 1 ranges")
    assert "Independence Day" in made.stderr
    kept = fakes.store.get_calendars(USER)["us-market-holidays"]
    assert kept.rules.timezone == "America/New_York"
    assert kept.rules.dates == (date(2027, 5, 26), date(2027, 12, 25))

    listed = json.loads(chronoq("calendars", "list", "-o", "json").stdout)
    assert [c["name"] for c in listed["calendars"]] == ["us-market-holidays"]
    shown = chronoq("calendars", "show", "us-market-holidays").stdout
    assert "ranges: 2027-12-24..2027-12-26" in shown
    assert chronoq("calendars", "delete", "us-market-holidays").stdout == (
        "deleted calendar us-market-holidays\n"
    )
    assert fakes.store.get_calendars(USER) == {}


def test_given_a_calendar_in_use_when_deleted_then_the_jobs_using_it_are_listed(
    api: HandlerApi, fakes: Fakes, tmp_path: Path
) -> None:
    path = tmp_path / "nyse.ics"
    path.write_text(NYSE, encoding="utf-8")
    chronoq("calendars", "import", "us", str(path), "--timezone", "UTC")
    status, job, _ = api.handler.call(
        "POST",
        "/jobs",
        USER,
        {
            "name": "close",
            "schedule": {"type": "cron", "expression": "0 16 * * *", "calendar": {"name": "us"}},
            "target": {"type": "http", "url": "https://example.com/close"},
        },
    )
    assert status == 201

    refused = chronoq("calendars", "delete", "us", code=1)
    assert job["id"] in refused.stderr


def test_given_calendar_flags_when_a_job_is_created_then_its_schedule_names_the_calendar(
    api: HandlerApi, fakes: Fakes, tmp_path: Path
) -> None:
    path = tmp_path / "nyse.ics"
    path.write_text(NYSE, encoding="utf-8")
    chronoq("calendars", "import", "nyse", str(path))
    made = chronoq(
        "jobs", "create", "--name", "close", "--cron", "0 16 * * *",
        "--timezone", "America/New_York", "--http", "https://example.com/close",
        "--calendar", "nyse", "--on-excluded", "next_business_day", "-o", "json",
    )  # fmt: skip
    job = json.loads(made.stdout)
    assert job["schedule"]["calendar"]["name"] == "nyse"
    assert job["schedule"]["calendar"]["on_excluded"] == "next_business_day"
    assert fakes.store.calendar_users(USER, "nyse") == [job["id"]]

    refused = chronoq(
        "jobs", "create", "--name", "x", "--every", "5m", "--http", "https://example.com",
        "--on-excluded", "skip", code=2,
    )  # fmt: skip
    assert "--on-excluded" in refused.stderr


def test_given_a_schedule_on_a_calendar_when_put_in_words_then_the_calendar_is_named() -> None:
    from chronoq.cli.render import schedule_words

    schedule = {"type": "cron", "expression": "0 16 * * *", "timezone": "America/New_York"}
    on = {"name": "nyse", "on_excluded": "next_business_day"}
    assert schedule_words({**schedule, "calendar": on}) == (
        "daily at 16:00 (America/New_York) on nyse business days, moved to the next"
    )
    assert schedule_words({**schedule, "calendar": {"name": "nyse", "on_excluded": "skip"}}) == (
        "daily at 16:00 (America/New_York) on nyse business days"
    )
