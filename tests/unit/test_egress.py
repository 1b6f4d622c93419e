"""The SSRF guard's call: the connection goes to the address that was checked, whatever the
name resolves to afterwards (a DNS rebinding: a name that answers a permitted address to the
check and a refused one to the connection)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import urllib3
from chronoq.domain.network import NetworkPolicy
from chronoq.execution.egress import BlockedTarget, Egress

from tests.support import http_sink

NAME = "rebinding.example"
#: The guard on, with the sink's address (and only it) let through.
POLICY = NetworkPolicy.of(True, ["127.0.0.1/32"])


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every lookup of NAME: the first answers 127.0.0.1 (let through), every later one
    127.0.0.2 (loopback, refused), for chronoq's resolver and urllib3's connections alike."""
    real = socket.getaddrinfo
    seen: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == NAME:
            seen.append(host)
            host = "127.0.0.1" if len(seen) == 1 else "127.0.0.2"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


def test_given_a_name_whose_answer_changes_after_the_check_when_called_then_the_connection_goes_to_the_address_checked(
    lookups: list[str],
) -> None:
    with http_sink() as sink:
        port = sink.url.rsplit(":", 1)[1]

        answer = Egress(POLICY).request(
            "GET",
            f"http://{NAME}:{port}/hook",
            body=None,
            headers={},
            timeout=urllib3.Timeout(connect=2, read=2),
        )

        assert answer.status == 200
        assert lookups == [NAME]  # resolved once, to check it; connected to what it answered
        (hit,) = sink.hits
        assert hit.headers["Host"] == f"{NAME}:{port}"  # the name is still the one asked for


def test_given_a_name_whose_first_answer_is_refused_when_called_then_nothing_is_connected_to(
    lookups: list[str],
) -> None:
    lookups.append("an earlier lookup")  # the next answer is 127.0.0.2
    with http_sink() as sink:
        port = sink.url.rsplit(":", 1)[1]

        with pytest.raises(BlockedTarget, match="network policy"):
            Egress(POLICY).request(
                "GET",
                f"http://{NAME}:{port}/hook",
                body=None,
                headers={},
                timeout=urllib3.Timeout(connect=2, read=2),
            )

        assert sink.hits == []
