"""The README stays a short introduction whose links all lead somewhere: the documentation
lives in the site (docs/), which mkdocs builds strictly; the README is outside the site, so
its links are checked here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: What the README may grow to: an introduction, the diagram, the set-up, a taste, links.
MOST_LINES = 150


def test_given_the_readme_when_measured_then_it_is_short() -> None:
    assert len(README.read_text().splitlines()) <= MOST_LINES


def test_given_the_readmes_links_when_followed_then_each_file_exists() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]

    assert local  # the README links to the docs
    for link in local:
        assert (ROOT / link).exists(), link
