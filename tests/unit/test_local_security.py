"""chronoq local on a shared machine, the parts without a server: admin tokens, the secrets
kept in the data directory, how container targets run, the command line's options."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from chronoq.cli.main import main
from chronoq.local import tokens
from chronoq.local.emulation import containers
from chronoq.local.emulation.state import HOST_PROCESSES, IN_DOCKER, NOWHERE


def test_given_a_token_minted_without_admin_when_verified_then_it_is_not_admin(
    tmp_path: Path,
) -> None:
    claims = tokens.verify(tokens.secret(tmp_path), f"Bearer {tokens.mint(tmp_path, 'alice')}")

    assert not tokens.is_admin(claims)


def test_given_a_token_minted_with_admin_when_verified_then_it_is_admin(tmp_path: Path) -> None:
    token = tokens.mint(tmp_path, "alice", admin=True)

    assert tokens.is_admin(tokens.verify(tokens.secret(tmp_path), f"Bearer {token}"))


def test_given_a_data_directory_when_the_signing_secret_is_asked_for_twice_then_it_is_kept_private_and_the_same(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"

    first = tokens.signing_secret(data)

    assert tokens.signing_secret(data) == first
    assert first != tokens.secret(data)
    assert stat.S_IMODE((data / tokens.SIGNING_SECRET_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_given_host_commands_not_allowed_and_no_docker_when_the_mode_is_chosen_then_containers_run_nowhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(containers, "answering_docker", lambda: None)

    assert containers.container_mode(allow_host_commands=False) == (NOWHERE, None)
    assert containers.container_mode(allow_host_commands=True) == (HOST_PROCESSES, None)


def test_given_host_commands_not_allowed_and_a_docker_daemon_when_the_mode_is_chosen_then_containers_run_in_docker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(containers, "answering_docker", lambda: DOCKER)

    assert containers.container_mode(allow_host_commands=False) == (IN_DOCKER, DOCKER)


DOCKER = "/usr/bin/docker"


def test_given_docker_when_a_task_is_run_then_docker_runs_its_image_with_the_environment_by_name_only() -> (
    None
):
    command = containers.container_command(
        IN_DOCKER, DOCKER, "chronoq-t1", "busybox:1.36", ["echo", "hi"], {"TOKEN": "s3cret"}
    )

    assert command == [
        *(DOCKER, "run", "--rm", "--name", "chronoq-t1", "-e", "TOKEN"),
        *("--", "busybox:1.36", "echo", "hi"),
    ]
    assert "s3cret" not in " ".join(command)


@pytest.mark.parametrize(
    "image", ["-v=/:/host", "--privileged", "--volume=/:/host", "-", "busybox --privileged", ""]
)
def test_given_an_image_that_reads_as_an_option_when_docker_run_is_built_then_it_is_refused(
    image: str,
) -> None:
    with pytest.raises(containers.RefusedContainer, match="not an image reference"):
        containers.docker_run(DOCKER, "n", image, ["true"], {})


@pytest.mark.parametrize(
    "command", [["--privileged"], ["-v", "/:/host"], ["--entrypoint=/bin/sh", "-c", "id"]]
)
def test_given_a_command_that_looks_like_options_when_docker_run_is_built_then_it_follows_the_image(
    command: list[str],
) -> None:
    built = containers.docker_run(DOCKER, "n", "busybox:1.36", command, {})

    separator = built.index("--")
    assert built[separator + 1] == "busybox:1.36"
    assert built[separator + 2 :] == command
    assert all(not arg.startswith("-") or arg in ("--rm", "--name") for arg in built[1:4])


@pytest.mark.parametrize(
    ("environment", "why"),
    [
        ({"PATH": "/tmp/evil"}, "docker program itself reads"),
        ({"DOCKER_HOST": "tcp://elsewhere:2375"}, "docker program itself reads"),
        ({"LD_PRELOAD": "/tmp/evil.so"}, "docker program itself reads"),
        ({"HOME": "/tmp"}, "docker program itself reads"),
        ({"--privileged": "1"}, "not an environment variable's name"),
        ({"A=B": "1"}, "not an environment variable's name"),
    ],
)
def test_given_an_environment_docker_itself_would_read_when_docker_run_is_built_then_it_is_refused(
    environment: dict[str, str], why: str
) -> None:
    with pytest.raises(containers.RefusedContainer, match=why):
        containers.docker_run(DOCKER, "n", "busybox:1.36", ["true"], environment)


def test_given_a_docker_program_by_relative_name_when_docker_run_is_built_then_it_is_refused() -> (
    None
):
    with pytest.raises(containers.RefusedContainer, match="absolute path"):
        containers.docker_run("docker", "n", "busybox:1.36", ["true"], {})


def test_given_a_job_path_when_docker_is_looked_for_then_chronoqs_own_path_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder in (ours, theirs):
        folder.mkdir()
        program = folder / "docker"
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
    monkeypatch.setenv("PATH", str(ours))

    assert containers.find_docker() == str(ours / "docker")
    assert containers.answering_docker() == str(ours / "docker")
    mode, docker = containers.container_mode(allow_host_commands=False)
    assert (mode, docker) == (IN_DOCKER, str(ours / "docker"))
    command = containers.container_command(
        mode, docker, "n", "busybox:1.36", ["true"], {"JOB": "x"}
    )
    assert command is not None
    assert command[0] == str(ours / "docker")


def test_given_docker_mode_without_a_docker_program_when_a_task_is_run_then_it_is_refused() -> None:
    with pytest.raises(containers.RefusedContainer, match="no docker program"):
        containers.container_command(IN_DOCKER, None, "n", "busybox:1.36", ["true"], {})


def test_given_no_way_to_run_containers_when_a_task_is_run_then_there_is_no_command() -> None:
    assert containers.container_command(NOWHERE, None, "n", "i", ["echo"], {}) is None
    assert "--allow-host-commands" in containers.NOT_ENABLED


def test_given_the_token_command_with_admin_when_run_then_the_token_is_admin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tokens.secret(tmp_path)  # (made by chronoq local's first start)
    assert main(["token", "bob", "--admin", "--data-dir", str(tmp_path)]) == 0
    admin = capsys.readouterr().out.strip()
    assert main(["token", "bob", "--data-dir", str(tmp_path)]) == 0
    ordinary = capsys.readouterr().out.strip()

    assert tokens.is_admin(tokens.verify(key, f"Bearer {admin}"))
    assert not tokens.is_admin(tokens.verify(key, f"Bearer {ordinary}"))


class _FakeSystem:
    """LocalSystem as the local command sees it, recording what it was given."""

    started: list[dict[str, Any]] = []  # noqa: RUF012 - the test's record

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.url = "http://127.0.0.1:1"
        self.aws_url = "http://127.0.0.1:2"
        self.restored = False

    def start(self) -> _FakeSystem:
        _FakeSystem.started.append(self.options)
        return self

    def stop(self) -> None:
        pass


@pytest.mark.parametrize("allowed", [False, True])
def test_given_the_local_command_when_started_then_host_commands_follow_the_flag_and_a_warning_says_so(
    allowed: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import chronoq.cli.main as cli_main
    import chronoq.local.system as system

    done = threading.Event()
    done.set()  # the command returns at once instead of waiting for a signal
    monkeypatch.setattr(system, "LocalSystem", _FakeSystem)
    monkeypatch.setattr(cli_main, "threading", SimpleNamespace(Event=lambda: done))
    monkeypatch.setattr(
        cli_main, "signal", SimpleNamespace(signal=lambda *_: None, SIGTERM=15, SIGINT=2)
    )
    monkeypatch.setattr(os, "_exit", lambda code: None)  # (the command leaves at once)
    _FakeSystem.started.clear()
    flags = ["--allow-host-commands"] if allowed else []

    assert main(["local", "--data-dir", str(tmp_path), *flags]) == 0

    out, err = capsys.readouterr()
    assert _FakeSystem.started[0]["allow_host_commands"] is allowed
    assert ("WARNING: --allow-host-commands" in err) is allowed
    token = out.splitlines()[2]
    assert tokens.is_admin(tokens.verify(tokens.secret(tmp_path), f"Bearer {token}"))
