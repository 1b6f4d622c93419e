"""The command line against the api function's handler over the fakes (tests/unit/api_on_fakes):
its commands, its client's requests and the handler's answers (statuses, bodies, headers), in
milliseconds. Every request the command line sends is recorded, its body as sent."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from chronoq.cli.client import Answer, Api
from chronoq.cli.errors import ApiError
from chronoq.cli.main import cli
from click.testing import CliRunner, Result

from tests.builders import Fakes
from tests.unit.api_on_fakes import Api as Handler
from tests.unit.api_on_fakes import api_on_fakes

USER = "alice"


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    body: Any
    #: The request as it would go on the wire (method, path and JSON body), to search.
    wire: str


class HandlerApi(Api):
    """An Api whose requests the handler answers, in this process."""

    def __init__(self, handler: Handler, user: str = USER) -> None:
        super().__init__("http://api.test", f"token-of-{user}")
        self.handler = handler
        self.user = user
        self.sent: list[Sent] = []

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        *,
        raw: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        target = path + (f"?{urllib.parse.urlencode(params, doseq=True)}" if params else "")
        wire = f"{method} {target} {json.dumps(body) if body is not None else ''}"
        self.sent.append(Sent(method, target, body, wire))
        status, answer, received = self.handler.call(
            method, target, user=self.user, body=body, headers=headers
        )
        if status >= 400:
            raise ApiError(status, answer)
        return Answer(status, answer, {k.lower(): v for k, v in received.items()})

    def paths(self) -> list[str]:
        return [f"{s.method} {s.path}" for s in self.sent]


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


@pytest.fixture
def api(fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> Iterator[HandlerApi]:
    """What every command's ``api`` is in the test: the handler over ``fakes``."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(fakes) as handler:
        served = HandlerApi(handler)
        monkeypatch.setattr("chronoq.cli.common.connect", lambda *_: served)
        yield served


def chronoq(*args: str, code: int = 0, stdin: str | None = None) -> Result:
    """``chronoq ARGS`` (stdin: not a terminal), asserting its exit code."""
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == code, (
        f"chronoq {' '.join(args)}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
        + (f"\n{result.exception!r}" if result.exception else "")
    )
    return result
