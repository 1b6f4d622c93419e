"""The console's words for what names secrets (console/assets/console/secrets.js), run here in
Node: a reference reads ``secret: NAME``, a placeholder as it is, never ``[object Object]``;
a refused delete's jobs are read from the 409's ``error.jobs``. (tests/browser/
test_console_secrets.py shows them on a job's page and drives the Secrets page.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronoq import console

from tests.support import run_node

MODULE = (console.ASSETS_DIR / "console" / "secrets.js").as_uri()

#: A job naming secrets wherever one may be named, as the API answers it.
JOB = {
    "target": {
        "type": "http",
        "url": "https://crm.example.com/sync?key={{ secret.crm-token }}",
        "headers": {
            "Authorization": {"secret": "crm-token"},
            "X-Signature": "Bearer {{ secret.signing-key }}",
        },
    },
    "notify": {
        "on": ["FAILED"],
        "webhook": "https://hooks.example.com/chronoq",
        "email": None,
        "webhook_headers": {"X-Hook-Token": {"secret": "signing-key"}},
    },
}


def _node(expression: str) -> Any:
    """What ``expression`` (with the module as ``secrets``) is, through JSON."""
    script = (
        f"import * as secrets from {json.dumps(MODULE)};\n"
        f"console.log(JSON.stringify(await (async () => ({expression}))()));"
    )
    return run_node(script)


def test_given_a_job_naming_secrets_when_its_rows_are_made_then_references_read_secret_name_and_placeholders_as_they_are() -> (
    None
):
    rows = _node(f"secrets.secretRows({json.dumps(JOB)})")

    assert rows == [
        [
            "headers",
            "target-headers",
            ["Authorization: secret: crm-token", "X-Signature: Bearer {{ secret.signing-key }}"],
        ],
        ["environment", "target-environment", []],
        ["webhook headers", "webhook-headers", ["X-Hook-Token: secret: signing-key"]],
    ]
    assert "[object Object]" not in json.dumps(rows)


def test_given_a_task_or_container_environment_when_its_rows_are_made_then_each_variable_is_a_line() -> (
    None
):
    job = {
        "target": {
            "type": "python",
            "task": "chronoq.tasks:echo",
            "environment": {"CRM_TOKEN": {"secret": "crm-token"}, "MODE": "sync"},
        },
        "notify": None,
    }

    rows = _node(f"secrets.secretRows({json.dumps(job)})")

    assert rows[1] == [
        "environment",
        "target-environment",
        ["CRM_TOKEN: secret: crm-token", "MODE: sync"],
    ]
    assert rows[0][2] == rows[2][2] == []


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"secret": "crm-token"}, "secret: crm-token"),
        ("Bearer {{ secret.crm-token }}", "Bearer {{ secret.crm-token }}"),
        ({"secret": "x", "other": 1}, '{"secret":"x","other":1}'),  # not a reference
        (["a"], '["a"]'),
    ],
)
def test_given_a_value_when_shown_then_a_reference_is_its_name_and_anything_else_its_text(
    value: Any, text: str
) -> None:
    assert _node(f"secrets.valueText({json.dumps(value)})") == text


def test_given_notifications_when_shown_then_the_statuses_and_where_they_go() -> None:
    assert _node(f"secrets.notifyText({json.dumps(JOB['notify'])})") == (
        "FAILED -> https://hooks.example.com/chronoq"
    )
    assert _node("secrets.notifyText(null)") == ""


def test_given_a_refused_delete_when_read_then_the_jobs_of_a_409_and_none_otherwise() -> None:
    assert _node('secrets.jobsNaming({ status: 409, jobs: ["job_a", "job_b"] })') == [
        "job_a",
        "job_b",
    ]
    assert _node('secrets.jobsNaming({ status: 404, jobs: ["job_a"] })') == []
    assert _node("secrets.jobsNaming({ status: 409, jobs: null })") == []


def test_given_the_console_when_its_secrets_module_is_asked_then_it_is_served() -> None:
    status, headers, body = console.asset("console/secrets.js")

    assert status == 200
    assert headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert b"export function secretRows" in body
