"""How the suite is shared out when it runs on several processes (``make test``: pytest-xdist,
``-n 2``): the tests that share something costly to start run in one process, each group
as a whole; every other test goes wherever a process is free.

- the end-to-end tests that share the package's chronoq local, the browser tests (a chronoq
  local and Chromium), the infra tests (one synthesis of the stack for the session): one
  group each;
- a module whose tests share a module-scoped fixture (moto, a chronoq local) or start a
  chronoq local of their own: one group each."""

from __future__ import annotations

from typing import Any

import pytest

#: Packages whose tests share one set-up across modules (but for the modules below).
WHOLE = ("e2e", "browser", "infra")
#: Modules whose tests share a set-up of their own.
MODULES = (
    "contract",
    "api",
    "cli/test_against_local.py",
    "e2e/test_restart.py",
    "e2e/test_embedded_aws.py",
    "e2e/test_over_minutes.py",
    "e2e/test_priority_burst.py",
)
#: The groups handed out first, longest first (so that none of them ends the run alone).
FIRST = (
    "tests/e2e/test_restart.py",
    "infra",
    "e2e",
    "browser",
    "tests/e2e/test_over_minutes.py",
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
