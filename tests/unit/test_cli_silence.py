"""``chronoq jobs`` and silence, against the api function's handler over the fakes: a job's
``expect`` set with ``--expect-within``; ``jobs get`` and ``jobs list`` show its last success
and since when it is silent; ``jobs list --silent`` asks for the silent ones only."""

from __future__ import annotations

import json
from datetime import timedelta

from tests.builders import Fakes
from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)


def pass_time(fakes: Fakes, seconds: float) -> None:
    end = fakes.clock() + timedelta(seconds=seconds)
    while fakes.clock() < end:
        fakes.clock.advance(60)
        fakes.dispatcher.dispatch()


def test_given_a_job_expecting_a_success_hourly_when_it_goes_silent_then_get_and_list_show_it(
    api: HandlerApi, fakes: Fakes
) -> None:
    made = chronoq(
        "jobs",
        "create",
        "--name",
        "nightly",
        "--cron",
        "0 0 1 1 *",
        "--http",
        "https://example.com/hook",
        "--expect-within",
        "1h",
        "-o",
        "json",
    )
    job = json.loads(made.stdout)
    assert job["expect"] == {"success_within_seconds": 3600}
    chronoq("jobs", "create", "--name", "plain", "--cron", "0 0 1 1 *", "--http", "https://e.x")
    pass_time(fakes, 3600 + 3 * 60)

    shown = chronoq("jobs", "get", job["id"]).stdout
    listed = chronoq("jobs", "list").stdout
    silent = chronoq("jobs", "list", "--silent", "-o", "json").stdout

    assert "a success within 1h00m" in shown
    assert "silent since" in shown
    assert "LAST SUCCESS" in listed
    assert "SILENT SINCE" in listed
    assert [j["name"] for j in json.loads(silent)["jobs"]] == ["nightly"]
    assert api.paths()[-1] == "GET /jobs?silent=true"


def test_given_jobs_without_expect_when_listed_then_no_silence_column_is_shown(
    api: HandlerApi,
) -> None:
    chronoq("jobs", "create", "--name", "plain", "--cron", "0 0 1 1 *", "--http", "https://e.x")

    listed = chronoq("jobs", "list").stdout

    assert "SILENT" not in listed
