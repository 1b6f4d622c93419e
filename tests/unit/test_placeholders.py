"""Run placeholders, pure: the one-pass language the secrets began (a value put in is never
read again, unknown namespaces stay text), how values are encoded where they go (a URL's
parts, a JSON body, headers, a container's command), and the checks that run again on the
result: nothing a run is given becomes a command option, a program, a reserved header or a
call to chronoq itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronoq.domain import limits as lim
from chronoq.domain import placeholders, secrets
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.parameters import RunRequest, overlay
from chronoq.domain.placeholders import Refused
from chronoq.domain.secrets import MissingValue, RunContext
from chronoq.domain.targets import ContainerTarget, HttpTarget, PythonTarget
from pydantic import ValidationError

AT = "2026-11-01T00:00:00Z"


def context(**params: Any) -> RunContext:
    return RunContext(AT, "j-run-1", "nightly", params, {"extract": "42 rows"})


def no_secret(name: str) -> str:
    raise AssertionError(f"no secret is read: {name}")


# --- the language -----------------------------------------------------------------------------


def test_given_each_run_placeholder_when_rendered_then_each_takes_its_value() -> None:
    text = "{{ scheduled_at }} {{run_id}} {{ job.name }} {{ params.day }} {{ upstream.extract.output }}"

    assert secrets.render(text, no_secret, context(day="2026-11-01")) == (
        f"{AT} j-run-1 nightly 2026-11-01 42 rows"
    )


def test_given_values_holding_placeholders_when_rendered_then_they_are_not_read_again() -> None:
    values = {"tok": "SECRET-VALUE"}
    run = context(a="{{ secret.tok }}", b="{{ params.a }}", c="{{ run_id }}")

    text = secrets.render("{{ params.a }}|{{ params.b }}|{{ params.c }}", values.__getitem__, run)

    assert text == "{{ secret.tok }}|{{ params.a }}|{{ run_id }}"


def test_given_unknown_namespaces_when_rendered_then_they_stay_text() -> None:
    text = "{{ user.name }} {{ jobs.name }} {{ params }} {{ upstream.x.input }} {{ secret.a.b }}"

    assert secrets.render(text, no_secret, context()) == text


def test_given_a_parameter_not_passed_when_rendered_then_it_is_missing_by_name() -> None:
    with pytest.raises(MissingValue, match=r"params\.day"):
        secrets.render("day={{ params.day }}", no_secret, context())


def test_given_no_run_context_when_rendered_then_run_placeholders_stay_as_they_are() -> None:
    assert secrets.render("{{ params.day }}", no_secret, None) == "{{ params.day }}"


def test_given_a_json_document_when_resolved_then_a_lone_placeholder_keeps_its_type_and_quotes_stay_in_the_string() -> (
    None
):
    body = {"n": "{{ params.n }}", "text": 'say "{{ params.q }}"', "list": ["{{ params.q }}"]}

    resolved = secrets.resolve(body, no_secret, context(n=3, q='a"b\\c", "x": "y'))

    assert resolved == {
        "n": 3,
        "text": 'say "a"b\\c", "x": "y"',
        "list": ['a"b\\c", "x": "y'],
    }
    assert json.loads(json.dumps(resolved)) == resolved  # one document, its keys its own


# --- parameters ---------------------------------------------------------------------------------


def test_given_defaults_and_a_request_when_overlaid_then_the_request_wins_and_none_is_none() -> (
    None
):
    assert overlay({"day": "a", "env": "prod"}, {"day": "b"}) == {"day": "b", "env": "prod"}
    assert overlay({}, None) is None
    assert overlay({}, {}) is None


@pytest.mark.parametrize(
    "body",
    [
        {"parameters": ["day"]},
        {"parameters": "day=1"},
        {"parameters": {"bad name": 1}},
        {"parameters": {"x": "y" * lim.MAX_PARAMETERS_BYTES}},
    ],
)
def test_given_parameters_not_an_object_or_too_big_when_asked_then_refused_naming_parameters(
    body: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError) as refused:
        RunRequest.model_validate(body)

    assert refused.value.errors()[0]["loc"][0] == "parameters"


def test_given_defaults_and_a_request_too_big_together_when_overlaid_then_refused_naming_parameters() -> (
    None
):
    half = "y" * (lim.MAX_PARAMETERS_BYTES // 2)

    with pytest.raises(InvalidRequest) as refused:
        overlay({"a": half}, {"b": half})

    assert refused.value.field == "parameters"


# --- http ---------------------------------------------------------------------------------------


def http(url: str, **more: Any) -> HttpTarget:
    return HttpTarget.model_validate({"type": "http", "url": url, **more})


def test_given_placeholders_in_a_urls_path_and_query_when_expanded_then_values_are_percent_encoded() -> (
    None
):
    target = http(
        "https://api.example.com/days/{{ params.day }}?at={{ scheduled_at }}&q={{ params.q }}"
    )

    expanded = placeholders.expand(target, {}, context(day="../admin", q="a&b=c#d"))

    assert expanded.url == (
        "https://api.example.com/days/..%2Fadmin?at=2026-11-01T00%3A00%3A00Z&q=a%26b%3Dc%23d"
    )
    dots = placeholders.expand(
        http("https://h.example.com/a/{{ params.d }}/b"), {}, context(d="..")
    )
    assert dots.url == "https://h.example.com/a/%2E%2E/b"


@pytest.mark.parametrize(
    "host",
    ["evil.example.com/x?", "user@evil.example.com", "a.example.com#", "a b", "x\\y"],
)
def test_given_a_value_that_is_not_a_host_when_put_in_a_urls_host_then_the_run_is_refused_naming_the_url(
    host: str,
) -> None:
    target = http("https://{{ params.host }}/sync")

    with pytest.raises(Refused) as refused:
        placeholders.expand(target, {}, context(host=host))

    assert refused.value.field == "target.url"


def test_given_a_host_value_when_put_in_a_urls_host_then_the_url_calls_it() -> None:
    target = http("https://{{ params.host }}/sync")

    assert placeholders.expand(target, {}, context(host="eu.example.com")).url == (
        "https://eu.example.com/sync"
    )


@pytest.mark.parametrize("value", ["x\r\nHost: chronoq", "x\nAuthorization: Bearer a", "x\x00"])
def test_given_a_value_that_would_add_a_header_when_put_in_a_header_then_the_run_is_refused(
    value: str,
) -> None:
    target = http("https://api.example.com/", headers={"X-Day": "{{ params.v }}"})

    with pytest.raises(Refused, match="header X-Day"):
        placeholders.expand(target, {}, context(v=value))


@pytest.mark.parametrize("name", ["Host", "X-Chronoq-Run-Id", "{{ params.h }}"])
def test_given_a_reserved_or_templated_header_name_when_a_job_is_made_then_refused(
    name: str,
) -> None:
    with pytest.raises(ValidationError):
        http("https://api.example.com/", headers={name: "{{ params.v }}"})


def test_given_a_header_and_a_body_when_expanded_then_the_header_takes_text_and_the_body_stays_json() -> (
    None
):
    target = http(
        "https://api.example.com/",
        headers={"X-Run": "{{ run_id }}", "X-N": "{{ params.n }}"},
        body={"day": "{{ params.day }}", "job": "{{ job.name }}"},
    )

    expanded = placeholders.expand(target, {}, context(day='2026"11', n=5))

    assert expanded.headers == {"X-Run": "j-run-1", "X-N": "5"}
    assert expanded.body == {"day": '2026"11', "job": "nightly"}


# --- python and containers ----------------------------------------------------------------------


def test_given_a_python_task_when_expanded_then_its_arguments_and_environment_take_values() -> None:
    target = PythonTarget.model_validate(
        {
            "type": "python",
            "task": "chronoq.tasks:echo",
            "args": {"day": "{{ params.day }}", "n": "{{ params.n }}"},
            "environment": {"DAY": "{{ params.day }}", "N": "{{ params.n }}"},
        }
    )

    expanded = placeholders.expand(target, {}, context(day="2026-11-01", n=2))

    assert expanded.args == {"day": "2026-11-01", "n": 2}
    assert expanded.environment == {"DAY": "2026-11-01", "N": "2"}


def test_given_a_python_task_name_with_a_placeholder_when_made_then_refused() -> None:
    with pytest.raises(ValidationError):
        PythonTarget.model_validate({"type": "python", "task": "{{ params.task }}"})


def container(*command: str, **environment: Any) -> ContainerTarget:
    return ContainerTarget.model_validate(
        {
            "type": "container",
            "image": "busybox",
            "command": list(command),
            "environment": environment,
        }
    )


@pytest.mark.parametrize("program", ["{{ params.program }}", "/bin/{{ params.p }}", "{{run_id}}"])
def test_given_a_placeholder_in_a_containers_program_when_made_then_refused_naming_the_command(
    program: str,
) -> None:
    with pytest.raises(ValidationError) as refused:
        container(program, "x")

    assert refused.value.errors()[0]["loc"][0] == "command"


@pytest.mark.parametrize("value", ["--rm", "-c", "-"])
def test_given_a_value_making_an_option_when_put_in_a_containers_command_then_the_run_is_refused(
    value: str,
) -> None:
    target = container("report", "{{ params.day }}")

    with pytest.raises(Refused) as refused:
        placeholders.expand_container(target, context(day=value))

    assert refused.value.field == "target.command[1]"


def test_given_values_in_a_containers_command_and_environment_when_expanded_then_the_program_stays_the_jobs() -> (
    None
):
    target = container(
        "report", "--day={{ params.day }}", "{{ params.path }}", DAY="{{ params.day }}"
    )

    expanded = placeholders.expand_container(target, context(day="-2026-11-01", path="/bin/sh"))

    assert expanded.command == ["report", "--day=-2026-11-01", "/bin/sh"]
    assert expanded.environment == {"DAY": "-2026-11-01"}


def test_given_a_nul_in_a_value_when_put_in_a_containers_command_or_environment_then_refused() -> (
    None
):
    with pytest.raises(Refused, match=r"target.command\[1\]"):
        placeholders.expand_container(container("report", "{{ params.v }}"), context(v="a\x00b"))
    with pytest.raises(Refused, match=r"target\.environment\.V"):
        placeholders.expand_container(container("report", V="{{ params.v }}"), context(v="a\x00b"))
