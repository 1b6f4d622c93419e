"""Tokens and profiles for chronoq local: minted only from a data directory chronoq local keeps
(never from a secret made on the spot, which every chronoq local would refuse), for the port the
running chronoq local really answers on (its ``local.json``, see chronoq.local.instance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli import config
from chronoq.cli.main import cli
from chronoq.local import instance, tokens
from click.testing import CliRunner, Result


def _run(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env)


@pytest.fixture
def profile_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "conf" / "profile.json"
    monkeypatch.setenv(config.CONFIG_ENV, str(path))
    monkeypatch.delenv(config.DATA_DIR_ENV, raising=False)
    return path


@pytest.fixture
def answering() -> Iterator[str]:
    """A server on a port of its own, answering as chronoq local's does (the console's
    settings without a token): the URL it answers at."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"api": ""}'
            self.send_response(200 if self.path == instance.PROBE_PATH else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _assert_refused_for_lack_of_data(result: Result, data_dir: Path) -> None:
    assert result.exit_code == 1, result.output
    message = " ".join(result.stderr.split())
    assert f"no chronoq local data in {data_dir.resolve()}" in message
    assert "--data-dir" in message
    assert config.DATA_DIR_ENV in message
    assert "token" not in result.stdout
    assert not data_dir.exists()  # nothing was made there


def test_given_a_directory_chronoq_local_never_ran_on_when_a_token_is_asked_then_it_is_refused_and_says_where_to_look(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / ".chronoq"

    result = _run(["token", "alice", "--data-dir", str(data_dir)])

    _assert_refused_for_lack_of_data(result, data_dir)
    assert result.stdout == ""


def test_given_a_directory_chronoq_local_never_ran_on_when_logging_in_locally_then_it_is_refused(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / ".chronoq"

    result = _run(["login", "--local", "--data-dir", str(data_dir), "--url", "http://x:1"])

    _assert_refused_for_lack_of_data(result, data_dir)
    assert not profile_file.exists()


def test_given_the_data_directory_in_the_environment_when_a_token_is_asked_then_it_is_signed_with_its_secret(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / "elsewhere"
    key = tokens.secret(data_dir)  # (as chronoq local makes it at its first start)

    result = _run(["token", "alice"], env={config.DATA_DIR_ENV: str(data_dir)})

    assert result.exit_code == 0, result.output
    assert tokens.verify(key, f"Bearer {result.stdout.strip()}")["sub"] == "alice"


def test_given_a_local_profile_whose_data_directory_is_gone_when_its_token_is_renewed_then_it_is_refused(
    tmp_path: Path,
) -> None:
    import click

    gone = tmp_path / "gone"

    with pytest.raises(click.ClickException, match="no chronoq local data in"):
        config.renewed_token({"url": "http://x:1", "local": {"data_dir": str(gone), "user": "a"}})
    assert not gone.exists()


def test_given_a_running_chronoq_local_on_another_port_when_logging_in_locally_then_its_url_is_saved(
    tmp_path: Path, profile_file: Path, answering: str
) -> None:
    data_dir = tmp_path / "data"
    tokens.secret(data_dir)
    instance.announce(data_dir, instance.Running(answering, None, os.getpid()))

    result = _run(["login", "--local", "--data-dir", str(data_dir)])

    assert result.exit_code == 0, result.output
    profile = json.loads(profile_file.read_text())["profiles"]["default"]
    assert profile["url"] == answering
    assert not answering.endswith(":8080")


def test_given_a_url_when_logging_in_locally_then_it_is_saved_without_looking_for_a_running_one(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / "data"
    tokens.secret(data_dir)

    result = _run(["login", "--local", "--data-dir", str(data_dir), "--url", "http://h:9/"])

    assert result.exit_code == 0, result.output
    assert json.loads(profile_file.read_text())["profiles"]["default"]["url"] == "http://h:9"


def test_given_no_chronoq_local_running_when_logging_in_locally_then_it_is_refused_saying_so(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / "data"
    tokens.secret(data_dir)

    result = _run(["login", "--local", "--data-dir", str(data_dir)])

    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert "no chronoq local is running on" in message
    assert "--url" in message
    assert not profile_file.exists()


def test_given_the_file_of_a_chronoq_local_that_died_when_logging_in_locally_then_it_is_refused(
    tmp_path: Path, profile_file: Path, answering: str
) -> None:
    data_dir = tmp_path / "data"
    tokens.secret(data_dir)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **_OUT)
    instance.announce(data_dir, instance.Running(answering, None, int(ended.stdout)))

    result = _run(["login", "--local", "--data-dir", str(data_dir)])

    assert result.exit_code == 1
    assert "is no longer running" in " ".join(result.stderr.split())


def test_given_the_file_of_a_chronoq_local_that_does_not_answer_when_logging_in_locally_then_it_is_refused(
    tmp_path: Path, profile_file: Path
) -> None:
    data_dir = tmp_path / "data"
    tokens.secret(data_dir)
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_address[1]}"
    closed.server_close()  # (nothing listens there now)
    instance.announce(data_dir, instance.Running(url, None, os.getpid()))

    result = _run(["login", "--local", "--data-dir", str(data_dir)])

    assert result.exit_code == 1
    assert f"does not answer at {url}" in " ".join(result.stderr.split())


_OUT: dict[str, Any] = {"capture_output": True, "text": True, "check": True}


def test_given_a_wildcard_host_when_its_url_is_announced_then_it_is_loopbacks() -> None:
    assert instance.reachable_url("0.0.0.0", 8081) == "http://127.0.0.1:8081"
    assert instance.reachable_url("::", 8081) == "http://[::1]:8081"
    assert instance.reachable_url("192.0.2.7", 1) == "http://192.0.2.7:1"
    assert instance.reachable_url("localhost", 2) == "http://localhost:2"


def test_given_another_start_announced_when_one_withdraws_then_the_others_file_is_kept(
    tmp_path: Path,
) -> None:
    first = instance.Running("http://127.0.0.1:1", None, os.getpid())
    second = instance.Running("http://127.0.0.1:2", None, os.getpid())
    instance.announce(tmp_path, first)
    instance.announce(tmp_path, second)

    instance.withdraw(tmp_path, first)
    assert instance.read(tmp_path) == second
    assert (tmp_path / instance.RUNNING_FILE).stat().st_mode & 0o777 == 0o600

    instance.withdraw(tmp_path, second)
    assert not (tmp_path / instance.RUNNING_FILE).exists()
