"""Fixtures of the end-to-end tests: the shared chronoq local, a sink and clean-up per test,
and the long scenarios, each on a chronoq local of its own, that only the tests asking for
them start."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Background, Jobs, Local, Scenario, start_local
from tests.e2e.scenarios import BurstScenario, OutageScenario
from tests.support import Sink, http_sink

HERE = Path(__file__).parent

#: The long scenarios, by the name of the fixture that gives each.
SCENARIOS: dict[str, Callable[[], Scenario]] = {"burst": BurstScenario, "outage": OutageScenario}
_STARTED = pytest.StashKey[dict[str, Background[Any]]]()


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


# --- long scenarios ---------------------------------------------------------------------------


def scenario(config: pytest.Config, name: str) -> Background[Any]:
    """Scenario ``name`` of this session, started (in a background thread) on first use and
    stopped with the session at the latest."""
    started = config.stash.setdefault(_STARTED, {})
    if name not in started:
        started[name] = Background(name, SCENARIOS[name]())
        config.add_cleanup(started[name].stop)
    return started[name].start()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before an end-to-end test (so first before the first one): start every scenario that
    a selected end-to-end test asks for (see ``burst``)."""
    for name in SCENARIOS:
        if any(
            name in getattr(selected, "fixturenames", ()) and selected.path.is_relative_to(HERE)
            for selected in item.session.items
        ):
            scenario(item.config, name)


@pytest.fixture(scope="session")
def burst(request: pytest.FixtureRequest) -> Background[BurstScenario]:
    """300 runs due in one second, on a chronoq local of its own (see BurstScenario);
    ``.result(timeout)`` waits for it to end and gives what it kept.

    Opt-in, and still overlapping: a plain session fixture (not autouse), asked for only by
    the scenario's tests, so a run that selects none of them (``-k at_job``) starts neither
    the scenario nor its chronoq local. Were it started when asked for, it would start when
    its test comes up, last, and its minutes of waiting would add to the run's time; so the
    ``pytest_runtest_setup`` hook above starts it, in a background thread, before the first
    end-to-end test of a run that selects a test asking for it, and the fixture hands over the
    scenario already going (or starts it, should the hook not have). It stops as soon as it
    has ended, its chronoq local with it, or with the session at the latest."""
    return scenario(request.config, "burst")


@pytest.fixture(scope="session")
def outage(request: pytest.FixtureRequest) -> Background[OutageScenario]:
    """A three-minute dispatcher outage and its catch-up, on a chronoq local of its own (see
    OutageScenario); ``.result(timeout)`` waits for it to end and gives what it kept.

    Opt-in, and still overlapping, as ``burst`` is: not autouse, asked for only by the
    scenario's test; started in the background before the first end-to-end test of a run that
    selects that test, so that its minutes of waiting overlap the other tests."""
    return scenario(request.config, "outage")
