"""The command line's side of jobs' audit trails: ``chronoq jobs audit NAME_OR_ID`` (the requests
it sends to a fake API in this process, and what it shows), and the User-Agents the command
line and ``chronoq apply`` send, by which an entry tells where a change came from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest
from chronoq.cli.client import APPLY_AGENT, CLI_AGENT
from chronoq.cli.errors import NOT_FOUND
from chronoq.cli.main import main
from chronoq.domain.audit import Source, source_of

JOB: dict[str, Any] = {"id": "job_0123456789abcdef", "name": "nightly", "version": 1}
ENTRIES = [
    {
        "job_id": JOB["id"],
        "owner": "u-1",
        "at": "2026-11-26T12:00:01.250Z",
        "request_id": "req-2",
        "action": "change",
        "by": "u-1",
        "by_name": "alice",
        "source": "cli",
        "changes": [{"field": "priority", "before": "normal", "after": "high"}],
        "detail": {},
    },
    {
        "job_id": JOB["id"],
        "owner": "u-1",
        "at": "2026-11-26T12:00:00Z",
        "request_id": "req-1",
        "action": "trigger",
        "by": "u-1",
        "by_name": None,
        "source": "console",
        "changes": [],
        "detail": {"run_id": "run-1"},
    },
]


class FakeApi:
    """An HTTP server with one job (JOB) and its trail (ENTRIES), noting each request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.jobs: list[dict[str, Any]] = [JOB]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                path = self.path.split("?", 1)[0]
                fake.requests.append(
                    {"method": self.command, "path": self.path, "agent": self.headers["User-Agent"]}
                )
                answer: Any = {}
                status = 200
                if (self.command, path) == ("GET", "/jobs"):
                    answer = {"jobs": fake.jobs}
                elif (self.command, path) == ("GET", f"/jobs/{JOB['id']}/audit"):
                    answer = {"entries": ENTRIES}
                elif (self.command, path) == ("POST", "/jobs"):
                    answer, status = {**(body or {}), "id": "job_fedcba9876543210"}, 201
                else:
                    answer, status = {"error": {"code": "not_found", "message": "no"}}, 404
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeApi]:
    api = FakeApi()
    thread = Thread(target=api.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("CHRONOQ_URL", api.url)
    monkeypatch.setenv("CHRONOQ_TOKEN", "t")
    monkeypatch.setenv("CHRONOQ_CONFIG", str(tmp_path / "profile.json"))
    monkeypatch.setenv("COLUMNS", "200")
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


def test_given_a_jobs_name_when_its_trail_is_asked_for_then_the_name_is_looked_up_and_the_trail_shown(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "audit", "nightly"]) == 0

    assert [(r["method"], r["path"].split("?")[0]) for r in fake_api.requests] == [
        ("GET", "/jobs"),
        ("GET", f"/jobs/{JOB['id']}/audit"),
    ]
    out = capsys.readouterr().out
    assert "priority: normal -> high" in out
    assert "run_id=run-1" in out
    lines = [line for line in out.splitlines() if "req-" in line]
    assert ["alice" in lines[0], "console" in lines[1]] == [True, True]
    assert "2026-11-26 12:00:01Z" in lines[0]


def test_given_a_jobs_id_and_json_when_its_trail_is_asked_for_then_the_apis_entries_are_printed(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "audit", JOB["id"], "--json", "--limit", "2"]) == 0

    assert [r["path"] for r in fake_api.requests] == [f"/jobs/{JOB['id']}/audit?limit=2"]
    assert json.loads(capsys.readouterr().out) == {"entries": ENTRIES, "next_token": None}


def test_given_no_job_of_that_name_when_its_trail_is_asked_for_then_not_found(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "audit", "no-such-job"]) == NOT_FOUND

    assert "no job named 'no-such-job'" in capsys.readouterr().err


def test_given_the_command_line_and_apply_when_they_call_the_api_then_each_says_what_it_is(
    fake_api: FakeApi, tmp_path: Path
) -> None:
    fake_api.jobs = []
    spec = {
        "name": "hello",
        "schedule": {"type": "rate", "every": "5 minutes"},
        "target": {"type": "http", "url": "https://example.com/"},
    }
    (tmp_path / "hello.json").write_text(json.dumps(spec))

    assert main(["jobs", "list"]) == 0
    listed = len(fake_api.requests)
    assert main(["apply", "-f", str(tmp_path / "hello.json")]) == 0

    assert {r["agent"] for r in fake_api.requests[:listed]} == {CLI_AGENT}
    assert {r["agent"] for r in fake_api.requests[listed:]} == {APPLY_AGENT}
    assert (source_of(CLI_AGENT), source_of(APPLY_AGENT)) == (Source.CLI, Source.APPLY)
