"""The console shows pipelines (docs/guides/pipelines.md): an after job's page names its upstreams
(and says what it runs after, in place of upcoming fire times), an upstream's page its downstreams,
a run's page the runs that triggered it and those it triggered. In a real headless Chromium against
a chronoq local of its own, on a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver

from tests.browser.test_console import UI_TIMEOUT, element, fill, shot, sign_in, wait
from tests.e2e.harness import ClockedLocal, start_clocked_local

pytestmark = pytest.mark.e2e

TARGET = {"type": "python", "task": "chronoq.tasks:echo"}


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedLocal]:
    with start_clocked_local(tmp_path_factory.mktemp("chronoq-console-pipelines")) as started:
        yield started


def test_an_after_job_its_upstream_and_their_runs_link_to_each_other(
    browser: webdriver.Chrome, clocked: ClockedLocal, artifacts: Path
) -> None:
    local = clocked
    at = local.whole_second_after(30).isoformat()
    _, extract = local.call(
        "POST",
        "/jobs",
        body={"name": "extract", "schedule": {"type": "at", "at": at}, "target": TARGET},
    )
    status, load = local.call(
        "POST",
        "/jobs",
        body={"name": "load", "schedule": {"type": "after", "jobs": ["extract"]}, "target": TARGET},
    )
    assert status == 201, load

    def load_ran() -> list[dict[str, object]] | None:
        runs = local.runs(load["id"])
        return runs if runs and runs[0]["finished_at"] else None

    (load_run,) = local.run_until(load_ran, 120, "load ran")
    (extract_run,) = local.runs(extract["id"])

    driver = browser
    sign_in(driver, local, "alice")
    driver.get(f"{local.url}/#/jobs/{load['id']}")
    assert element(driver, "#job-upstreams").text == "extract (completed)"  # (a one-time job)
    assert element(driver, "#upcoming-after").text.startswith("Runs after extract, on SUCCEEDED")
    assert "after extract, on SUCCEEDED" in element(driver, "dl.fields").text
    shot(driver, artifacts, "50-after-job")
    # edited through the form: its after schedule kept as it is
    element(driver, "#edit").click()
    fill(driver, "extra", '{"priority": "high"}')
    element(driver, "#save").click()
    wait(driver, lambda: "after extract" in element(driver, "#main dl").text, "edited", UI_TIMEOUT)
    edited = local.call("GET", f"/jobs/{load['id']}")[1]
    assert (edited["priority"], edited["schedule"]) == ("high", load["schedule"])

    driver.get(f"{local.url}/#/jobs/{extract['id']}")
    assert element(driver, "#job-downstreams").text == "load"

    driver.get(f"{local.url}/#/runs/{extract_run['id']}")
    assert element(driver, "#run-triggered").text == load_run["id"]
    driver.get(f"{local.url}/#/runs/{load_run['id']}")
    assert element(driver, "#run-triggered-by").text == extract_run["id"]
    shot(driver, artifacts, "51-after-run")
    for job in (load, extract):
        local.call("DELETE", f"/jobs/{job['id']}")
