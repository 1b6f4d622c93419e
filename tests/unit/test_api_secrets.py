"""The secrets routes and what jobs may say about secrets, through the api function's handler
on the fakes: values are write-only, tenancy holds, names and placements are checked with 422
naming the field, a secret jobs name is not deleted (409 naming them), plain credentials get
a Warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from chronoq.domain import secrets
from chronoq.domain.limits import Limits

from tests.builders import Fakes
from tests.unit.api_on_fakes import Api, api_on_fakes

VALUE = "sk_live_" + "a1B2c3D4e5F6g7H8"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def job(target: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": extra.pop("name", "sync"),
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": target,
        **extra,
    }


def http(headers: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"type": "http", "url": "https://crm.example.com/sync", "headers": headers or {}, **more}


def test_given_a_secret_put_when_listed_and_its_job_read_then_no_answer_holds_its_value(
    api: Api,
) -> None:
    made = api.call("PUT", "/secrets/crm-token", body={"value": VALUE})
    again = api.call("PUT", "/secrets/crm-token", body={"value": VALUE + "x"})
    status, created, headers = api.call(
        "POST", "/jobs", body=job(http({"Authorization": "Bearer {{ secret.crm-token }}"}))
    )

    assert (made[0], made[1]["version"], again[0], again[1]["version"]) == (201, 1, 200, 2)
    assert status == 201, created
    assert "Warning" not in headers
    answers = [made, again, api.call("GET", "/secrets"), api.call("GET", f"/jobs/{created['id']}")]
    answers.append(api.call("GET", "/jobs"))
    assert VALUE not in json.dumps([a[1] for a in answers])
    assert api.call("GET", "/secrets")[1] == {"secrets": [again[1]]}
    shown = api.call("GET", f"/jobs/{created['id']}")[1]["target"]["headers"]
    assert shown == {"Authorization": "Bearer {{ secret.crm-token }}"}


def test_given_another_owners_secret_when_named_listed_or_deleted_then_it_is_not_found(
    api: Api,
) -> None:
    api.call("PUT", "/secrets/crm-token", user="bob", body={"value": VALUE})

    named = api.call("POST", "/jobs", body=job(http({"X-Key": {"secret": "crm-token"}})))

    assert named[0] == 422
    assert named[1]["error"]["field"] == "target.headers.X-Key"
    assert api.call("GET", "/secrets")[1] == {"secrets": []}
    assert api.call("DELETE", "/secrets/crm-token")[0] == 404
    assert [s["name"] for s in api.call("GET", "/secrets", user="bob")[1]["secrets"]] == [
        "crm-token"
    ]


def test_given_jobs_naming_a_secret_when_it_is_deleted_then_409_names_them(api: Api) -> None:
    api.call("PUT", "/secrets/k", body={"value": VALUE})
    first = api.call("POST", "/jobs", body=job(http({"X-K": {"secret": "k"}})))[1]
    second = api.call(
        "POST",
        "/jobs",
        body=job(
            http(),
            name="hooked",
            notify={
                "webhook": "https://hooks.example.com/x",
                "webhook_headers": {"X-K": "{{secret.k}}"},
            },
        ),
    )[1]

    status, refused, _ = api.call("DELETE", "/secrets/k")

    assert status == 409
    assert refused["error"]["code"] == "conflict"
    assert sorted(refused["error"]["jobs"]) == sorted([first["id"], second["id"]])
    assert api.call("DELETE", f"/jobs/{first['id']}")[0] == 204
    assert api.call("PATCH", f"/jobs/{second['id']}", body={"notify": None})[0] == 200
    assert api.call("DELETE", "/secrets/k")[0] == 204
    assert api.call("GET", "/secrets")[1] == {"secrets": []}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (job(http({"X-K": {"secret": "no such"}})), "target.headers.X-K"),
        (job(http({"X-K": {"secret": "k", "version": 1}})), "target.headers.X-K"),
        (job(http(url="https://{{ secret.k }}.example.com/")), "target.url"),
        (
            job(
                {
                    "type": "sqs",
                    "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
                    "message": "{{ secret.k }}",
                }
            ),
            "target.message",
        ),
        (
            job(
                {
                    "type": "container",
                    "image": "busybox",
                    "command": ["true"],
                    "environment": {"A": "x{{ secret.k }}"},
                }
            ),
            "target.environment",
        ),
        (job(http(), notify={"webhook_headers": {"X-K": {"secret": "k"}}}), "notify"),
        (
            job(http(), notify={"webhook": "https://h.example.com/?t={{secret.k}}"}),
            "notify.webhook",
        ),
    ],
)
def test_given_a_secret_where_none_may_sit_when_a_job_is_created_then_422_naming_the_field(
    api: Api, body: dict[str, Any], field: str
) -> None:
    api.call("PUT", "/secrets/k", body={"value": VALUE})

    status, refused, _ = api.call("POST", "/jobs", body=body)

    assert status == 422, refused
    assert refused["error"]["field"] == field, refused
    assert api.call("GET", "/jobs")[1]["jobs"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/secrets/bad%20name", {"value": VALUE}, "name"),
        ("/secrets/ok", {"value": "abc"}, "value"),
        ("/secrets/ok", {"value": VALUE, "version": 3}, "version"),
        ("/secrets/ok", {}, "value"),
    ],
)
def test_given_a_bad_secret_when_put_then_422_naming_the_field(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    status, refused, _ = api.call("PUT", path, body=body)

    assert status == 422, refused
    assert refused["error"]["field"] == field
    assert api.call("GET", "/secrets")[1] == {"secrets": []}


def test_given_plain_credentials_in_a_job_when_created_or_changed_then_a_warning_names_each_and_it_is_kept(
    api: Api,
) -> None:
    status, created, headers = api.call(
        "POST", "/jobs", body=job(http({"Authorization": "Bearer abc123", "X-Pay": VALUE}))
    )
    changed = api.call(
        "PATCH", f"/jobs/{created['id']}", body={"target": http({"Cookie": "session=1"})}
    )

    assert status == 201
    warning = headers["Warning"]
    assert warning.startswith('299 chronoq "')
    assert "target.headers.Authorization holds a plain credential" in warning
    assert "target.headers.X-Pay looks like a Stripe key" in warning
    assert "target.headers.Cookie holds a plain credential" in changed[2]["Warning"]
    assert "Warning" not in api.call("PATCH", f"/jobs/{created['id']}", body={"target": http()})[2]
    assert secrets.MASK not in warning


def test_given_an_owner_at_its_secrets_limit_when_another_is_put_then_422_names_the_limit_and_a_new_version_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with api_on_fakes(Fakes(limits=Limits(secrets_per_owner=1))) as api:
        assert api.call("PUT", "/secrets/a", body={"value": VALUE})[0] == 201

        status, refused, _ = api.call("PUT", "/secrets/b", body={"value": VALUE})

        assert status == 422, refused
        assert (refused["error"]["limit"], refused["error"]["field"]) == (
            "max_secrets_per_owner",
            "name",
        )
        assert api.call("PUT", "/secrets/a", body={"value": VALUE + "2"})[0] == 200
        assert api.call("PUT", "/secrets/b", user="bob", body={"value": VALUE})[0] == 201
        assert [s["name"] for s in api.call("GET", "/secrets")[1]["secrets"]] == ["a"]
