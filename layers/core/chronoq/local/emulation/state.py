"""What the patches of moto read: one state per embedded AWS (chronoq.local.aws.LocalAWS
owns one), active while that embedded AWS runs. The patches are installed into moto's
classes once per process, and moto serves one embedded AWS at a time: they read the active
state through ``active``, the defaults (no meter, no denials, the wall clock, no
containers) when none is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chronoq.local.clock import WALL, LocalClock

if TYPE_CHECKING:
    from chronoq.local.usage import Meter

#: How container targets run locally (chronoq.local.emulation.containers): HOST_PROCESSES
#: (only with ``chronoq local --allow-host-commands``), IN_DOCKER (a Docker daemon answers),
#: or NOWHERE: each attempt fails with containers.NOT_ENABLED.
HOST_PROCESSES = "host"
IN_DOCKER = "docker"
NOWHERE = "none"


@dataclass
class EmulationState:
    """What the patches of moto read while one embedded AWS runs (it sets each when it
    starts)."""

    #: The usage meter requests go through (None: none is counted).
    meter: Meter | None = None
    #: The prefix of chronoq's own resources, which its roles may not reach as targets (see
    #: chronoq.local.denials; None: nothing is denied).
    own_prefix: str | None = None
    #: The clock the state machine's Wait states and state entry times, and SQS's delays and
    #: timeouts, follow (see chronoq.local.clock).
    clock: LocalClock = WALL
    #: How container targets run: HOST_PROCESSES, IN_DOCKER or NOWHERE.
    containers: str = NOWHERE
    #: The docker program, resolved from chronoq's own PATH when chronoq local starts (an
    #: absolute path: a job's environment never decides which program runs).
    docker: str | None = None
    #: Reads the SSM parameters a task definition's ``secrets`` name (their ARNs), as ECS
    #: reads them with the task's execution role as it starts the task: each ARN found and
    #: its value (latest version). None: there are none, and a task naming one cannot start.
    parameters: Callable[[list[str]], dict[str, str]] | None = None


_active: EmulationState | None = None


def activate(state: EmulationState) -> None:
    """Make ``state`` the one the patches read (its embedded AWS has started)."""
    global _active
    _active = state


def deactivate(state: EmulationState) -> bool:
    """The patches no longer read ``state`` (its embedded AWS stops); was it the active one?"""
    global _active
    if _active is not state:
        return False
    _active = None
    return True


def active() -> EmulationState:
    """The state the patches read: the running embedded AWS's, else the defaults."""
    return _active if _active is not None else EmulationState()
