"""The in-process Lambda runtime serves concurrent invocations of the API function at once,
and they never read each other's event: chronoq's resolver (chronoq.resolver) keeps the event
it handles to the resolving thread, where Powertools' keeps it on its BaseRouter class, shared
by every container of the process."""

from __future__ import annotations

import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.local.lambdas import LambdaRuntime

from tests.support import api_event

#: The handler: the first request waits (at most a second) for a second one to be resolved,
#: then answers the body of the event the resolver says it is handling.
#: ``overlapped``: the second request was resolved while the first was.
HANDLER = """
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from chronoq.resolver import HttpResolver
from runtime_gate import first_entered, second_resolved

app = {resolver}()


@app.post("/echo")
def echo():
    body = app.current_event.json_body
    overlapped = None
    if body["n"] == 1:
        first_entered.set()
        overlapped = second_resolved.wait(timeout=10.0)
    else:
        second_resolved.set()
    return {{"n": app.current_event.json_body["n"], "overlapped": overlapped}}


def handler(event, context):
    return app.resolve(event, context)
"""


@dataclass(frozen=True)
class _Echo(r.Function):
    folder: Path = Path()

    @property
    def handler_file(self) -> Path:
        return self.folder / "handler.py"


@pytest.fixture(params=["HttpResolver"])
def folder(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    (tmp_path / "handler.py").write_text(textwrap.dedent(HANDLER.format(resolver=request.param)))
    (tmp_path / "runtime_gate.py").write_text(
        "import threading\nfirst_entered = threading.Event()\nsecond_resolved = threading.Event()\n"
    )
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("runtime_gate", None)


def _both(runtime: LambdaRuntime) -> dict[int, Any]:
    answers: dict[int, Any] = {}

    def call(n: int) -> None:
        event = api_event("create_at_job", body={"n": n}, path="/echo", method="POST")
        answers[n] = runtime.invoke("echo", event)["body"]

    first = threading.Thread(target=call, args=(1,))
    first.start()
    assert sys.modules["runtime_gate"].first_entered.wait(timeout=10)
    second = threading.Thread(target=call, args=(2,))
    second.start()
    first.join()
    second.join()
    return answers


def test_given_two_concurrent_requests_to_an_api_function_when_invoked_then_both_are_served_at_once_and_each_answers_its_own(
    folder: Path,
) -> None:
    echo = _Echo(name="api", memory_mb=128, timeout_seconds=10, env=(), folder=folder)
    runtime = LambdaRuntime({"echo": echo}, "us-east-1", "123456789012")
    runtime.warm("echo", 2)

    answers = _both(runtime)

    assert answers == {1: '{"n":1,"overlapped":true}', 2: '{"n":2,"overlapped":null}'}


@pytest.mark.parametrize("folder", ["APIGatewayHttpResolver"], indirect=True)
def test_given_powertools_own_resolver_when_two_requests_overlap_then_they_cross(
    folder: Path,
) -> None:
    """What chronoq's resolver is for: with Powertools' own, the first request answers the
    second's event."""
    echo = _Echo(name="api", memory_mb=128, timeout_seconds=10, env=(), folder=folder)
    runtime = LambdaRuntime({"echo": echo}, "us-east-1", "123456789012")
    runtime.warm("echo", 2)

    answers = _both(runtime)

    assert answers[1] == '{"n":2,"overlapped":true}'
