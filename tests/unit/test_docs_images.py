"""The site's pictures of the console are the browser tests' screenshots: each image a page
shows is one a browser test takes (tests/browser/screens.py), so ``make screenshots``
regenerates every one of them."""

from __future__ import annotations

import re
from pathlib import Path

from tests.browser.screens import DOCS_IMAGES, DOCUMENTED

ROOT = Path(__file__).resolve().parents[2]


def _shown() -> set[str]:
    """The images the site's pages show."""
    return {
        name
        for page in (ROOT / "docs").rglob("*.md")
        for name in re.findall(r"\]\((?:\.\./)*images/([\w-]+)\.png\)", page.read_text())
    }


def _steps_taken() -> set[str]:
    """The steps the browser tests take a screenshot of."""
    return {
        step
        for test in (ROOT / "tests" / "browser").glob("test_*.py")
        for step in re.findall(r'shot\(\s*\w+,\s*\w+,\s*"([\w-]+)"\)', test.read_text())
    }


def test_given_the_sites_pages_when_read_then_each_image_they_show_is_a_documented_screenshot() -> (
    None
):
    shown = _shown()

    assert shown  # the console's guide shows the console
    assert shown == set(DOCUMENTED.values())
    for name in shown:
        assert (DOCS_IMAGES / f"{name}.png").is_file(), name


def test_given_the_documented_screenshots_when_listed_then_a_browser_test_takes_each() -> None:
    assert set(DOCUMENTED) <= _steps_taken()


def test_given_the_images_folder_when_listed_then_it_holds_only_the_documented_screenshots() -> (
    None
):
    kept = {path.stem for path in DOCS_IMAGES.glob("*")}

    assert kept == set(DOCUMENTED.values())
