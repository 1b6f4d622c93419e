"""The web console in a real headless Chromium against one ``chronoq local``: signing in with
a token, creating a job through the form, watching it run, reading its run's log, a
validation error shown at its field, and another user's jobs absent."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser.screens import documented_image
from tests.e2e.harness import Local

pytestmark = pytest.mark.e2e

#: Longest wait for the page to show something the API already has, and for a job due seconds
#: from now to have run (generous: a loaded machine is slow; how fast is make bench's).
UI_TIMEOUT = 120.0
RUN_TIMEOUT = 300.0


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


def test_the_console_is_served_without_a_token_and_the_api_still_asks_for_one(
    local: Local,
) -> None:
    status, headers, body = _get(local.url + "/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert b'src="console/app.js"' in body
    status, headers, _ = _get(local.url + "/console/app.js")
    assert (status, headers["Content-Type"]) == (200, "text/javascript; charset=utf-8")
    assert _get(local.url + "/console/%2e%2e/__init__.py")[0] == 404
    assert _get(local.url + "/console/nothing.js")[0] == 404
    assert _get(local.url + "/jobs")[0] == 401


# --- in the browser ---------------------------------------------------------------------------


def wait(driver: webdriver.Chrome, condition: Callable[[], Any], what: str, timeout: float) -> Any:
    """Wait until ``condition()`` is truthy (elements re-rendered meanwhile are tried again)."""

    def attempt(_: Any) -> Any:
        try:
            return condition()
        except StaleElementReferenceException:
            return None

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(attempt, message=what)


def element(driver: webdriver.Chrome, css: str, timeout: float = UI_TIMEOUT) -> WebElement:
    found: WebElement = wait(
        driver,
        lambda: next(
            (e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()), None
        ),
        f"{css} shown",
        timeout,
    )
    return found


def shot(driver: webdriver.Chrome, artifacts: Path, name: str) -> None:
    """The step's screenshot, kept in ``artifacts``; a documented step's also written into the
    site's images when they are being regenerated (tests/browser/screens.py)."""
    assert driver.save_screenshot(str(artifacts / f"{name}.png")), name
    image = documented_image(name)
    if image is not None:
        assert driver.save_screenshot(str(image)), image


def sign_in(driver: webdriver.Chrome, local: Local, user: str) -> None:
    driver.get(local.url + "/")
    driver.execute_script("localStorage.clear()")
    driver.get(local.url + "/#/")
    token = local.token(user)

    def typed() -> bool:  # (the form may be drawn again as the console starts: tried again)
        field = element(driver, "#token")
        field.clear()
        field.send_keys(token)
        return field.get_attribute("value") == token

    wait(driver, typed, "the token typed in", UI_TIMEOUT)

    def clicked() -> bool:
        element(driver, "#sign-in").click()
        return True

    wait(driver, clicked, "sign in", UI_TIMEOUT)
    wait(
        driver,
        lambda: driver.find_element(By.ID, "who").text == user,
        f"signed in as {user}",
        UI_TIMEOUT,
    )
    element(driver, "#jobs tbody tr")  # the list has been loaded


def job_names(driver: webdriver.Chrome) -> list[str]:
    return [
        e.text
        for e in driver.find_elements(By.CSS_SELECTOR, "#jobs tbody tr[data-job] td:first-child")
    ]


def fill(driver: webdriver.Chrome, field: str, text: str) -> None:
    box = element(driver, f'[data-field="{field}"]')
    box.clear()
    box.send_keys(text)


@pytest.fixture
def cleanup(local: Local) -> Iterator[list[tuple[str, str]]]:
    """Jobs (id, owner) the test made through the console: deleted when it ends."""
    made: list[tuple[str, str]] = []
    yield made
    for job_id, owner in made:
        local.call("DELETE", f"/jobs/{job_id}", user=owner)


def test_create_a_job_watch_it_run_and_read_its_log(
    browser: webdriver.Chrome, local: Local, artifacts: Path, cleanup: list[tuple[str, str]]
) -> None:
    driver = browser
    driver.get(local.url + "/")
    element(driver, "#sign-in-form")
    shot(driver, artifacts, "01-sign-in")
    sign_in(driver, local, "alice")
    shot(driver, artifacts, "02-jobs")

    # a validation error is shown at its field
    element(driver, "#new-job").click()
    fill(driver, "name", "console-echo")
    Select(element(driver, '[data-field="schedule.type"]')).select_by_value("cron")
    fill(driver, "schedule.expression", "61 * * * *")
    Select(element(driver, '[data-field="target.type"]')).select_by_value("python")
    fill(driver, "target.task", "chronoq.tasks:echo")
    fill(driver, "target.args", '{"hello": "console"}')
    element(driver, "#save").click()
    error = element(driver, '[data-for="schedule.expression"] .field-error')
    assert error.text.startswith("schedule.expression:"), error.text
    assert "invalid" in (
        element(driver, '[data-for="schedule.expression"]').get_attribute("class") or ""
    )
    assert not driver.find_element(By.ID, "form-error").is_displayed()
    shot(driver, artifacts, "03-validation-error")

    # the same form, fixed: a one-time job due seconds from now
    Select(element(driver, '[data-field="schedule.type"]')).select_by_value("at")
    due = (datetime.now(UTC) + timedelta(seconds=8)).replace(microsecond=0)
    fill(driver, "schedule.at", due.isoformat().replace("+00:00", "Z"))
    element(driver, "#save").click()
    name = element(driver, "#job-name")
    assert name.text == "console-echo"
    job_id = driver.current_url.rsplit("/", 1)[-1]
    cleanup.append((job_id, "alice"))
    assert job_id.startswith("job_")
    assert element(driver, "#upcoming li").text == due.strftime("%Y-%m-%d %H:%M:%SZ")

    # it runs, and the job's timeline shows it ending SUCCEEDED
    succeeded = element(driver, '#runs tr[data-status="SUCCEEDED"]', timeout=RUN_TIMEOUT)
    shot(driver, artifacts, "04-job")
    succeeded.find_element(By.CSS_SELECTOR, "a").click()

    # the run's page: its attempt, output and log
    wait(
        driver,
        lambda: "SUCCEEDED" in element(driver, "#run-status").text,
        "run SUCCEEDED",
        UI_TIMEOUT,
    )
    wait(driver, lambda: "echo" in element(driver, "#logs").text, "the run's log", UI_TIMEOUT)
    assert json.loads(element(driver, "#output").text)["result"]["args"] == {"hello": "console"}
    assert len(driver.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")) == 1
    shot(driver, artifacts, "05-run")

    # the list shows the job, its schedule in words and its last run's status
    driver.get(local.url + "/#/")
    row = element(driver, f'#jobs tr[data-job="{job_id}"]')
    wait(
        driver,
        lambda: "SUCCEEDED" in row.find_element(By.CSS_SELECTOR, ".last-run").text,
        "last run",
        UI_TIMEOUT,
    )
    assert "once at" in row.text


def test_another_users_jobs_are_absent(
    browser: webdriver.Chrome, local: Local, artifacts: Path, cleanup: list[tuple[str, str]]
) -> None:
    driver = browser
    status, job = local.call(
        "POST",
        "/jobs",
        user="alice",
        body={
            "name": "alice-private",
            "schedule": {"type": "cron", "expression": "0 2 * * *", "timezone": "Europe/Berlin"},
            "target": {"type": "python", "task": "chronoq.tasks:echo"},
        },
    )
    assert status == 201, job
    cleanup.append((job["id"], "alice"))

    sign_in(driver, local, "alice")
    row = element(driver, f'#jobs tr[data-job="{job["id"]}"]')
    assert "daily at 02:00 (Europe/Berlin)" in row.text

    # its page: the coming fire times, and the buttons
    row.find_element(By.CSS_SELECTOR, "a").click()
    assert (
        len(
            wait(
                driver,
                lambda: driver.find_elements(By.CSS_SELECTOR, "#upcoming li"),
                "preview",
                UI_TIMEOUT,
            )
        )
        == 10
    )
    element(driver, "#trigger").click()
    element(driver, '#runs tr[data-status="SUCCEEDED"]', timeout=RUN_TIMEOUT)
    element(driver, "#trigger").click()
    wait(
        driver,
        lambda: (
            len(driver.find_elements(By.CSS_SELECTOR, '#runs tr[data-status="SUCCEEDED"]')) == 2
        ),
        "two triggered runs SUCCEEDED",
        RUN_TIMEOUT,
    )
    shot(driver, artifacts, "06-job-triggered")
    element(driver, "#pause").click()
    element(driver, "#resume")
    assert local.call("GET", f"/jobs/{job['id']}")[1]["state"] == "PAUSED"
    element(driver, "#resume").click()
    element(driver, "#pause")
    assert local.call("GET", f"/jobs/{job['id']}")[1]["state"] == "ACTIVE"

    # edited through the form: the fields it shows, and the JSON of the rest
    element(driver, "#edit").click()
    assert (
        element(driver, '[data-field="schedule.expression"]').get_attribute("value") == "0 2 * * *"
    )
    fill(driver, "schedule.expression", "30 6 * * 1-5")
    fill(driver, "extra", '{"priority": "high"}')
    element(driver, "#save").click()
    wait(
        driver,
        lambda: "weekdays at 06:30 (Europe/Berlin)" in element(driver, "#main dl").text,
        "edited",
        UI_TIMEOUT,
    )
    edited = local.call("GET", f"/jobs/{job['id']}")[1]
    assert (edited["priority"], edited["version"] > job["version"]) == ("high", True)

    element(driver, "#sign-out").click()
    sign_in(driver, local, "bob")
    shot(driver, artifacts, "07-bob")
    assert "alice-private" not in job_names(driver)
    assert not driver.find_elements(By.CSS_SELECTOR, f'#jobs tr[data-job="{job["id"]}"]')

    # nor can bob open it by its address
    driver.get(f"{local.url}/#/jobs/{job['id']}")
    assert "not found" in element(driver, "p.error").text


def test_a_token_of_another_data_directory_is_refused_naming_the_likely_cause(
    browser: webdriver.Chrome, local: Local, artifacts: Path, tmp_path: Path
) -> None:
    from chronoq.local import tokens

    driver = browser
    elsewhere = tokens.mint(tmp_path / "elsewhere", "alice")  # (another directory's secret)
    driver.get(local.url + "/")
    driver.execute_script("localStorage.clear()")
    driver.get(local.url + "/#/")

    def typed() -> bool:  # (the form may be drawn again as the console starts: tried again)
        field = element(driver, "#token")
        field.clear()
        field.send_keys(elsewhere)
        return field.get_attribute("value") == elsewhere

    wait(driver, typed, "the token typed in", UI_TIMEOUT)
    element(driver, "#sign-in").click()

    said = element(driver, "#sign-in-form .error").text
    shot(driver, artifacts, "refused-token")
    assert "not signed with this chronoq local's secret" in said
    assert '"chronoq token NAME", run in the directory chronoq local runs in' in said
    assert driver.execute_script("return localStorage.getItem('chronoq.token')") is None
