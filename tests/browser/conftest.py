"""Fixtures of the console's browser tests: Debian's chromium and its chromedriver (installed
with apt-get when missing and the tests run as root, e.g. on CI), one headless browser and one
``chronoq local`` for all of them (each test signs in afresh and deletes what it made), and a
folder for the screenshots the tests keep."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.e2e.harness import Local, start_local

#: Screenshots of each step, kept after the run (gitignored).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
PACKAGES = ("chromium", "chromium-driver")
INSTALL_TIMEOUT_SECONDS = 900


def _installed() -> tuple[str, str] | None:
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _install() -> str:
    """Installs Debian's chromium and chromedriver; the reason when it cannot."""
    if not shutil.which("apt-get"):
        return "no apt-get to install chromium with"
    if os.geteuid() != 0:
        return "not root: cannot apt-get install chromium chromium-driver (install them first)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS
        )
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}"
    return ""


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """The paths of chromium and chromedriver, installed if need be; the browser tests are
    skipped, saying why, only when they cannot be."""
    found = _installed()
    if found is None:
        reason = _install()
        found = _installed()
        if found is None:
            pytest.skip(f"the console's browser tests need chromium: {reason or 'not found'}")
    return found


@pytest.fixture(scope="package")
def browser(chromium: tuple[str, str]) -> Iterator[webdriver.Chrome]:
    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="package")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    with start_local(tmp_path_factory.mktemp("chronoq-console")) as started:
        yield started


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
