"""The deployment's settings, as the docs list them: every CDK context key the app reads has
its row in the settings table of docs/deploying.md, and every row names a key the app reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from constructs import Node

PAGE = Path(__file__).resolve().parents[2] / "docs" / "deploying.md"


def _keys_read(tmp_path: Path) -> set[str]:
    from app import stack_from_context
    from aws_cdk import App

    read: set[str] = set()
    original = Node.try_get_context

    def recording(node: Node, key: str) -> Any:
        read.add(key)
        return original(node, key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Node, "try_get_context", recording)
        stack_from_context(App(outdir=str(tmp_path)))
    return {key for key in read if not key.startswith(("aws:", "@aws-cdk"))}


def _keys_documented() -> set[str]:
    page = PAGE.read_text()
    table = page[page.index("| Key | What it sets | Default |") :].split("\n\n", 1)[0]
    cells = re.findall(r"^\| ([^|]+) \|", table, re.MULTILINE)[2:]  # header and rule
    return {key for cell in cells for key in re.findall(r"`(\w+)`", cell)}


def test_given_the_cdk_app_when_it_reads_its_context_then_the_settings_table_lists_each_key(
    tmp_path: Path,
) -> None:
    read = _keys_read(tmp_path)

    assert read  # the app reads its settings from the context
    assert read == _keys_documented()
