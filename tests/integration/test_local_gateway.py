"""chronoq local's gateway on a shared machine: the token before the body, the body capped,
bad lengths refused without a hang, and its own controls for admin tokens only."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.local import tokens
from chronoq.local.gateway import serve

#: Longer than any answer takes, far shorter than the gateway's wait for a body.
ANSWER_TIMEOUT_SECONDS = 5.0


@dataclass
class Gateway:
    port: int
    data_dir: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    controls_called: list[str] = field(default_factory=list)

    def token(self, admin: bool = False) -> str:
        return tokens.mint(self.data_dir, "alice", admin=admin)

    def send(self, head: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
        """Send a raw request (``head``: request line and headers, CRLF line ends added);
        the status and JSON of the answer, which must come within ANSWER_TIMEOUT_SECONDS."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.settimeout(ANSWER_TIMEOUT_SECONDS)
            sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                assert chunk, f"connection closed without an answer: {data!r}"
                data += chunk
            header, _, rest = data.partition(b"\r\n\r\n")
            lines = header.decode().split("\r\n")
            length = next(
                int(v) for k, _, v in (x.partition(": ") for x in lines) if k == "Content-Length"
            )
            while len(rest) < length:
                rest += sock.recv(65536)
        return int(lines[0].split()[1]), json.loads(rest) if rest else {}


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    state = Gateway(0, tmp_path)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        state.events.append(event)
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}

    def control() -> dict[str, Any]:
        state.controls_called.append("ticker/stop")
        return {"ticker": "stopped"}

    server = serve(
        "127.0.0.1",
        0,
        tokens.secret(tmp_path),
        invoke,
        controls={"POST /_local/ticker/stop": lambda _: control()},
    )
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def head(method: str, path: str, token: str | None, length: str | None = None) -> str:
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return "\n".join(lines) + "\n"


def test_given_no_token_when_a_request_announces_a_huge_body_then_401_at_once_without_reading_it(
    gateway: Gateway,
) -> None:
    status, answer = gateway.send(head("POST", "/jobs", None, "1000000000"))

    assert status == 401
    assert answer == {"message": "Unauthorized"}
    assert gateway.events == []


def test_given_a_bad_token_when_a_body_is_announced_and_never_sent_then_401_without_waiting_for_it(
    gateway: Gateway,
) -> None:
    status, _ = gateway.send(head("POST", "/jobs", "not-a-token", "10"))

    assert status == 401


def test_given_a_token_when_the_body_is_over_the_apis_limit_then_413_and_nothing_invoked(
    gateway: Gateway,
) -> None:
    length = str(r.MAX_REQUEST_BYTES + 1)

    status, answer = gateway.send(head("POST", "/jobs", gateway.token(), length))

    assert status == 413
    assert answer["error"]["code"] == "payload_too_large"
    assert gateway.events == []


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", " ", "+5", "٣"])
def test_given_a_content_length_that_is_not_one_when_sent_then_400_at_once(
    gateway: Gateway, length: str
) -> None:
    status, answer = gateway.send(head("POST", "/jobs", gateway.token(), length))

    assert status == 400
    assert answer["error"]["code"] == "bad_request"
    assert gateway.events == []


def test_given_a_chunked_body_when_sent_then_400_asking_for_a_content_length(
    gateway: Gateway,
) -> None:
    request = head("POST", "/jobs", gateway.token()) + "Transfer-Encoding: chunked\n"

    status, _ = gateway.send(request)

    assert status == 400
    assert gateway.events == []


def test_given_a_token_and_a_body_within_the_limit_when_sent_then_the_api_gets_it(
    gateway: Gateway,
) -> None:
    body = b'{"name": "x"}'

    status, _ = gateway.send(head("POST", "/jobs", gateway.token(), str(len(body))), body)

    assert status == 200
    assert [e["body"] for e in gateway.events] == ['{"name": "x"}']


@pytest.mark.parametrize("method", ["PROPFIND", "MKCOL", "BREW"])
def test_given_a_method_outside_http_s_standard_ones_when_sent_then_the_api_answers_it(
    gateway: Gateway, method: str
) -> None:
    """(Not the server's own 501 page: the API answers, 405 with Allow where a route takes
    other methods.)"""
    status, _ = gateway.send(head(method, "/jobs", gateway.token(), "0"))

    assert status == 200
    assert [e["requestContext"]["http"]["method"] for e in gateway.events] == [method]


def test_given_an_ordinary_token_when_a_local_control_is_called_then_403_and_it_is_not_run(
    gateway: Gateway,
) -> None:
    status, answer = gateway.send(head("POST", "/_local/ticker/stop", gateway.token()))

    assert status == 403
    assert answer["error"]["code"] == "forbidden"
    assert "chronoq token --admin" in answer["error"]["message"]
    assert gateway.controls_called == []


def test_given_an_admin_token_when_a_local_control_is_called_then_it_runs(
    gateway: Gateway,
) -> None:
    status, answer = gateway.send(head("POST", "/_local/ticker/stop", gateway.token(admin=True)))

    assert (status, answer) == (200, {"ticker": "stopped"})
    assert gateway.controls_called == ["ticker/stop"]


def test_given_an_admin_claim_forged_with_another_secret_when_a_control_is_called_then_401(
    gateway: Gateway, tmp_path: Path
) -> None:
    forged = tokens.mint(tmp_path / "elsewhere", "mallory", admin=True)

    status, _ = gateway.send(head("POST", "/_local/ticker/stop", forged))

    assert status == 401
    assert gateway.controls_called == []


@pytest.mark.parametrize(
    ("error", "logged"),
    [
        (ConnectionResetError(104, "reset"), False),
        (BrokenPipeError(32, "pipe"), False),
        (ValueError("a bug"), True),
    ],
)
def test_given_an_error_while_serving_a_request_when_handled_then_only_a_client_going_away_is_not_logged(
    error: Exception, logged: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve("127.0.0.1", 0, "s" * 64, lambda event: {})
    try:
        with socket.socket() as connection:
            try:
                raise error
            except Exception:
                server.handle_error(connection, ("127.0.0.1", 1))
    finally:
        server.server_close()

    assert (type(error).__name__ in capsys.readouterr().err) is logged
