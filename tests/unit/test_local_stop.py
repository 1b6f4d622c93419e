"""chronoq local stops at once: its servers' loops and its idle pollers are woken, rather than
left to notice the stop at their next poll (half a second for each server, up to a second for
the pollers: what made stopping take seconds). Each wait here is made far longer than the
margin the checks allow (minutes against seconds), so that a loaded machine still passes and
a stop that waits for them does not."""

from __future__ import annotations

import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from chronoq.local import endpoint
from chronoq.local.drivers import Pace, QueuePoller
from chronoq.local.gateway import serve
from chronoq.local.serving import PromptServer
from chronoq.local.sigv4 import Credentials
from chronoq.local.system import LocalSystem

from tests.support import wait_for

#: A wait nothing here may sit out (a poll interval, the idle pollers' longest wait).
LONG = 60.0
#: What stopping may take on a loaded machine.
PROMPT = 10.0


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serving(poll_interval: float = LONG) -> tuple[PromptServer, threading.Thread]:
    server = PromptServer(("127.0.0.1", 0), _Hello)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(poll_interval,), daemon=True)
    thread.start()
    return server, thread


class _EmptyQueues:
    """The SQS a poller reads: no message, ever."""

    def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        return {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:123456789012:q"}}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {}


def _idle_poller(halt: threading.Event) -> QueuePoller:
    """A poller that has found its queue empty and waits (up to LONG) to look again."""
    pace = Pace(longest=LONG)
    poller = QueuePoller(_EmptyQueues(), ["https://q"], lambda _: None, halt, "poller-q-0", pace)
    poller.start()
    # (it looks once, finds nothing, and waits on its pace: a stop that does not wake it
    # waits for LONG)
    wait_for(lambda: pace._changed._waiters, timeout=PROMPT)  # type: ignore[attr-defined]
    return poller


def test_given_a_server_polling_rarely_when_shut_down_then_it_stops_at_once_having_served() -> None:
    server, thread = _serving()
    port = server.server_address[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=PROMPT) as answer:
        assert answer.read() == b"hello"

    began = time.monotonic()
    server.shutdown()
    took = time.monotonic() - began
    server.server_close()

    thread.join(timeout=PROMPT)
    assert not thread.is_alive()
    assert took < PROMPT


def test_given_a_server_never_served_when_shut_down_then_it_returns_and_a_later_serve_ends_at_once() -> (
    None
):
    server = PromptServer(("127.0.0.1", 0), _Hello)
    server.shutdown()  # (as socketserver's: the next serve_forever ends at once)

    thread = threading.Thread(target=server.serve_forever, args=(LONG,), daemon=True)
    thread.start()
    thread.join(timeout=PROMPT)
    server.server_close()

    assert not thread.is_alive()


def test_given_an_idle_poller_when_halted_and_woken_then_it_ends_at_once() -> None:
    halt = threading.Event()
    poller = _idle_poller(halt)

    halt.set()
    poller.wake()
    poller.join(timeout=PROMPT)

    assert not poller.is_alive()


def test_given_an_idle_system_when_stopped_then_its_servers_and_pollers_end_within_moments(
    tmp_path: Path,
) -> None:
    system = LocalSystem(data_dir=tmp_path, stop_seconds=LONG)
    stopped = threading.Event()
    system.aws = SimpleNamespace(stop=stopped.set)  # type: ignore[assignment]
    # chronoq local's own servers, their loops polling rarely
    gateway = serve("127.0.0.1", 0, "secret", lambda _: {})
    aws_endpoint = endpoint.bind("127.0.0.1", 0, Credentials("AKIAEXAMPLE", "secret"))
    serving, aws_serving = (
        threading.Thread(target=s.serve_forever, args=(LONG,), daemon=True)
        for s in (gateway, aws_endpoint)
    )
    serving.start()
    aws_serving.start()
    system._server, system._aws_server = gateway, aws_endpoint
    pollers = [_idle_poller(system._halt) for _ in range(2)]
    system._threads = [*pollers, serving, aws_serving]

    began = time.monotonic()
    system.stop()
    took = time.monotonic() - began

    assert [t.name for t in system._threads if t.is_alive()] == []
    assert stopped.is_set()
    assert took < PROMPT
