"""``chronoq invoke``: a function's handler with an event from events/, on the embedded AWS."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
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


#: What Powertools' Logger keeps on the logger of its service once it has set it up.
_MARKS = ("init", "powertools_handler")


@pytest.fixture
def fresh_worker_logger(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The worker's logger as in a process of its own (not yet set up by an earlier test,
    with a stream of that test's, nor told a level by one); as it was again afterwards."""
    monkeypatch.delenv("POWERTOOLS_LOG_LEVEL", raising=False)  # (chronoq local sets it)
    logger = logging.getLogger("chronoq-worker")
    handlers = list(logger.handlers)
    marks = {k: logger.__dict__.pop(k) for k in _MARKS if k in logger.__dict__}
    logger.handlers = []
    yield
    for k in _MARKS:
        logger.__dict__.pop(k, None)
    logger.__dict__.update(marks)
    logger.handlers = handlers


def test_given_a_function_that_logs_when_invoked_then_its_log_lines_go_to_stderr_and_only_the_answer_to_stdout(
    capfd: pytest.CaptureFixture[str], fresh_worker_logger: None
) -> None:

    code = main(["invoke", "worker", str(EVENTS / "worker" / "sqs_batch.json")])

    out, err = capfd.readouterr()
    assert code == 0
    assert json.loads(out) == {"batchItemFailures": []}
    assert '"service":"chronoq-worker"' in err  # the worker's log line: the run is gone


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


#: Every sample event, by the function it is for (its folder).
SAMPLES = sorted(EVENTS.glob("*/*.json"))


def test_given_the_sample_events_when_listed_then_every_function_has_one() -> None:
    from chronoq import console
    from chronoq import resources as r

    assert {p.parent.name for p in SAMPLES} == {f.name for f in (*r.FUNCTIONS, console.FUNCTION)}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_given_a_sample_event_when_invoked_on_its_function_then_the_handler_answers(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["invoke", sample.parent.name, str(sample)])

    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    json.loads(out)  # (the handler's answer, alone, as JSON)


def test_given_the_consoles_sample_when_invoked_then_the_asset_it_names_is_answered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["invoke", "console", str(EVENTS / "console" / "get_asset.json")])

    answer = json.loads(capsys.readouterr().out)
    assert code == 0
    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"].startswith("text/javascript")
