"""``chronoq secrets put|list|delete`` against the api function's handler over the fakes: a
value goes from standard input or a hidden prompt into the request's body and nowhere else,
never from the command line; a secret in use is not deleted, and the jobs naming it are
listed."""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any

import pytest
from chronoq.cli.main import cli, main
from chronoq.domain.jobs import JobSpec

from tests.builders import Fakes
from tests.unit.cli_on_fakes import USER, HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)

VALUE = "tok-9f8e7d6c5b4a"


def _job(name: str, secret: str) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"type": "cron", "expression": "0 2 * * *"},
        "target": {
            "type": "http",
            "url": "https://crm.example.com/sync",
            "headers": {"Authorization": {"secret": secret}},
        },
    }


def _stored(fakes: Fakes, name: str) -> list[str]:
    """Every value kept for USER's secret ``name``, oldest first."""
    return list(fakes.secret_values.values.get((USER, name), []))  # type: ignore[attr-defined]


# --- put ---------------------------------------------------------------------------------------


def test_given_a_value_on_stdin_when_put_then_it_is_the_requests_body_and_never_printed(
    api: HandlerApi, fakes: Fakes
) -> None:
    made = chronoq("secrets", "put", "crm-token", stdin=VALUE + "\n")
    changed = chronoq("secrets", "put", "crm-token", stdin="tok-second-value")

    assert made.stdout == "made secret crm-token, version 1\n"
    assert changed.stdout == "changed secret crm-token, version 2\n"
    carrying = [s for s in api.sent if VALUE in s.wire]
    assert [(s.method, s.path, s.body) for s in carrying] == [
        ("PUT", "/secrets/crm-token", {"value": VALUE})  # one line ending dropped, no more
    ]
    assert _stored(fakes, "crm-token") == [VALUE, "tok-second-value"]
    for result in (made, changed):
        assert VALUE not in result.output
        assert "tok-second-value" not in result.output


@pytest.mark.parametrize(
    ("piped", "kept"),
    [
        ("line one\r\n", "line one"),
        ("two\nlines\n", "two\nlines"),
        ("no line end", "no line end"),
        ("  spaces kept  \n", "  spaces kept  "),
    ],
)
def test_given_a_piped_value_when_put_then_only_one_line_ending_is_dropped(
    api: HandlerApi, fakes: Fakes, piped: str, kept: str
) -> None:
    chronoq("secrets", "put", "key", stdin=piped)

    assert _stored(fakes, "key") == [kept]


def test_given_json_output_when_put_then_the_apis_answer_without_a_value_is_printed(
    api: HandlerApi,
) -> None:
    answer = json.loads(chronoq("secrets", "put", "crm-token", "-o", "json", stdin=VALUE).stdout)

    assert sorted(answer) == ["created_at", "name", "updated_at", "version"]
    assert (answer["name"], answer["version"]) == ("crm-token", 1)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _at_a_terminal(monkeypatch: pytest.MonkeyPatch, typed: list[str]) -> list[str]:
    """Standard input a terminal, and ``typed`` what each hidden prompt gets; the prompts."""
    asked: list[str] = []

    def getpass(prompt: str = "Password: ", stream: Any = None) -> str:
        asked.append(prompt)
        return typed.pop(0)

    monkeypatch.setattr(sys, "stdin", _Terminal())
    monkeypatch.setattr("getpass.getpass", getpass)
    return asked


def test_given_a_terminal_when_put_then_the_value_is_typed_twice_hidden_and_sent(
    api: HandlerApi,
    fakes: Fakes,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked = _at_a_terminal(monkeypatch, [VALUE, VALUE])

    assert main(["secrets", "put", "crm-token"]) == 0

    assert len(asked) == 2
    assert "crm-token" in asked[0]
    assert _stored(fakes, "crm-token") == [VALUE]
    printed = capsys.readouterr()
    assert printed.out == "made secret crm-token, version 1\n"
    assert VALUE not in printed.out + printed.err


def test_given_a_terminal_when_the_two_values_typed_differ_then_nothing_is_sent(
    api: HandlerApi,
    fakes: Fakes,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _at_a_terminal(monkeypatch, [VALUE, VALUE + "x"])

    assert main(["secrets", "put", "crm-token"]) == 2

    assert api.sent == []
    printed = capsys.readouterr()
    assert "differ" in printed.err
    assert VALUE not in printed.out + printed.err


@pytest.mark.parametrize(
    "given",
    [
        ["crm-token", VALUE],
        ["crm-token", "--value", VALUE],
        ["crm-token", f"--value={VALUE}"],
        ["crm-token", "-v", VALUE],
    ],
)
def test_given_a_value_on_the_command_line_when_put_then_refused_unsent_and_not_repeated(
    api: HandlerApi, given: list[str]
) -> None:
    result = chronoq("secrets", "put", *given, code=2, stdin="from-stdin")

    assert api.sent == []
    assert "never given on the command line" in result.stderr
    assert VALUE not in result.output


def test_given_the_put_command_then_no_option_or_argument_but_the_name_takes_a_value() -> None:
    put = cli.commands["secrets"].commands["put"]  # type: ignore[attr-defined]

    taking = {p.name for p in put.params if not getattr(p, "is_flag", False)}

    assert taking == {"name", "output", "url", "token", "profile"}


def test_given_empty_stdin_when_put_then_refused_before_anything_is_sent(
    api: HandlerApi,
) -> None:
    result = chronoq("secrets", "put", "crm-token", code=2, stdin="")

    assert api.sent == []
    assert "empty" in result.stderr


@pytest.mark.parametrize(
    ("name", "piped", "field"), [("bad name!", VALUE, "name"), ("ok", "abc", "value")]
)
def test_given_what_the_api_refuses_when_put_then_the_field_is_named_and_exit_1(
    api: HandlerApi, name: str, piped: str, field: str
) -> None:
    result = chronoq("secrets", "put", name, code=1, stdin=piped)

    assert re.search(rf"^error: HTTP 422 .*\n  {field}: ", result.stderr, re.M), result.stderr


# --- list --------------------------------------------------------------------------------------


def test_given_secrets_when_listed_then_names_versions_and_times_but_no_value(
    api: HandlerApi, fakes: Fakes
) -> None:
    chronoq("secrets", "put", "crm-token", stdin=VALUE)
    chronoq("secrets", "put", "crm-token", stdin=VALUE + "-2")
    fakes.clock.advance(60)
    chronoq("secrets", "put", "api-key", stdin="key-abcdef")

    table = chronoq("secrets", "list").stdout.splitlines()
    listed = json.loads(chronoq("secrets", "list", "-o", "json").stdout)

    assert table[0].split() == ["NAME", "VERSION", "UPDATED"]
    rows = sorted(line.split()[:2] for line in table[1:])
    assert rows == [["api-key", "1"], ["crm-token", "2"]]
    assert all(re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$", line) for line in table[1:])
    assert sorted((s["name"], s["version"]) for s in listed["secrets"]) == [
        ("api-key", 1),
        ("crm-token", 2),
    ]
    for printed in (json.dumps(listed), "\n".join(table)):
        assert VALUE not in printed
        assert "key-abcdef" not in printed


# --- delete ------------------------------------------------------------------------------------


def test_given_a_secret_no_job_names_when_deleted_then_it_is_gone(
    api: HandlerApi, fakes: Fakes
) -> None:
    chronoq("secrets", "put", "crm-token", stdin=VALUE)

    assert chronoq("secrets", "delete", "crm-token").stdout == "deleted secret crm-token\n"
    assert json.loads(chronoq("secrets", "list", "-o", "json").stdout) == {"secrets": []}
    assert _stored(fakes, "crm-token") == []


def test_given_a_secret_jobs_name_when_deleted_then_refused_exit_1_and_every_job_listed(
    api: HandlerApi, fakes: Fakes
) -> None:
    chronoq("secrets", "put", "crm-token", stdin=VALUE)
    # more jobs than the API's message names (it names ten): error.jobs has them all
    ids = [
        fakes.jobs.create_job(USER, JobSpec.model_validate(_job(f"sync-{n}", "crm-token"))).id
        for n in range(12)
    ]

    refused = chronoq("secrets", "delete", "crm-token", code=1)

    assert refused.stderr.startswith("error: HTTP 409 conflict: secret crm-token is used by 12")
    listed = refused.stderr.split("the jobs naming crm-token:\n", 1)[1]
    assert listed.splitlines() == [f"  {job_id}" for job_id in sorted(ids)]
    assert _stored(fakes, "crm-token") == [VALUE]  # still there


def test_given_no_such_secret_when_deleted_then_exit_3(api: HandlerApi) -> None:
    result = chronoq("secrets", "delete", "nothing", code=3)

    assert "HTTP 404" in result.stderr
