"""The state chronoq local's patches of moto read (chronoq.local.emulation.state): the running
embedded AWS's, else the defaults."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chronoq.local.clock import WALL, LocalClock
from chronoq.local.emulation import state
from chronoq.local.emulation.state import EmulationState, activate, active, deactivate


@pytest.fixture(autouse=True)
def none_active() -> Iterator[None]:
    before = state._active
    state._active = None
    yield
    state._active = before


def test_given_no_state_active_when_the_patches_read_theirs_then_it_is_the_defaults() -> None:
    read = active()

    assert read == EmulationState()
    assert read.meter is None
    assert read.own_prefix is None
    assert read.clock is WALL
    assert read.containers == state.NOWHERE
    assert read.docker is None


def test_given_a_state_activated_when_the_patches_read_theirs_then_it_is_that_state_as_it_changes() -> (
    None
):
    ours = EmulationState(clock=LocalClock(), own_prefix="chronoq-local-")
    activate(ours)

    ours.containers = state.HOST_PROCESSES

    assert active() is ours
    assert active().containers == state.HOST_PROCESSES


def test_given_another_state_active_when_one_not_active_is_deactivated_then_the_active_one_stays() -> (
    None
):
    running, stopped = EmulationState(own_prefix="running-"), EmulationState()
    activate(running)

    assert not deactivate(stopped)
    assert active() is running
    assert deactivate(running)
    assert active() == EmulationState()
