"""The whole suite: every AWS call chronoq makes on the embedded AWS, in this process or in a
chronoq local it starts, is kept in one file for the session (chronoq.local.calls), and the
least-privilege check (tests/infra/test_least_privilege.py) runs last, over all of them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from chronoq.local.calls import CALLS_FILE_ENV

LAST = "test_least_privilege.py"


@pytest.fixture(scope="session", autouse=True)
def calls_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where this session's calls are kept (chronoq local subprocesses inherit it)."""
    path = tmp_path_factory.getbasetemp() / "aws-calls.jsonl"
    before = os.environ.get(CALLS_FILE_ENV)
    os.environ[CALLS_FILE_ENV] = str(path)
    yield path
    if before is None:
        os.environ.pop(CALLS_FILE_ENV, None)
    else:
        os.environ[CALLS_FILE_ENV] = before


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The least-privilege check after every other test, so that it sees all their calls."""
    items.sort(key=lambda item: item.path.name == LAST)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.infra import least_privilege

    if least_privilege.UNEXERCISED:
        terminalreporter.section("grants no test exercised")
        for line in least_privilege.UNEXERCISED:
            terminalreporter.write_line(line)
