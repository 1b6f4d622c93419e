"""chronoq local's gateway as API Gateway is to the api function: a query parameter given
several times reaches it as one, its values joined by commas; and a client that hangs up
before its answer leaves nothing in the log."""

from __future__ import annotations

import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from chronoq.local import tokens
from chronoq.local.gateway import serve

#: An answer too large for the socket's buffers: writing it to a closed connection fails.
LARGE = 4 * 1024 * 1024


@dataclass
class Gateway:
    url: str
    token: str
    events: list[dict[str, Any]] = field(default_factory=list)
    #: Set: the api function answers (until then it holds the request).
    answer: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    state = Gateway("", tokens.mint(tmp_path, "alice"))
    state.answer.set()

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        state.events.append(event)
        state.answer.wait(10)
        state.answered.set()
        body = "x" * LARGE if event["rawPath"] == "/large" else "{}"
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": body}

    server = serve("127.0.0.1", 0, tokens.secret(tmp_path), invoke)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def handled(within: float, before: set[threading.Thread]) -> None:
    """Wait until the gateway has handled every connection made since ``before`` (the threads
    it started for them have ended; other servers of the process may have threads of theirs)."""
    deadline = time.monotonic() + within
    while any(
        t.name.endswith("(process_request_thread)") and t not in before
        for t in threading.enumerate()
    ):
        assert time.monotonic() < deadline, "a request is still being handled"
        time.sleep(0.01)


def test_given_a_query_parameter_given_twice_when_passed_on_then_its_values_are_joined_by_commas(
    gateway: Gateway,
) -> None:
    request = urllib.request.Request(
        gateway.url + "/jobs?label=team%3Ddata&limit=5&label=env%3Dprod",
        headers={"Authorization": f"Bearer {gateway.token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200

    (event,) = gateway.events
    assert event["queryStringParameters"] == {"label": "team=data,env=prod", "limit": "5"}
    assert event["rawQueryString"] == "label=team%3Ddata&limit=5&label=env%3Dprod"


def test_given_a_client_that_hangs_up_before_its_answer_when_answered_then_no_traceback_is_logged(
    gateway: Gateway, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway.answer.clear()
    before = set(threading.enumerate())
    host, port = gateway.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(
        f"GET /large HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {gateway.token}\r\n\r\n".encode()
    )
    while not gateway.events:
        time.sleep(0.01)
    # hang up at once (a reset, as a client that was killed)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    gateway.answer.set()
    assert gateway.answered.wait(10)
    handled(10, before)  # its answer was written, or failed to be

    # the gateway still serves, and said nothing of the client that left
    request = urllib.request.Request(
        gateway.url + "/jobs", headers={"Authorization": f"Bearer {gateway.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    logged = capfd.readouterr().err
    assert "Traceback" not in logged
    assert "BrokenPipe" not in logged
    assert "ConnectionReset" not in logged
