"""``chronoq admin erase``: on AWS it invokes the eraser function with the operator's own
credentials (never through the API); locally it asks chronoq local's control; it asks to confirm
unless ``--yes``, and says when the eraser failed."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from chronoq.cli.client import Api

from tests.unit.cli_on_fakes import chronoq


class FakeLambda:
    def __init__(self, answer: dict[str, Any], error: bool = False) -> None:
        self.answer, self.error = answer, error
        self.invoked: list[dict[str, Any]] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        self.invoked.append({"function": FunctionName, "event": json.loads(Payload)})
        answer: dict[str, Any] = {"Payload": io.BytesIO(json.dumps(self.answer).encode())}
        if self.error:
            answer["FunctionError"] = "Unhandled"
        return answer


@pytest.fixture
def no_api(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """The API the command would reach locally: what it was asked."""
    asked: list[tuple[str, str, Any]] = []

    def call(
        self: Api, method: str, path: str, body: Any = None, query: Any = None, **_: Any
    ) -> Any:
        asked.append((method, path, query))
        return {"owner_digest": "d", "counts": {"jobs": 2}}

    monkeypatch.setattr(Api, "call", call)
    monkeypatch.setenv("CHRONOQ_API_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("CHRONOQ_TOKEN", "t")
    return asked


def test_given_a_function_name_when_an_owner_is_erased_then_the_eraser_is_invoked_directly(
    monkeypatch: pytest.MonkeyPatch, no_api: list[tuple[str, str, Any]]
) -> None:
    fake = FakeLambda({"owner_digest": "abc", "counts": {"jobs": 3}})
    monkeypatch.setattr("boto3.client", lambda service, **_: fake)

    out = chronoq("admin", "erase", "alice", "--yes", "--function", "chronoq-eraser", "--by", "ops")

    assert fake.invoked == [
        {"function": "chronoq-eraser", "event": {"owner": "alice", "by": "ops"}}
    ]
    assert json.loads(out.stdout)["counts"] == {"jobs": 3}
    assert no_api == []  # never the API


def test_given_no_function_when_an_owner_is_erased_then_chronoq_locals_control_is_asked(
    no_api: list[tuple[str, str, Any]],
) -> None:
    chronoq("admin", "erase", "alice", "--yes", "--by", "ops")

    assert no_api == [("POST", "/_local/erase", {"owner": "alice", "by": "ops"})]


def test_given_no_yes_when_the_operator_does_not_confirm_then_nothing_is_erased(
    no_api: list[tuple[str, str, Any]],
) -> None:
    chronoq("admin", "erase", "alice", code=1, stdin="n\n")

    assert no_api == []


def test_given_an_eraser_that_fails_when_invoked_then_the_command_says_so(
    monkeypatch: pytest.MonkeyPatch, no_api: list[tuple[str, str, Any]]
) -> None:
    fake = FakeLambda({"errorMessage": "boom"}, error=True)
    monkeypatch.setattr("boto3.client", lambda service, **_: fake)

    out = chronoq("admin", "erase", "alice", "--yes", "--function", "f", code=1)

    assert "the eraser failed" in out.stderr
