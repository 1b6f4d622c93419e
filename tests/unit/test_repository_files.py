"""The repository's own files a newcomer's tools read: what git ignores, which Node runs the
CDK."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_given_sam_builds_when_git_looks_then_their_directory_is_ignored() -> None:
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()}

    assert ".aws-sam/" in ignored


def test_given_the_node_tools_when_their_engines_are_read_then_node_22_or_24_only() -> None:
    # jsii (the CDK's runtime) supports Node 22 and 24; 20 is past its end of life
    wanted = "^22.0.0 || ^24.0.0"
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())

    assert package["engines"]["node"] == wanted
    assert lock["packages"][""]["engines"]["node"] == wanted
