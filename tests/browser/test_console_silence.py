"""The console shows a silent job (docs/api/notifications.md, "Silence"): a SILENT badge in the
list, which its "Silent only" filter narrows to the silent jobs, and, on the job's page, what it
expects, its last success and since when it is silent. In a real headless Chromium against a chronoq
local of its own, on a clock the test moves (as tests/e2e/test_silence.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chronoq.domain import limits as lim
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser.test_console import UI_TIMEOUT, element, job_names, shot, sign_in, wait
from tests.e2e.harness import ClockedLocal, start_clocked_local

pytestmark = pytest.mark.e2e

NEVER = {"type": "cron", "expression": "0 0 1 1 *"}
TARGET = {"type": "python", "task": "chronoq.tasks:echo"}


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedLocal]:
    with start_clocked_local(tmp_path_factory.mktemp("chronoq-console-silence")) as started:
        yield started


def test_a_silent_job_is_badged_filtered_and_explained(
    browser: webdriver.Chrome, clocked: ClockedLocal, artifacts: Path
) -> None:
    local = clocked
    made = {}
    for name, extra in (
        ("silent-one", {"expect": {"success_within_seconds": lim.MIN_SUCCESS_WITHIN_SECONDS}}),
        ("waiting-one", {"expect": {"success_within_seconds": 24 * 3600}}),
        ("plain-one", {}),
    ):
        status, job = local.call(
            "POST", "/jobs", body={"name": name, "schedule": NEVER, "target": TARGET, **extra}
        )
        assert status == 201, job
        made[name] = job

    def silent() -> bool | None:
        _, page = local.call("GET", "/jobs?silent=true")
        return [j["name"] for j in page["jobs"]] == ["silent-one"] or None

    local.run_until(silent, 120, "silent-one silent")

    driver = browser
    sign_in(driver, local, "alice")
    row = element(driver, f'#jobs tr[data-job="{made["silent-one"]["id"]}"]')
    assert [e.text for e in row.find_elements(By.CSS_SELECTOR, ".s-silent")] == ["SILENT"]
    others = [made["waiting-one"]["id"], made["plain-one"]["id"]]
    for job_id in others:
        row = element(driver, f'#jobs tr[data-job="{job_id}"]')
        assert row.find_elements(By.CSS_SELECTOR, ".s-silent") == []
    shot(driver, artifacts, "40-silent-badge")

    element(driver, "#silent-filter").click()
    element(driver, "#filter button").click()
    wait(driver, lambda: job_names(driver) == ["silent-one"], "the silent jobs only", UI_TIMEOUT)
    assert "silent=true" in driver.current_url
    shot(driver, artifacts, "41-silent-only")

    element(driver, "#jobs tbody tr[data-job] a").click()
    silence = element(driver, "#job-silent")
    assert "SILENT" in silence.text
    page = element(driver, "dl.fields").text
    assert "a success within 1m00s" in page
    assert "none yet" in page  # its last success
    shot(driver, artifacts, "42-silent-job")
    for job in made.values():
        local.call("DELETE", f"/jobs/{job['id']}")
