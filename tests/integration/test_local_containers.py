"""chronoq local on a shared machine: container targets run host commands only when allowed,
and the webhook signing secret is the data directory's."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.local import tokens
from chronoq.local.emulation.state import NOWHERE
from chronoq.local.system import LocalSystem

from tests.integration.conftest import Harness
from tests.integration.test_targets import logs_of


def test_given_host_commands_not_allowed_and_no_docker_when_a_container_runs_then_the_attempt_fails_saying_how_to_enable_them(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.aws.emulation, "containers", NOWHERE)  # as chosen at start
    marker = tmp_path / "ran"
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", str(marker)]}
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert "--allow-host-commands" in (run.error or "")
    assert any("--allow-host-commands" in line for line in logs_of(harness, run.id))
    assert not marker.exists()


def test_given_host_commands_allowed_when_a_container_runs_then_its_command_runs_here(
    harness: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"  # (the harness allows host commands)
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", str(marker)]}
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    assert marker.exists()


def test_given_a_data_directory_when_chronoq_local_starts_then_webhooks_are_signed_from_its_kept_secret(
    tmp_path: Path,
) -> None:
    system = LocalSystem(port=0, data_dir=tmp_path).start()
    try:
        arn = system.aws.env[r.ENV_SIGNING_SECRET_ARN]
        kept = system.aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    finally:
        system.stop()

    assert kept == tokens.signing_secret(tmp_path)
    assert (tmp_path / tokens.SIGNING_SECRET_FILE).exists()
