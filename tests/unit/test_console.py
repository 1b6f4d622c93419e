"""The console function's answers: the page, its files, its settings, and nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronoq import console

from functions.console.handler import handler
from tests.support import load_event


def _get(path: str) -> dict[str, Any]:
    event = load_event("console/get_asset")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    answer: dict[str, Any] = handler(event, None)  # type: ignore[arg-type]
    return answer


def test_given_the_sample_event_when_handled_then_the_module_is_answered_with_its_type() -> None:
    answer = handler(load_event("console/get_asset"), None)  # type: ignore[arg-type]

    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"] == "text/javascript; charset=utf-8"
    assert answer["headers"]["X-Frame-Options"] == "DENY"
    assert "export function scheduleWords" in answer["body"]
    assert answer["isBase64Encoded"] is False


def test_given_the_root_when_asked_then_the_page_is_answered() -> None:
    answer = _get("/")

    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in answer["headers"]["Content-Security-Policy"]


@pytest.mark.parametrize(
    "path",
    ["/console/nothing.js", "/console/%2e%2e/__init__.py", "/console/../../__init__.py", "/jobs"],
)
def test_given_a_path_outside_the_console_files_when_asked_then_404(path: str) -> None:
    assert _get(path)["statusCode"] == 404


def test_given_no_hosted_ui_when_the_settings_are_asked_then_tokens_are_pasted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(console.ENV_COGNITO_DOMAIN, raising=False)

    assert json.loads(_get("/console/config.json")["body"]) == {"api": "", "cognito": None}


def test_given_a_hosted_ui_when_the_settings_are_asked_then_the_page_is_told_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(console.ENV_COGNITO_DOMAIN, "acme.auth.eu-west-1.amazoncognito.com")
    monkeypatch.setenv(console.ENV_COGNITO_CLIENT_ID, "abc123")

    assert json.loads(_get("/console/config.json")["body"])["cognito"] == {
        "domain": "acme.auth.eu-west-1.amazoncognito.com",
        "client_id": "abc123",
    }
