"""The console's backfills and re-runs in a headless Chromium against one ``chronoq local``: a
job's window and flow shown, a backfill started from its page and listed there with its runs
marked as backfill runs, cancelled from there, and a run re-run from its page."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser.test_console import RUN_TIMEOUT, UI_TIMEOUT, element, shot, sign_in, wait
from tests.e2e.harness import FINISHED, Local, poll
from tests.support import Sink, http_sink

pytestmark = pytest.mark.e2e


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s


def test_given_a_job_with_a_window_and_a_flow_when_backfilled_and_rerun_from_the_console_then_each_shows_where_a_person_looks(
    browser: webdriver.Chrome, local: Local, sink: Sink, artifacts: Path
) -> None:
    status, job = local.call(
        "POST",
        "/jobs",
        body={
            "name": "nightly sync",
            "schedule": {"type": "cron", "expression": "0 * * * *", "window_seconds": 600},
            "target": {"type": "http", "url": f"{sink.url}/sync"},
            "concurrency": "forbid",
            "flow": {"key": "partner-api", "max_running": 2},
            "retry": {"max_attempts": 1},
        },
    )
    assert status == 201, job
    try:
        local.call("POST", f"/jobs/{job['id']}/pause")  # only what the console starts runs
        sign_in(browser, local, "alice")
        browser.get(f"{local.url}/#/jobs/{job['id']}")
        fields = element(browser, "dl.fields").text
        assert "each run starts within 10m00s of its fire time" in fields
        assert "partner-api: 2 running at once" in fields

        # a backfill of the last three hours, from the form on the job's page
        to = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        for box, at in (("#backfill-from", to - timedelta(hours=3)), ("#backfill-to", to)):
            browser.execute_script(
                "arguments[0].value = arguments[1]", element(browser, box), f"{at:%Y-%m-%dT%H:%M}"
            )
        element(browser, "#backfill").click()
        row = element(browser, "#backfills tr[data-backfill]")
        assert row.get_attribute("data-state") in ("RUNNING", "COMPLETED")
        wait(
            browser,
            lambda: len(browser.find_elements(By.CSS_SELECTOR, "#runs tr[data-run]")) >= 1,
            "its first run listed",
            UI_TIMEOUT,
        )
        assert "(backfill)" in element(browser, "#runs").text
        shot(browser, artifacts, "backfill-started")
        (backfill_id,) = [
            r.get_attribute("data-backfill")
            for r in browser.find_elements(By.CSS_SELECTOR, "#backfills tr[data-backfill]")
        ]

        def finished_run() -> dict[str, Any] | None:
            runs = local.runs(job["id"])
            return next((r for r in runs if r["status"] in FINISHED), None)

        first = poll(finished_run, RUN_TIMEOUT, lambda: "a backfill run to finish")
        browser.get(f"{local.url}/#/jobs/{job['id']}")
        browser.execute_script("window.confirm = () => true")

        def cancelled() -> bool:  # (the page may be drawn again meanwhile: tried again)
            css = f'#backfills tr[data-backfill="{backfill_id}"] .cancel-backfill'
            element(browser, css).click()
            return True

        wait(browser, cancelled, "the backfill's Cancel clicked", UI_TIMEOUT)
        wait(
            browser,
            lambda: (
                browser.find_element(
                    By.CSS_SELECTOR, f'#backfills tr[data-backfill="{backfill_id}"]'
                ).get_attribute("data-state")
                in ("CANCELLED", "COMPLETED")
            ),
            "the backfill cancelled",
            UI_TIMEOUT,
        )
        shot(browser, artifacts, "backfill-cancelled")

        # the finished run, re-run from its page: the new run's page, naming the first
        browser.get(f"{local.url}/#/runs/{first['id']}")
        element(browser, "#rerun").click()
        wait(
            browser,
            lambda: "rerun of" in element(browser, "dl.fields").text,
            "the re-run's page",
            UI_TIMEOUT,
        )
        fields = element(browser, "dl.fields").text
        assert first["id"] in fields
        assert "rerun" in fields
        shot(browser, artifacts, "rerun")

        # saved from the edit form unchanged: the window and the flow it does not show stay
        browser.get(f"{local.url}/#/jobs/{job['id']}/edit")
        element(browser, "#save").click()

        def saved() -> dict[str, Any] | None:
            found = local.call("GET", f"/jobs/{job['id']}")[1]
            return found if found["version"] > job["version"] + 1 else None  # (paused: +1)

        edited = poll(saved, UI_TIMEOUT, lambda: "the job saved from its form")
        assert edited["schedule"]["window_seconds"] == 600
        assert edited["flow"] == {
            "key": "partner-api",
            "max_running": 2,
            "max_starts_per_second": None,
        }
    finally:
        local.call("DELETE", f"/jobs/{job['id']}")
