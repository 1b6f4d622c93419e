"""A job's audit trail on its page in the console, in a headless Chromium against one ``chronoq
local``: a change made from the page is listed first, from the console, by the user, over the
job's creation through the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser.test_console import UI_TIMEOUT, element, shot, sign_in, wait
from tests.e2e.harness import Local

pytestmark = pytest.mark.e2e


def test_given_a_job_paused_from_its_page_when_its_trail_is_shown_then_the_pause_is_the_consoles(
    browser: webdriver.Chrome, local: Local, artifacts: Path
) -> None:
    status, job = local.call(
        "POST",
        "/jobs",
        body={
            "name": "audited",
            "schedule": {"type": "cron", "expression": "0 3 * * *"},
            "target": {"type": "http", "url": "http://127.0.0.1:9/hook"},
            "priority": "low",
        },
    )
    assert status == 201, job
    try:
        sign_in(browser, local, "alice")
        browser.get(f"{local.url}/#/jobs/{job['id']}")
        element(browser, '#audit tr[data-action="create"]')

        def paused() -> bool:  # (the page may be drawn again meanwhile: tried again)
            element(browser, "#pause").click()
            return True

        wait(browser, paused, "Pause clicked", UI_TIMEOUT)

        def rows() -> list[list[str]]:
            return [
                [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
                for row in browser.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
            ]

        wait(browser, lambda: len(rows()) == 2, "the pause in the trail", UI_TIMEOUT)
        (pause, create) = rows()
        assert pause[1:4] == ["pause", "alice", "console"]
        assert pause[4] == "state: ACTIVE → PAUSED"
        assert create[1:4] == ["create", "alice", "api"]
        assert "priority = low" in create[4]
        shot(browser, artifacts, "audit-trail")
    finally:
        local.call("DELETE", f"/jobs/{job['id']}")
