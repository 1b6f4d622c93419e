from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scenarios import OutageScenario
from tests.support import Sink, http_sink

CHRONOQ = str(Path(sys.executable).with_name("chronoq"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Local:
    """``chronoq local`` running in a subprocess, spoken to over HTTP like a user would."""

    url: str
    data_dir: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def token(self, user: str) -> str:
        if user not in self.tokens:
            self.tokens[user] = self._mint(user)
        return self.tokens[user]

    def _mint(self, user: str) -> str:
        out = subprocess.run(
            [CHRONOQ, "token", user, "--data-dir", str(self.data_dir)],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def control(self, name: str) -> Any:
        """A control of chronoq local itself, e.g. ``ticker/stop``."""
        status, answer = self.call("POST", f"/_local/{name}")
        assert status == 200, answer
        return answer

    def call(
        self, method: str, path: str, user: str | None = "alice", body: Any = None
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if user is not None:
            headers["Authorization"] = f"Bearer {self.token(user)}"
        request = urllib.request.Request(
            self.url + path,
            method=method,
            headers=headers,
            data=json.dumps(body).encode() if body is not None else None,
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                data = answer.read()
                return answer.status, json.loads(data) if data else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@contextmanager
def start_local(data_dir: Path) -> Iterator[Local]:
    """``chronoq local`` in a subprocess, until the block ends."""
    port = free_port()
    log = (data_dir / "local.log").open("w")
    process = subprocess.Popen(
        [CHRONOQ, "local", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    first_line = process.stdout.readline()  # printed once the system is up
    assert "listening on" in first_line, (data_dir / "local.log").read_text()
    try:
        yield Local(f"http://127.0.0.1:{port}", data_dir)
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


@pytest.fixture(scope="session")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    with start_local(tmp_path_factory.mktemp("chronoq-data")) as started:
        yield started


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s


def wait_for_runs(local: Local, job_id: str, count: int, timeout: float) -> list[dict[str, Any]]:
    """Wait until ``count`` runs of the job have finished; return them, oldest first."""
    deadline = time.monotonic() + timeout
    while True:
        _, answer = local.call("GET", f"/jobs/{job_id}/runs")
        done = [r for r in answer["runs"] if r["status"] in ("SUCCEEDED", "FAILED", "TIMED_OUT")]
        if len(done) >= count:
            return list(reversed(done))
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(done)} of {count} runs finished: {answer}")
        time.sleep(0.25)


@pytest.fixture(scope="session", autouse=True)
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutageScenario]:
    """Started with the first end-to-end test, so that its minutes of waiting overlap the
    other tests: a second chronoq local with a burst and a dispatcher outage."""
    with http_sink() as sink, start_local(tmp_path_factory.mktemp("outage")) as local:
        scenario = OutageScenario(local, sink)
        threading.Thread(target=scenario.run, name="outage-scenario", daemon=True).start()
        yield scenario
