"""The console shows jobs' labels, in the list and on a job's page, and filters the list by
them (a label clicked, or typed); a limited job shows its last run and that it is deleted
once done. In a real headless Chromium against one ``chronoq local``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser.test_console import UI_TIMEOUT, element, job_names, shot, sign_in, wait
from tests.e2e.harness import Local

pytestmark = pytest.mark.e2e

NEVER = {"type": "cron", "expression": "0 2 * * *"}
TARGET = {"type": "python", "task": "chronoq.tasks:echo"}


@pytest.fixture
def labelled(local: Local) -> Iterator[dict[str, dict[str, object]]]:
    """Three of alice's jobs with labels (one limited, deleted once done); deleted after."""
    made = {}
    for name, extra in (
        ("label-data-prod", {"labels": {"team": "data", "env": "prod"}}),
        ("label-data-dev", {"labels": {"team": "data", "env": "dev"}, "max_runs": 3}),
        ("label-web", {"labels": {"team": "web"}, "on_complete": "delete"}),
    ):
        status, job = local.call(
            "POST", "/jobs", body={"name": name, "schedule": NEVER, "target": TARGET, **extra}
        )
        assert status == 201, job
        made[name] = job
    yield made
    for job in made.values():
        local.call("DELETE", f"/jobs/{job['id']}")


def test_labels_are_shown_and_the_list_is_filtered_by_them(
    browser: webdriver.Chrome, local: Local, artifacts: Path, labelled: dict[str, dict[str, object]]
) -> None:
    driver = browser
    sign_in(driver, local, "alice")
    row = element(driver, f'#jobs tr[data-job="{labelled["label-data-prod"]["id"]}"]')
    chips = [e.text for e in row.find_elements(By.CSS_SELECTOR, "td.labels a.label")]
    assert chips == ["env=prod", "team=data"]
    shot(driver, artifacts, "10-labels")

    # a label clicked: only the jobs that carry it
    row.find_element(By.XPATH, ".//a[text()='team=data']").click()
    wait(
        driver,
        lambda: sorted(job_names(driver)) == ["label-data-dev", "label-data-prod"],
        "the jobs labelled team=data",
        UI_TIMEOUT,
    )
    assert element(driver, "#label-filter").get_attribute("value") == "team=data"

    # labels typed: every one of them
    box = element(driver, "#label-filter")
    box.clear()
    box.send_keys("team=data env=dev")
    element(driver, "#filter button").click()
    wait(
        driver,
        lambda: job_names(driver) == ["label-data-dev"],
        "the jobs labelled team=data and env=dev",
        UI_TIMEOUT,
    )
    assert "label=team%3Ddata&label=env%3Ddev" in driver.current_url
    shot(driver, artifacts, "11-labels-filtered")

    # a job's page: its labels, its last run, what becomes of it
    element(driver, "#jobs tbody tr[data-job] a").click()
    labels = element(driver, "#job-labels")
    assert [e.text for e in labels.find_elements(By.CSS_SELECTOR, "a.label")] == [
        "env=dev",
        "team=data",
    ]
    assert "3 (the last at" in element(driver, ".fields").text
    driver.get(local.url + f"/#/jobs/{labelled['label-web']['id']}")
    wait(
        driver,
        lambda: "deleted after its last run" in element(driver, ".fields").text,
        "on_complete shown",
        UI_TIMEOUT,
    )

    driver.get(local.url + "/#/?label=team%3Dweb")
    wait(driver, lambda: job_names(driver) == ["label-web"], "team=web", UI_TIMEOUT)
    element(driver, "#clear-filter").click()
    wait(
        driver,
        lambda: {"label-data-dev", "label-data-prod", "label-web"} <= set(job_names(driver)),
        "every job again",
        UI_TIMEOUT,
    )
