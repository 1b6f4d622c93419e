"""Test helpers shared by the suites: sample events and a real HTTP sink."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

EVENTS = Path(__file__).resolve().parents[1] / "events"


def load_event(name: str) -> dict[str, Any]:
    """A sample event from events/, e.g. ``load_event("api/create_at_job")`` (a copy of its
    own: the caller may change it)."""
    return copy.deepcopy(_event(name))


@functools.cache
def _event(name: str) -> dict[str, Any]:
    """(each file read once: the suites build thousands of events from a few files)"""
    document: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return document


def api_event(
    name: str,
    *,
    user: str = "alice",
    body: Any = None,
    path: str | None = None,
    method: str | None = None,
) -> dict[str, Any]:
    event = load_event(f"api/{name}")
    # (API Gateway gives every request an id of its own: what an audit entry is keyed by)
    event["requestContext"]["requestId"] = str(uuid.uuid4())
    if method is not None:
        event["requestContext"]["http"]["method"] = method
    claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
    claims["sub"] = claims["username"] = user
    if body is not None:
        event["body"] = json.dumps(body)
    if path is not None:
        raw, _, query = path.partition("?")
        event["rawPath"] = event["requestContext"]["http"]["path"] = raw
        event["rawQueryString"] = query
        # (decoded, as API Gateway hands them over: a parameter given several times, its
        # values joined by commas)
        parameters: dict[str, str] = {}
        for k, v in (p.split("=", 1) for p in query.split("&") if query):
            parameters[k] = f"{parameters[k]},{unquote(v)}" if k in parameters else unquote(v)
        event["queryStringParameters"] = parameters or None
        event["pathParameters"] = {"proxy": raw.lstrip("/")}
    return event


def wait_for(condition: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds
    (generous: it bounds a wait for something that may never come, not how fast it comes,
    which is make bench's to measure)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@dataclass
class Hit:
    at: datetime
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Sink:
    """A real HTTP server that records every request it gets. ``status`` and ``delay``
    decide its answers."""

    url: str = ""
    hits: list[Hit] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    #: Statuses for the next requests, one each, before ``status`` applies again.
    statuses: list[int] = field(default_factory=list)
    #: Per-path delays, overriding ``delay``.
    delays: dict[str, float] = field(default_factory=dict)
    answer: bytes = b'{"ok": true}'
    closed: threading.Event = field(default_factory=threading.Event)

    def hits_to(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]


@contextmanager
def http_sink() -> Iterator[Sink]:
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            sink.hits.append(
                Hit(datetime.now(UTC), self.command, self.path, dict(self.headers), body)
            )
            delay = sink.delays.get(self.path, sink.delay)
            if delay:
                sink.closed.wait(delay)
            self.send_response(sink.statuses.pop(0) if sink.statuses else sink.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(sink.answer)))
            self.end_headers()
            self.wfile.write(sink.answer)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        sink.closed.set()
        _shut_down(server)
        server.server_close()


def _shut_down(server: ThreadingHTTPServer) -> None:
    """Stop the server's loop without waiting out its poll interval (half a second a test):
    the loop sees the request to stop as soon as a connection wakes it."""
    address = ("127.0.0.1", server.server_address[1])
    stopping = threading.Thread(target=server.shutdown, daemon=True)
    stopping.start()
    while stopping.is_alive():
        with contextlib.suppress(OSError):
            socket.create_connection(address, timeout=1).close()
        stopping.join(0.01)


def run_node(script: str) -> Any:
    """What the ES module ``script`` prints (one JSON document), run by Node: how the tests
    call the console's own modules. Fails when Node is missing (make install and CI install
    it) or the script fails."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is missing (make install and CI install it)")
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
