"""Run parameters through the api function's handler on the fakes: a trigger's and a run's
re-run's optional body, a job's defaults, 422 naming the field when they are not an object
or too big, the parameters shown on the run, and a container's program refused a
placeholder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chronoq.domain import limits as lim

from tests.unit.api_on_fakes import Api, api_on_fakes


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def job(**extra: Any) -> dict[str, Any]:
    return {
        "name": extra.pop("name", "load"),
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": extra.pop(
            "target", {"type": "http", "url": "https://api.example.com/{{ params.day }}"}
        ),
        **extra,
    }


def test_given_a_job_with_defaults_when_triggered_with_parameters_then_the_run_shows_the_overlay(
    api: Api,
) -> None:
    status, made, _ = api.call("POST", "/jobs", body=job(parameters={"day": "d", "env": "prod"}))
    assert status == 201, made
    assert made["parameters"] == {"day": "d", "env": "prod"}

    status, run, _ = api.call(
        "POST", f"/jobs/{made['id']}/trigger", body={"parameters": {"day": "2026-11-01"}}
    )
    plain = api.call("POST", f"/jobs/{made['id']}/trigger")

    assert status == 202, run
    shown = api.call("GET", f"/runs/{run['id']}")[1]
    assert shown["parameters"] == {"day": "2026-11-01", "env": "prod"}
    assert plain[0] == 202
    assert plain[1]["parameters"] == {"day": "d", "env": "prod"}


@pytest.mark.parametrize(
    "parameters",
    [["day"], "day=2026-11-01", 3, {"bad name": 1}, {"x": "y" * lim.MAX_PARAMETERS_BYTES}],
)
def test_given_parameters_not_an_object_or_too_big_when_triggered_or_rerun_then_422_naming_parameters(
    api: Api, parameters: Any
) -> None:
    made = api.call("POST", "/jobs", body=job())[1]

    status, refused, _ = api.call(
        "POST", f"/jobs/{made['id']}/trigger", body={"parameters": parameters}
    )
    rerun = api.call("POST", f"/runs/{made['id']}-x/rerun", body={"parameters": parameters})
    created = api.call("POST", "/jobs", body=job(name="other", parameters=parameters))

    assert (status, refused["error"]["field"]) == (422, "parameters"), refused
    assert (rerun[0], rerun[1]["error"]["field"]) == (422, "parameters"), rerun
    assert (created[0], created[1]["error"]["field"]) == (422, "parameters"), created
    assert not api.fakes.store.runs


def test_given_a_placeholder_in_a_containers_program_when_created_then_422_naming_the_command(
    api: Api,
) -> None:
    target = {"type": "container", "image": "busybox", "command": ["{{ params.p }}", "x"]}

    status, refused, _ = api.call("POST", "/jobs", body=job(target=target))

    assert (status, refused["error"]["field"]) == (422, "target.command"), refused


def test_given_placeholders_in_a_urls_host_and_query_when_created_then_taken(
    api: Api,
) -> None:
    target = {"type": "http", "url": "https://{{ params.region }}.example.com/x?d={{ params.d }}"}

    status, made, _ = api.call("POST", "/jobs", body=job(target=target))

    assert status == 201, made
