"""The console's secrets in a headless Chromium against one ``chronoq local``: the Secrets page
keeps a value from a password box (emptied once sent, never shown) and lists names and
versions; a job naming secrets shows its references and placeholders as they are, never a
value nor ``[object Object]``; deleting a secret a job names shows that job, and deleting it
once no job names it takes it off the list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.browser.test_console import UI_TIMEOUT, element, shot, sign_in, wait
from tests.e2e.harness import Local, poll

pytestmark = pytest.mark.e2e

NAME = "console-crm-token"
VALUE = "tok-console-7c6b5a4d3e"
OTHER = "console-signing-key"


def _rows(driver: webdriver.Chrome) -> dict[str, str]:
    """The Secrets page's table: each secret's version."""
    return {
        row.get_attribute("data-secret") or "": row.find_element(By.CSS_SELECTOR, ".version").text
        for row in driver.find_elements(By.CSS_SELECTOR, "#secrets tr[data-secret]")
    }


def _put(driver: webdriver.Chrome, name: str, value: str) -> None:
    box = element(driver, "#secret-name")
    box.clear()
    box.send_keys(name)
    element(driver, "#secret-value").send_keys(value)
    element(driver, "#save-secret").click()


def test_given_the_secrets_page_when_secrets_are_kept_used_and_deleted_then_no_value_is_ever_shown(
    browser: webdriver.Chrome, local: Local, artifacts: Path
) -> None:
    driver = browser
    jobs: list[str] = []
    try:
        sign_in(driver, local, "alice")
        element(driver, "#nav-secrets").click()
        element(driver, "#secret-form")

        # kept from the form: the value's box is a password box, emptied once sent
        value_box = element(driver, "#secret-value")
        assert value_box.get_attribute("type") == "password"
        _put(driver, NAME, VALUE)
        wait(driver, lambda: _rows(driver).get(NAME) == "1", "the secret listed", UI_TIMEOUT)
        assert element(driver, "#secret-value").get_attribute("value") == ""
        assert element(driver, "#secret-answer").text == f"Made {NAME}: version 1."
        _put(driver, NAME, VALUE + "-2")
        wait(driver, lambda: _rows(driver).get(NAME) == "2", "its second version", UI_TIMEOUT)
        assert element(driver, "#secret-answer").text == f"Changed {NAME}: version 2."
        _put(driver, OTHER, "key-console-0a9b8c")
        wait(driver, lambda: OTHER in _rows(driver), "another secret", UI_TIMEOUT)

        # a name the API refuses: said at the form, the value's box emptied all the same
        _put(driver, "not a name!", VALUE)
        assert element(driver, "#secret-error").text.startswith("name:")
        assert element(driver, "#secret-value").get_attribute("value") == ""
        shot(driver, artifacts, "secrets-listed")

        # a job naming them: its page shows references and placeholders as the job has them
        status, job = local.call(
            "POST",
            "/jobs",
            body={
                "name": "console-crm-sync",
                "schedule": {"type": "cron", "expression": "0 2 * * *"},
                "target": {
                    "type": "http",
                    "url": "https://crm.example.com/sync",
                    "headers": {
                        "Authorization": {"secret": NAME},
                        "X-Signature": "Bearer {{ secret.%s }}" % OTHER,  # noqa: UP031
                    },
                },
                "notify": {
                    "webhook": "https://hooks.example.com/chronoq",
                    "webhook_headers": {"X-Hook-Token": {"secret": OTHER}},
                },
            },
        )
        assert status == 201, job
        job_id = job["id"]
        jobs.append(job_id)
        driver.get(f"{local.url}/#/jobs/{job_id}")
        headers = element(driver, "#target-headers").text.splitlines()
        assert headers == [
            f"Authorization: secret: {NAME}",
            f"X-Signature: Bearer {{{{ secret.{OTHER} }}}}",
        ]
        assert element(driver, "#webhook-headers").text == f"X-Hook-Token: secret: {OTHER}"
        fields = element(driver, "dl.fields").text
        assert "[object Object]" not in fields
        assert "-> https://hooks.example.com/chronoq" in fields
        shot(driver, artifacts, "secrets-job")

        # a task's environment: shown so, and kept when the job is saved from its form
        environment = {"CRM_TOKEN": {"secret": NAME}, "MODE": "sync"}
        status, task = local.call(
            "POST",
            "/jobs",
            body={
                "name": "console-crm-task",
                "schedule": {"type": "cron", "expression": "0 2 * * *"},
                "target": {
                    "type": "python",
                    "task": "chronoq.tasks:echo",
                    "environment": environment,
                },
            },
        )
        assert status == 201, task
        jobs.append(task["id"])
        driver.get(f"{local.url}/#/jobs/{task['id']}")
        assert element(driver, "#target-environment").text.splitlines() == [
            f"CRM_TOKEN: secret: {NAME}",
            "MODE: sync",
        ]
        driver.get(f"{local.url}/#/jobs/{task['id']}/edit")
        element(driver, "#save").click()

        def saved() -> dict[str, Any] | None:
            found: dict[str, Any] = local.call("GET", f"/jobs/{task['id']}")[1]
            return found if found["version"] > task["version"] else None

        assert poll(saved, UI_TIMEOUT, lambda: "saved")["target"]["environment"] == environment
        # (the form goes on to the job's page once the answer is in: only then is it left)
        page = f"#/jobs/{task['id']}"
        wait(
            driver, lambda: driver.execute_script("return location.hash") == page, page, UI_TIMEOUT
        )

        # deleting a secret the job names: refused, the job shown, the secret kept
        driver.get(f"{local.url}/#/secrets")
        driver.execute_script("window.confirm = () => true")
        element(driver, f'#secrets tr[data-secret="{NAME}"] .delete-secret').click()
        in_use = element(driver, "#secret-in-use")
        listed = [a.text for a in in_use.find_elements(By.CSS_SELECTOR, "li a")]
        assert sorted(listed) == sorted(jobs)
        assert NAME in _rows(driver)
        shot(driver, artifacts, "secrets-in-use")

        # no job names it any more: deleted, off the list
        while jobs:
            assert local.call("DELETE", f"/jobs/{jobs.pop()}")[0] == 204
        element(driver, f'#secrets tr[data-secret="{NAME}"] .delete-secret').click()
        wait(driver, lambda: NAME not in _rows(driver), "the secret deleted", UI_TIMEOUT)
        assert not driver.find_elements(By.CSS_SELECTOR, "#secret-in-use")

        # the value was never in the page
        source = str(driver.execute_script("return document.documentElement.outerHTML"))
        assert VALUE not in source
    finally:
        for left in jobs:
            local.call("DELETE", f"/jobs/{left}")
        for name in (NAME, OTHER):
            local.call("DELETE", f"/secrets/{name}")
