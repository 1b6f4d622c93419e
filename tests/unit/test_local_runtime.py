"""The in-process Lambda runtime: concurrent invocations of a function that resolves API
Gateway events with Powertools' event handler never read each other's event (the resolver
keeps the event it handles on its BaseRouter class, shared by every container of the process).
"""

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
HANDLER = """
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from runtime_gate import first_entered, second_resolved

app = APIGatewayHttpResolver()


@app.post("/echo")
def echo():
    body = app.current_event.json_body
    if body["n"] == 1:
        first_entered.set()
        second_resolved.wait(timeout=1.0)
    else:
        second_resolved.set()
    return {"n": app.current_event.json_body["n"]}


def handler(event, context):
    return app.resolve(event, context)
"""


@dataclass(frozen=True)
class _Echo(r.Function):
    folder: Path = Path()

    @property
    def handler_file(self) -> Path:
        return self.folder / "handler.py"


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "handler.py").write_text(textwrap.dedent(HANDLER))
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


def test_given_two_concurrent_requests_to_an_api_function_when_invoked_then_each_answers_its_own(
    folder: Path,
) -> None:
    echo = _Echo(name="api", memory_mb=128, timeout_seconds=10, env=(), folder=folder)
    runtime = LambdaRuntime({"echo": echo}, "us-east-1", "123456789012")
    runtime.warm("echo", 2)

    answers = _both(runtime)

    assert answers == {1: '{"n":1}', 2: '{"n":2}'}


def test_given_api_functions_not_invoked_one_at_a_time_when_two_overlap_then_they_cross(
    folder: Path,
) -> None:
    """What the rule is for: without it, the first request answers the second's event."""
    echo = _Echo(name="api", memory_mb=128, timeout_seconds=10, env=(), folder=folder)
    runtime = LambdaRuntime({"echo": echo}, "us-east-1", "123456789012", one_at_a_time=frozenset())
    runtime.warm("echo", 2)

    answers = _both(runtime)

    assert answers[1] == '{"n":2}'
