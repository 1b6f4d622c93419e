"""Jobs that name secrets, on the command line (against the api function's handler over the
fakes): ``chronoq jobs get``, ``apply`` and ``diff`` show references and placeholders as the
job holds them (never a value: no answer has one); ``apply`` and ``diff`` warn of credentials
written into the files, one line each, without failing, and ``apply`` passes on what the
API's ``Warning`` header names beyond that, once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli.client import Answer
from chronoq.domain import secrets

from tests.unit.cli_on_fakes import HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)

VALUES = {"crm-token": "tok-crm-5a4b3c2d1e", "signing-key": "key-sig-0f9e8d7c6b"}
HOURLY = {"type": "cron", "expression": "0 * * * *"}
WEBHOOK = {
    "webhook": "https://hooks.example.com/chronoq",
    "webhook_headers": {"X-Hook-Token": {"secret": "signing-key"}},
}
#: Jobs naming secrets in every place a target or a webhook takes one.
NAMING = [
    {
        "name": "crm-sync",
        "schedule": HOURLY,
        "target": {
            "type": "http",
            "url": "https://crm.example.com/sync?key={{ secret.crm-token }}",
            "headers": {
                "Authorization": {"secret": "crm-token"},
                "X-Signature": "Bearer {{ secret.signing-key }}",
            },
            "body": {"token": "{{ secret.crm-token }}"},
        },
        "notify": WEBHOOK,
    },
    {
        "name": "crm-task",
        "schedule": HOURLY,
        "target": {
            "type": "python",
            "task": "chronoq.tasks:echo",
            "args": {"auth": "Bearer {{ secret.crm-token }}"},
            "environment": {"CRM_TOKEN": {"secret": "crm-token"}, "MODE": "sync"},
        },
    },
    {
        "name": "crm-export",
        "schedule": HOURLY,
        "target": {
            "type": "container",
            "image": "alpine:3",
            "command": ["true"],
            "environment": {"CRM_TOKEN": {"secret": "crm-token"}},
        },
    },
]
PLAIN = {
    "name": "leaky",
    "schedule": HOURLY,
    "target": {
        "type": "http",
        "url": "https://crm.example.com/sync",
        "headers": {
            "Authorization": "Bearer abcdef123456",
            "X-Trace": "ghp_" + "a1B2c3D4" * 5,
            "X-Plain": "not a credential",
        },
    },
}
#: What the domain finds in PLAIN (the API's Warning names the same).
PLAIN_FINDINGS = [
    "target.headers.Authorization holds a plain credential",
    "target.headers.X-Trace looks like a GitHub token",
]


def _with_secrets() -> None:
    for name, value in VALUES.items():
        chronoq("secrets", "put", name, stdin=value)


def _shown_nowhere(*printed: str) -> None:
    for text in printed:
        for value in VALUES.values():
            assert value not in text


def _files(tmp_path: Path, jobs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(jobs))
    return path


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


# --- shown as they are ----------------------------------------------------------------------


def test_given_jobs_naming_secrets_when_applied_and_read_then_references_and_placeholders_show_as_they_are(
    api: HandlerApi, tmp_path: Path
) -> None:
    _with_secrets()
    files = _files(tmp_path, NAMING)

    applied = chronoq("apply", "-f", str(files))
    ids = {line.split()[1]: line.split()[2] for line in applied.stdout.splitlines()[:3]}
    sync = chronoq("jobs", "get", ids["crm-sync"]).stdout
    task = chronoq("jobs", "get", ids["crm-task"]).stdout
    export = chronoq("jobs", "get", ids["crm-export"]).stdout
    as_json = json.loads(chronoq("jobs", "get", ids["crm-sync"], "-o", "json").stdout)

    assert _warnings(applied.stderr) == []
    assert re.search(r'^headers\s+Authorization: \{"secret": "crm-token"\}$', sync, re.M), sync
    assert re.search(r"^\s+X-Signature: Bearer \{\{ secret.signing-key \}\}$", sync, re.M)
    assert "https://crm.example.com/sync?key={{ secret.crm-token }}" in sync
    assert re.search(r"-> https://hooks.example.com/chronoq$", sync, re.M), sync
    assert re.search(
        r'^webhook headers\s+X-Hook-Token: \{"secret": "signing-key"\}$', sync, re.M
    ), sync
    assert re.search(r'^environment\s+CRM_TOKEN: \{"secret": "crm-token"\}$', task, re.M), task
    assert re.search(r"^\s+MODE: sync$", task, re.M), task
    assert re.search(r'^environment\s+CRM_TOKEN: \{"secret": "crm-token"\}$', export, re.M)
    assert "'secret'" not in sync + task + export  # (never Python's repr of a reference)
    assert as_json["target"]["headers"] == NAMING[0]["target"]["headers"]  # type: ignore[index]
    assert as_json["notify"]["webhook_headers"] == WEBHOOK["webhook_headers"]
    _shown_nowhere(applied.output, sync, task, export, json.dumps(as_json))


def test_given_applied_jobs_naming_secrets_when_applied_again_then_nothing_changes(
    api: HandlerApi, tmp_path: Path
) -> None:
    _with_secrets()
    files = _files(tmp_path, NAMING)
    chronoq("apply", "-f", str(files))
    api.sent.clear()

    again = chronoq("apply", "-f", str(files))

    assert again.stdout.splitlines()[-1] == "apply: 0 created, 0 updated, 3 unchanged, 0 deleted"
    assert [s.method for s in api.sent] == ["GET"]  # the listing; nothing patched
    assert chronoq("diff", "-f", str(files)).stdout.strip().endswith("3 unchanged, 0 to delete")


def test_given_a_file_naming_another_secret_when_diffed_then_the_references_show_in_the_diff(
    api: HandlerApi, tmp_path: Path
) -> None:
    _with_secrets()
    files = _files(tmp_path, NAMING[:1])
    chronoq("apply", "-f", str(files))
    changed = json.loads(json.dumps(NAMING[:1]))
    changed[0]["target"]["headers"]["Authorization"] = {"secret": "signing-key"}
    changed[0]["target"]["headers"]["X-Signature"] = "Bearer {{ secret.crm-token }}"
    files.write_text(json.dumps(changed))

    result = chronoq("diff", "-f", str(files), code=5)

    out = result.stdout
    assert re.search(r'^\s+"Authorization": \{$', out, re.M), out  # (the same: context)
    assert re.search(r'^\s+-\s+"secret": "crm-token"$', out, re.M), out
    assert re.search(r'^\s+\+\s+"secret": "signing-key"$', out, re.M), out
    assert '-      "X-Signature": "Bearer {{ secret.signing-key }}"' in out
    assert '+      "X-Signature": "Bearer {{ secret.crm-token }}"' in out
    assert _warnings(result.stderr) == []
    _shown_nowhere(result.output)


# --- plain credentials -----------------------------------------------------------------------


def test_given_a_file_with_plain_credentials_when_diffed_or_applied_then_one_warning_each_and_no_failure(
    api: HandlerApi, tmp_path: Path
) -> None:
    files = _files(tmp_path, [PLAIN])

    diffed = chronoq("diff", "-f", str(files), code=5)  # (would create: not a failure)
    applied = chronoq("apply", "-f", str(files))
    again = chronoq("diff", "-f", str(files))  # unchanged: still warned of

    assert applied.stdout.splitlines()[-1].startswith("apply: 1 created")
    for result in (diffed, applied, again):
        warned = _warnings(result.stderr)
        assert len(warned) == len(PLAIN_FINDINGS), result.stderr
        for line, finding in zip(warned, PLAIN_FINDINGS, strict=True):
            assert line.startswith(f"warning: leaky ({files}): {finding}; "), line
            assert "chronoq secrets put NAME" in line
        assert "X-Plain" not in result.stderr


class _NewerApi(HandlerApi):
    """An API whose ``Warning`` names one more finding than this command line's check."""

    EXTRA = "target.headers.X-Trace looks like a token of a kind found later"

    def send(self, method: str, path: str, body: Any = None, *args: Any, **kw: Any) -> Answer:
        answer = super().send(method, path, body, *args, **kw)
        if not ((method, path) == ("POST", "/jobs") or method == "PATCH"):
            return answer
        found = [*PLAIN_FINDINGS, self.EXTRA]
        header = secrets.warning_header(found)
        assert header is not None
        return Answer(answer.status, answer.body, {**answer.headers, "warning": header})


def test_given_the_apis_warning_names_more_than_the_files_check_when_applied_then_that_is_warned_once_too(
    api: HandlerApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newer = _NewerApi(api.handler)
    monkeypatch.setattr("chronoq.cli.common.connect", lambda *_: newer)
    files = _files(tmp_path, [PLAIN])

    created = chronoq("apply", "-f", str(files))
    files.write_text(json.dumps([{**PLAIN, "priority": "high"}]))
    updated = chronoq("apply", "-f", str(files))

    for result in (created, updated):
        warned = _warnings(result.stderr)
        assert [w.split("; ")[0] for w in warned] == [
            f"warning: leaky ({files}): {f}" for f in [*PLAIN_FINDINGS, _NewerApi.EXTRA]
        ]


def test_given_the_apis_warning_when_a_job_is_created_or_changed_with_flags_then_it_is_passed_on(
    api: HandlerApi,
) -> None:
    created = chronoq(
        "jobs",
        "create",
        "--name",
        "leaky",
        "--cron",
        "0 * * * *",
        "--http",
        "https://crm.example.com/sync",
        "--header",
        "Authorization: Bearer abcdef123456",
        "-o",
        "json",
    )
    job_id = json.loads(created.stdout)["id"]
    url = "https://crm.example.com/sync"
    updated = chronoq("jobs", "update", job_id, "--http", url, "--header", "X-Api-Key: k-1234567")
    fixed = chronoq("jobs", "update", job_id, "--http", url, "--header", "X-Trace: abc")

    assert _warnings(created.stderr) == [
        "warning: target.headers.Authorization holds a plain credential; "
        + created.stderr.split("; ", 1)[1].splitlines()[0]
    ]
    assert "chronoq secrets put NAME" in created.stderr
    assert [w.split(";")[0] for w in _warnings(updated.stderr)] == [
        "warning: target.headers.X-Api-Key holds a plain credential"
    ]
    assert _warnings(fixed.stderr) == []
