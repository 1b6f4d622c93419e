"""The calendars routes through the api function's handler on the fakes: bad bodies and names
refused with 422 naming the field, tenancy, a job naming an unknown calendar refused naming
``schedule.calendar.name``, next_run_at and the preview on the calendar, 409 naming the jobs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.unit.api_on_fakes import Api, api_on_fakes


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def job(calendar: dict[str, Any], name: str = "close") -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {
            "type": "cron",
            "expression": "0 16 * * *",
            "timezone": "America/New_York",
            "calendar": calendar,
        },
        "target": {"type": "http", "url": "https://example.com/close"},
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"dates": ["2026-02-30"]}, "dates.0"),
        ({"ranges": [["2026-12-31", "2026-12-24"]]}, "ranges"),
        ({"ranges": [["2026-01-01", "2027-06-01"]]}, "ranges"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"business_days": ["funday"]}, "business_days.0"),
        ({"business_days": []}, "business_days"),
        ({"dates": [], "extra": 1}, "extra"),
    ],
)
def test_given_a_bad_calendar_when_put_then_422_names_the_field(
    api: Api, body: dict[str, Any], field: str
) -> None:
    status, answer, _ = api.call("PUT", "/calendars/us", body=body)
    assert status == 422, answer
    assert answer["error"]["field"] == field


def test_given_a_bad_name_when_put_then_422_names_it(api: Api) -> None:
    status, answer, _ = api.call("PUT", "/calendars/-us", body={})
    assert (status, answer["error"]["field"]) == (422, "name")


def test_given_another_owners_calendar_then_it_is_not_found_nor_usable(api: Api) -> None:
    assert api.call("PUT", "/calendars/us", user="bob", body={})[0] == 201
    assert api.call("GET", "/calendars/us")[0] == 404
    assert api.call("GET", "/calendars")[1] == {"calendars": []}
    status, answer, _ = api.call("POST", "/jobs", body=job({"name": "us"}))
    assert (status, answer["error"]["field"]) == (422, "schedule.calendar.name")


def test_given_a_calendar_then_next_run_at_and_the_preview_keep_off_its_dates(api: Api) -> None:
    # the fake clock: Thursday 2026-11-26 12:00 UTC; Thanksgiving and the Friday after
    body = {"ranges": [["2026-11-26", "2026-11-27"]], "timezone": "America/New_York"}
    assert api.call("PUT", "/calendars/nyse", body=body)[0] == 201

    status, made, _ = api.call("POST", "/jobs", body=job({"name": "nyse"}))
    assert status == 201, made
    assert made["next_run_at"] == "2026-11-30T21:00:00Z"  # Monday, 16:00 New York


def test_given_a_calendar_when_previewed_then_the_fire_times_follow_it(api: Api) -> None:
    body = {"business_days": ["wed"], "timezone": "America/New_York"}
    assert api.call("PUT", "/calendars/wednesdays", body=body)[0] == 201
    schedule = job({"name": "wednesdays", "on_excluded": "previous_business_day"})["schedule"]

    status, preview, _ = api.call("POST", "/schedules/preview", body={"schedule": schedule})

    assert status == 200, preview
    locals_ = [f["local"] for f in preview["fire_times"]]
    assert len(locals_) == 10
    # every day's 16:00 moved back onto its Wednesday: one run a week
    assert all(datetime.fromisoformat(t).strftime("%a %H:%M") == "Wed 16:00" for t in locals_)
    assert len(set(locals_)) == 10


def test_given_a_calendar_in_use_when_deleted_then_409_names_the_jobs(api: Api) -> None:
    assert api.call("PUT", "/calendars/nyse", body={})[0] == 201
    made = api.call("POST", "/jobs", body=job({"name": "nyse"}))[1]

    status, answer, _ = api.call("DELETE", "/calendars/nyse")
    assert status == 409
    assert answer["error"]["jobs"] == [made["id"]]
    assert api.call("GET", "/calendars/nyse")[1]["jobs"] == [made["id"]]

    assert api.call("DELETE", f"/jobs/{made['id']}")[0] == 204
    assert api.call("DELETE", "/calendars/nyse")[0] == 204
    assert api.call("GET", "/calendars/nyse")[0] == 404


def test_given_a_calendar_when_a_job_sends_its_own_rules_then_the_calendars_are_kept(
    api: Api,
) -> None:
    assert api.call("PUT", "/calendars/nyse", body={"dates": ["2026-12-25"]})[0] == 201
    forged = {"name": "nyse", "rules": {"dates": [], "business_days": ["sat"]}}
    made = api.call("POST", "/jobs", body=job(forged))[1]
    assert made["schedule"]["calendar"]["rules"]["dates"] == ["2026-12-25"]
    assert made["schedule"]["calendar"]["version"] == 1
