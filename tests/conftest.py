"""How the suite runs.

Every AWS call chronoq makes on the embedded AWS, in a test's process or in a chronoq local it
starts, is kept in one file (chronoq.local.calls), and the least-privilege check
(tests/infra/test_least_privilege.py) runs last, over all of them: in one process, after
every other test; shared out over several processes (``make test``: pytest-xdist, ``-n 3``,
as most of the slow tests wait on a clock or a subprocess rather than use a core), in a
pytest of its own after the others, given the same file (CHRONOQ_CALLS_FILE: see the
Makefile). In the processes of a shared-out run it is skipped, as it would see only their
share of the calls; what it needs besides the calls is made beside the others and left
beside the calls file (tests/infra/least_privilege.py: the roles read from the session's
synthesis, the workload's calls).

Shared out, the tests that share something costly to start run in one process, each group as
a whole; every other test goes wherever a process is free:

- the end-to-end tests that share the package's chronoq local, the browser tests (a chronoq
  local and Chromium), the infra tests (one synthesis of the stack for the session): one
  group each;
- a module whose tests share a module-scoped fixture (moto, a chronoq local) or start a
  chronoq local of their own: one group each."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronoq.local.calls import CALLS_FILE_ENV

LAST = "test_least_privilege.py"

#: Packages whose tests share one set-up across modules (but for the modules below).
WHOLE = ("e2e", "browser", "infra")
#: Modules whose tests share a set-up of their own.
MODULES = (
    "contract",
    "api",
    "cli/test_against_local.py",
    "cli/test_status_and_cost.py",
    "e2e/test_hostile.py",
    "e2e/test_restart.py",
    "e2e/test_over_minutes.py",
    "e2e/test_priority_burst.py",
    "e2e/test_fairness.py",
    "e2e/test_walkthrough.py",
    "infra/test_workload.py",
)
#: The groups handed out first, longest first (so that none of them ends the run alone).
FIRST = (
    "tests/e2e/test_restart.py",
    "infra",
    "e2e",
    "browser",
    "tests/e2e/test_over_minutes.py",
    "tests/e2e/test_fairness.py",
    "tests/unit/test_flow_properties.py::TestFlowReliability::runTest",
    "tests/infra/test_workload.py",
)


def group_of(nodeid: str) -> str:
    """The group a test runs in: its package, its module, or itself."""
    path = nodeid.split("::", 1)[0]
    relative = path.removeprefix("tests/")
    if relative == path:
        return nodeid
    for module in MODULES:
        if relative == module or relative.startswith(f"{module}/"):
            return path
    package = relative.split("/", 1)[0]
    if package in WHOLE:
        return package
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduling by scope, a scope being a test's group (its own
    ``--dist loadgroup`` reads groups from node ids, which pytest 9 no longer lets it
    change)."""
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            for scope in reversed(FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return Groups(config, log)


@pytest.fixture(scope="session", autouse=True)
def calls_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where this session's calls are kept (chronoq local subprocesses inherit it): the file
    the environment names (``make test`` names one for both its pytests), else one of the
    session's own."""
    given = os.environ.get(CALLS_FILE_ENV)
    if given:
        yield Path(given)
        return
    path = tmp_path_factory.getbasetemp() / "aws-calls.jsonl"
    os.environ[CALLS_FILE_ENV] = str(path)
    yield path
    os.environ.pop(CALLS_FILE_ENV, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The least-privilege check after every other test, so that it sees all their calls;
    skipped in a process that runs only a share of the suite."""
    items.sort(key=lambda item: item.path.name == LAST)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        share = pytest.mark.skip(
            reason="sees every call of the suite only in a pytest of its own after the others"
            " (make test runs it so)"
        )
        for item in items:
            if item.path.name == LAST:
                item.add_marker(share)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # (only when the check ran: importing it loads the CDK)
    least_privilege = sys.modules.get("tests.infra.least_privilege")
    if least_privilege is not None and least_privilege.UNEXERCISED:
        terminalreporter.section("grants no test exercised")
        for line in least_privilege.UNEXERCISED:
            terminalreporter.write_line(line)
