"""A container's placeholders on chronoq local's state machine and ECS emulation: the
runner's PrepareContainer step expands the command and the state machine runs the command it
hands back; a value that would make an option fails the run for good, before anything runs."""

from __future__ import annotations

from pathlib import Path

from chronoq.domain.runs import RunStatus

from tests.integration.conftest import Harness


def test_given_a_container_whose_command_takes_a_parameter_when_it_runs_then_the_command_gets_the_value(
    harness: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "ran-2026-11-01"  # (the harness allows host commands)
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", "{{ params.path }}"]},
        parameters={"path": str(marker)},
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED, run.error
    assert marker.exists()


def test_given_a_parameter_that_would_make_an_option_when_the_container_runs_then_the_run_fails_naming_the_word(
    harness: Harness, tmp_path: Path
) -> None:
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", "{{ params.path }}"]},
        parameters={"path": "--version"},
        retry={"max_attempts": 3, "interval_seconds": 1},
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert "target.command[1]" in (run.error or ""), run.error
    assert len(run.attempts) == 1  # not retried: the same value would fail again
