"""Fixtures of the end-to-end tests: the shared chronoq local, a sink and clean-up per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import Jobs, Local, start_local
from tests.support import Sink, http_sink


@pytest.fixture(scope="package")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    """The chronoq local the tests share, stopped once the last end-to-end test has run (not
    left idling through the suites after them)."""
    with start_local(tmp_path_factory.mktemp("chronoq-data")) as started:
        yield started


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s


@pytest.fixture
def jobs(local: Local, sink: Sink) -> Iterator[Jobs]:
    """Creates the test's jobs, and deletes them when it ends, passed or failed (before its
    sink closes: it asks for the sink first)."""
    created = Jobs(local)
    try:
        yield created
    finally:
        created.delete_all()
