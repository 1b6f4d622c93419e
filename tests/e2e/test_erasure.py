"""Erasing an owner on chronoq local, as an operator does it (``chronoq admin erase``, which
locally asks chronoq local's own control with an admin token): the owner's jobs and secrets are
gone over HTTP, another user's are not, and a user token may not erase."""

from __future__ import annotations

from tests.e2e.harness import ADMIN, Local


def test_given_an_owner_with_a_job_and_a_secret_when_an_admin_erases_them_then_they_are_gone_and_others_stay(
    local: Local,
) -> None:
    for user in ("erasee", "keeper"):
        body = {
            "name": "nightly",
            "schedule": {"type": "cron", "expression": "0 3 * * *"},
            "target": {"type": "http", "url": "https://example.com/nightly"},
        }
        assert local.call("POST", "/jobs", user=user, body=body)[0] == 201
        assert local.call("PUT", "/secrets/token", user=user, body={"value": "t0ken"})[0] == 201

    refused, _ = local.call("POST", "/_local/erase?owner=erasee", user="erasee")
    answer = local.control("erase?owner=erasee&by=ops")

    assert refused == 403  # a user's token: chronoq local's controls need an admin token
    assert answer["counts"]["jobs"] == 1
    assert answer["counts"]["secrets"] == 1
    assert answer["counts"]["audit_entries"] == 1  # the job's creation
    assert local.call("GET", "/jobs", user="erasee")[1]["jobs"] == []
    assert local.call("GET", "/secrets", user="erasee")[1]["secrets"] == []
    assert [j["name"] for j in local.call("GET", "/jobs", user="keeper")[1]["jobs"]] == ["nightly"]
    assert len(local.call("GET", "/secrets", user="keeper")[1]["secrets"]) == 1
    bad, error = local.call("POST", "/_local/erase", user=ADMIN)
    assert bad == 400
    assert "owner" in str(error)
