"""``chronoq invoke``: a function's handler with an event from events/, on the embedded AWS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronoq.cli.main import main

EVENTS = Path(__file__).resolve().parents[2] / "events"


def test_given_an_api_event_from_events_when_invoked_then_the_handlers_answer_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["invoke", "api", str(EVENTS / "api" / "list_jobs.json")])

    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"]) == {"jobs": []}


def test_given_the_dispatchers_tick_when_invoked_then_its_report_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["invoke", "dispatcher", str(EVENTS / "dispatcher" / "group.json")])

    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(int(s) for s in report["per_shard"]) == [0, 2]


def test_given_an_event_the_handler_refuses_when_invoked_then_its_error_is_shown_and_the_exit_code_is_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"not": "an sqs event"}')

    code = main(["invoke", "worker", str(event)])

    assert code == 1
    assert "errorMessage" in capsys.readouterr().err


def test_given_an_unknown_function_when_invoked_then_it_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["invoke", "nope", str(EVENTS / "api" / "list_jobs.json")])

    assert code == 2
    assert "nope" in capsys.readouterr().err
