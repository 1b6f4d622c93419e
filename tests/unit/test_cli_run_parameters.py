"""``--param NAME=VALUE`` and ``--params JSON`` on ``chronoq jobs trigger``, ``jobs
backfill``, ``jobs rerun`` and ``runs rerun``, against the api function's handler over the
fakes: what the request's body carries, and bad input refused before any request."""

from __future__ import annotations

import json

from tests.builders import Fakes
from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)


def _job(api: HandlerApi) -> str:
    spec = {
        "name": "load",
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": {"type": "http", "url": "https://api.example.com/{{ params.day }}"},
        "parameters": {"env": "prod"},
    }
    status, made, _ = api.handler.call("POST", "/jobs", body=spec)
    assert status == 201, made
    return str(made["id"])


def test_given_params_and_param_options_when_triggered_then_the_body_carries_them_overlaid(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = _job(api)

    result = chronoq(
        "jobs",
        "trigger",
        job_id,
        "--params",
        '{"day": "x", "limit": 10}',
        "--param",
        "day=2026-11-01",
        "-o",
        "json",
    )

    run = json.loads(result.stdout)
    assert run["parameters"] == {"env": "prod", "day": "2026-11-01", "limit": 10}
    (sent,) = [s for s in api.sent if s.path.endswith("/trigger")]
    assert sent.body == {"parameters": {"day": "2026-11-01", "limit": 10}}


def test_given_no_parameter_options_when_triggered_then_no_body_is_sent(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = _job(api)

    chronoq("jobs", "trigger", job_id, "-o", "json")

    (sent,) = [s for s in api.sent if s.path.endswith("/trigger")]
    assert sent.body is None


def test_given_bad_parameter_options_when_triggered_then_refused_before_any_request(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = _job(api)

    for bad in (["--param", "day"], ["--params", "[1]"], ["--params", "{"]):
        result = chronoq("jobs", "trigger", job_id, *bad, code=2)
        assert "--param" in result.output

    assert not [s for s in api.sent if s.path.endswith("/trigger")]


def test_given_a_run_with_parameters_when_shown_then_they_are_one_line_of_ascii_json(
    api: HandlerApi, fakes: Fakes
) -> None:
    job_id = _job(api)

    result = chronoq("jobs", "trigger", job_id, "--param", "day=\x1b[31m2026‮")

    assert "parameters" in result.stdout
    assert '"day": "\\u001b[31m2026\\u202e"' in result.stdout
    assert "\x1b" not in result.stdout
