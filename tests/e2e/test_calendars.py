"""Business calendars on chronoq local, over HTTP: an every-minute job on a calendar that
excludes today starts no run (while the same schedule on a calendar that does not exclude it
runs), and once the calendar no longer excludes today, its runs start; a calendar in use is
not deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.e2e.harness import Jobs, Local, parse, poll
from tests.support import Sink

EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def calendar(*dates: str) -> dict[str, Any]:
    return {"dates": list(dates), "timezone": "UTC", "business_days": EVERY_DAY}


def every_minute(name: str, path: str, on: str, sink: Sink) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"type": "cron", "expression": "* * * * *", "calendar": {"name": on}},
        "target": {"type": "http", "url": f"{sink.url}/{path}"},
        "retry": {"max_attempts": 1},
    }


def test_given_a_calendar_excluding_today_when_its_job_is_due_then_no_run_starts_until_the_calendar_lets_it(
    local: Local, sink: Sink, jobs: Jobs
) -> None:
    today = datetime.now(UTC).date()
    excluded = [today.isoformat(), (today + timedelta(days=1)).isoformat()]  # (near midnight)
    assert local.call("PUT", "/calendars/e2e-closed", body=calendar(*excluded))[0] in (200, 201)
    assert local.call("PUT", "/calendars/e2e-open", body=calendar())[0] in (200, 201)
    closed = jobs.create(every_minute("on-closed", "closed", "e2e-closed", sink))
    control = jobs.create(every_minute("on-open", "open", "e2e-open", sink))

    assert parse(closed["next_run_at"]).date() > today + timedelta(days=1)
    # the control job's first run has started: the closed job's same fire time has come
    first = poll(lambda: next(iter(local.runs(control["id"])), None), 150, "the control's run")
    poll(lambda: sink.hits_to("/open") or None, 60, "the control's request")
    assert local.runs(closed["id"]) == []
    assert sink.hits_to("/closed") == []

    reopened = local.call("PUT", "/calendars/e2e-closed", body=calendar())
    assert reopened[0] == 200, reopened
    assert reopened[1]["replan"]["replanned"] == [closed["id"]]
    shown = local.call("GET", f"/jobs/{closed['id']}")[1]
    assert parse(shown["next_run_at"]) - parse(first["scheduled_at"]) <= timedelta(minutes=3)
    poll(lambda: sink.hits_to("/closed") or None, 150, "the reopened job's run")
    (run, *_) = local.runs(closed["id"])
    assert parse(run["scheduled_at"]) > parse(first["scheduled_at"])

    refused = local.call("DELETE", "/calendars/e2e-closed")
    assert (refused[0], refused[1]["error"]["jobs"]) == (409, [closed["id"]])
    jobs.delete_all()
    assert local.call("DELETE", "/calendars/e2e-closed")[0] == 204
    assert local.call("DELETE", "/calendars/e2e-open")[0] == 204
