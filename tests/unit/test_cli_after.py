"""``chronoq jobs`` and completion triggers, against the api function's handler over the fakes:
an after job made with ``--after`` (repeatable), shown with its upstreams' names, and they with
it; a run shows the runs that made it."""

from __future__ import annotations

import json

from tests.builders import Fakes
from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)


def test_given_two_upstreams_when_an_after_job_is_made_with_after_then_show_names_them(
    api: HandlerApi, fakes: Fakes
) -> None:
    for name in ("extract", "clean"):
        chronoq("jobs", "create", "--name", name, "--cron", "0 0 1 1 *", "--http", "https://e.x")
    made = chronoq(
        "jobs",
        "create",
        "--name",
        "load",
        "--after",
        "extract",
        "--after",
        "clean",
        "--after-within",
        "6h",
        "--http",
        "https://e.x/load",
        "-o",
        "json",
    )
    job = json.loads(made.stdout)
    assert job["schedule"]["type"] == "after"
    assert job["schedule"]["within_seconds"] == 6 * 3600

    shown = chronoq("jobs", "get", job["id"]).stdout
    upstream = chronoq("jobs", "get", job["schedule"]["jobs"][0]).stdout

    assert "after extract and clean, on SUCCEEDED, waiting up to 6h00m" in shown
    assert "extract (ACTIVE), clean (ACTIVE)" in shown
    assert "load (ACTIVE)" in upstream


def test_given_after_with_cron_then_the_cli_refuses(api: HandlerApi) -> None:
    refused = chronoq(
        "jobs",
        "create",
        "--name",
        "x",
        "--after",
        "a",
        "--cron",
        "* * * * *",
        "--http",
        "https://e.x",
        code=2,
    )
    assert "--after" in refused.stdout + refused.stderr
