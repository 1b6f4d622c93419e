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


@pytest.fixture(scope="session")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
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
#
# A scenario fixture is a plain session fixture, asked for only by the scenario's tests: a
# run that selects none of them (say ``-k at_job``) starts no scenario and no second chronoq
# local. Asked for there, it would start only when its first test comes up (last in the run),
# and the minutes it waits would add to the run's time. So, before the first end-to-end test
# sets up, the hook below starts, in the background, every scenario that a selected test asks
# for: its waiting overlaps the other tests, and the fixture hands over the one already going.


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
    a selected end-to-end test asks for."""
    for name in SCENARIOS:
        if any(
            name in getattr(selected, "fixturenames", ()) and selected.path.is_relative_to(HERE)
            for selected in item.session.items
        ):
            scenario(item.config, name)


@pytest.fixture(scope="session")
def burst(request: pytest.FixtureRequest) -> Background[BurstScenario]:
    """300 runs due in one second, on a chronoq local of its own (see BurstScenario): started
    in the background before the first end-to-end test of a run that selects a test asking for
    it; ``.result(timeout)`` waits for it to end."""
    return scenario(request.config, "burst")


@pytest.fixture(scope="session")
def outage(request: pytest.FixtureRequest) -> Background[OutageScenario]:
    """A three-minute dispatcher outage and its catch-up, on a chronoq local of its own (see
    OutageScenario): started in the background before the first end-to-end test of a run that
    selects a test asking for it; ``.result(timeout)`` waits for it to end."""
    return scenario(request.config, "outage")
