"""What people see: tables, schedules in words, times made short, API errors with their field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq.cli import render
from chronoq.cli.errors import NOT_FOUND, ApiError

NOW = datetime(2026, 11, 25, 21, 48, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ({"type": "cron", "expression": "* * * * *", "timezone": "UTC"}, "every minute"),
        ({"type": "cron", "expression": "*/5 * * * *"}, "every 5 minutes"),
        ({"type": "cron", "expression": "15 * * * *"}, "hourly at :15"),
        (
            {"type": "cron", "expression": "0 2 * * *", "timezone": "Europe/Berlin"},
            "daily at 02:00 (Europe/Berlin)",
        ),
        ({"type": "cron", "expression": "30 9 * * 1-5"}, "weekdays at 09:30"),
        ({"type": "cron", "expression": "0 8 * * 1"}, "Mondays at 08:00"),
        ({"type": "cron", "expression": "0 6 1 * *"}, "monthly on day 1 at 06:00"),
        ({"type": "cron", "expression": "0 6 1 1 *"}, "cron 0 6 1 1 *"),
        ({"type": "rate", "every": "5 minutes"}, "every 5 minutes"),
        (
            {"type": "rate", "every": "1 day", "end_at": "2027-01-01T00:00:00Z"},
            "every 1 day until 2027-01-01 00:00:00Z",
        ),
        ({"type": "at", "at": "2026-11-25T21:48:30Z"}, "once at 2026-11-25 21:48:30Z"),
    ],
)
def test_given_a_schedule_when_shown_then_it_reads_in_words(
    schedule: dict[str, Any], words: str
) -> None:
    assert render.schedule_words(schedule) == words


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.004, "4 ms"), (1.25, "1.2 s"), (185, "3m05s"), (7800, "2h10m"), (273600, "3d4h")],
)
def test_given_a_length_of_time_when_shown_then_it_is_short(seconds: float, text: str) -> None:
    assert render.span(seconds) == text


def test_given_jobs_when_listed_then_they_are_an_aligned_table_with_schedule_in_words_and_next_run() -> (
    None
):
    jobs: list[dict[str, Any]] = [
        {
            "id": "job_1",
            "name": "hello",
            "state": "ACTIVE",
            "schedule": {"type": "at", "at": "2026-11-25T21:48:30Z"},
            "next_run_at": "2026-11-25T21:48:30Z",
        },
        {
            "id": "job_22",
            "name": "nightly",
            "state": "PAUSED",
            "schedule": {"type": "cron", "expression": "0 2 * * *", "timezone": "UTC"},
            "next_run_at": None,
        },
    ]

    lines = render.as_text(render.jobs_table(jobs, NOW)).splitlines()

    assert lines == [
        "ID      NAME     STATE   SCHEDULE                      NEXT RUN",
        "job_1   hello    ACTIVE  once at 2026-11-25 21:48:30Z  2026-11-25 21:48:30Z (in 30.0 s)",
        "job_22  nightly  PAUSED  daily at 02:00                -",
    ]


def test_given_runs_when_listed_then_they_show_status_scheduled_lag_duration_and_attempts() -> None:
    runs: list[dict[str, Any]] = [
        {
            "id": "job_1_20261125T214830Z",
            "status": "SUCCEEDED",
            "scheduled_at": "2026-11-25T21:48:30Z",
            "started_at": "2026-11-25T21:48:30.004Z",
            "finished_at": "2026-11-25T21:48:30.046Z",
            "lag_ms": 4,
            "attempts": [{"attempt": 1}],
        },
        {
            "id": "job_1_20261125T214930Z",
            "status": "SCHEDULED",
            "scheduled_at": "2026-11-25T21:49:30Z",
            "lag_ms": None,
            "attempts": [],
        },
    ]

    lines = render.as_text(render.runs_table(runs)).splitlines()

    assert lines == [
        "ID                      STATUS     SCHEDULED             LAG   DURATION  ATTEMPTS",
        "job_1_20261125T214830Z  SUCCEEDED  2026-11-25 21:48:30Z  4 ms  42 ms     1",
        "job_1_20261125T214930Z  SCHEDULED  2026-11-25 21:49:30Z                  0",
    ]


def test_given_the_current_error_shape_when_shown_then_each_field_is_named() -> None:
    error = ApiError(
        422,
        {
            "message": "invalid request: schedule.cron.expression",
            "errors": [{"field": "schedule.cron.expression", "message": "must have five fields"}],
        },
    )

    assert error.exit_code == 1
    assert error.format_message().splitlines() == [
        "HTTP 422: invalid request: schedule.cron.expression",
        "  schedule.cron.expression: must have five fields",
    ]


def test_given_the_new_error_shape_when_shown_then_its_code_and_field_are_named() -> None:
    error = ApiError(
        422,
        {
            "error": {
                "code": "invalid_request",
                "message": "must be whole minutes",
                "field": "schedule.every",
            }
        },
    )

    assert error.format_message().splitlines() == [
        "HTTP 422 invalid_request: must be whole minutes",
        "  schedule.every: must be whole minutes",
    ]


def test_given_a_404_when_shown_then_the_exit_code_says_not_found() -> None:
    error = ApiError(
        404, {"error": {"code": "not_found", "message": "job job_1 not found", "field": None}}
    )

    assert error.exit_code == NOT_FOUND
    assert error.format_message() == "HTTP 404 not_found: job job_1 not found"


def test_given_an_answer_that_is_not_json_when_shown_then_it_is_shown_as_it_is() -> None:
    assert ApiError(502, "Bad Gateway").format_message() == "HTTP 502: Bad Gateway"


def test_given_an_owners_limits_when_rendered_then_each_shows_its_use_against_it() -> None:
    text = render.limits(
        {
            "owner": "alice",
            "jobs": {"limit": 10000, "used": 3},
            "running_backfills_per_job": {"limit": 3, "used": {"job_a": 2}},
            "waiting_triggers_per_job": {"limit": 1000},
        }
    )

    assert text.splitlines() == [
        "limits of alice:",
        "  jobs                          3 of 10,000",
        "  running backfills per job     job_a 2 (at most 3 each)",
        "  waiting triggers per job      at most 1,000",
    ]
