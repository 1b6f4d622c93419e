"""Silence through the api function's handler on the fakes (tests/unit/api_on_fakes.py): a job's
``expect`` taken, shown, changed and refused (422 naming the field); GET /jobs?silent=true
lists the caller's silent jobs only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain import limits as lim

from tests.builders import job_spec
from tests.unit.api_on_fakes import Api, api_on_fakes

HOUR = 3600


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def a_job(api: Api, user: str = "alice", **extra: Any) -> dict[str, Any]:
    spec = job_spec({"type": "cron", "expression": "0 0 1 1 *"}, **extra)
    status, job, _ = api.call("POST", "/jobs", user, spec.model_dump(mode="json"))
    assert status == 201, job
    return dict(job)


def pass_time(api: Api, seconds: float) -> None:
    """Let ``seconds`` go by, the dispatcher ticking once a minute."""
    fakes = api.fakes
    end = fakes.clock() + timedelta(seconds=seconds)
    while fakes.clock() < end:
        fakes.clock.advance(60)
        fakes.dispatcher.dispatch()


def test_given_a_job_with_expect_when_created_read_and_listed_then_it_shows_its_silence(
    api: Api,
) -> None:
    job = a_job(api, expect={"success_within_seconds": HOUR})

    assert job["expect"] == {"success_within_seconds": HOUR}
    assert (job["last_success_at"], job["silent_since"]) == (None, None)
    pass_time(api, HOUR + 3 * 60)
    status, read, _ = api.call("GET", f"/jobs/{job['id']}")
    assert status == 200
    assert read["silent_since"] is not None
    assert read["last_success_at"] is None
    status, page, _ = api.call("GET", "/jobs")
    assert [j["silent_since"] for j in page["jobs"]] == [read["silent_since"]]


def test_given_silent_jobs_of_two_owners_when_each_lists_silent_jobs_then_each_sees_only_theirs(
    api: Api,
) -> None:
    mine = a_job(api, expect={"success_within_seconds": HOUR})
    a_job(api)  # no expect: never silent
    theirs = a_job(api, "bob", expect={"success_within_seconds": HOUR})
    a_job(api, "bob", expect={"success_within_seconds": 10 * HOUR})  # not silent yet
    pass_time(api, HOUR + 3 * 60)

    status, alices, _ = api.call("GET", "/jobs?silent=true")
    _, bobs, _ = api.call("GET", "/jobs?silent=true", "bob")
    _, everything, _ = api.call("GET", "/jobs?silent=false")

    assert status == 200
    assert [j["id"] for j in alices["jobs"]] == [mine["id"]]
    assert [j["id"] for j in bobs["jobs"]] == [theirs["id"]]
    assert all(j["silent_since"] for j in alices["jobs"] + bobs["jobs"])
    assert len(everything["jobs"]) == 2
    _, none, _ = api.call("GET", "/jobs?silent=true", "carol")
    assert none == {"jobs": []}


def test_given_a_page_of_silent_jobs_when_more_follow_then_the_token_reads_the_rest(
    api: Api,
) -> None:
    made = [a_job(api, expect={"success_within_seconds": HOUR})["id"] for _ in range(3)]
    pass_time(api, HOUR + 3 * 60)

    _, first, _ = api.call("GET", "/jobs?silent=true&limit=2")
    _, rest, _ = api.call("GET", f"/jobs?silent=true&limit=2&next_token={first['next_token']}")
    status, wrong, _ = api.call("GET", f"/jobs?limit=2&next_token={first['next_token']}")

    assert sorted(j["id"] for j in first["jobs"] + rest["jobs"]) == sorted(made)
    assert "next_token" not in rest
    assert (status, wrong["error"]["field"]) == (422, "next_token")  # another listing's


@pytest.mark.parametrize(
    "expect",
    [
        {"success_within_seconds": 59},
        {"success_within_seconds": lim.MAX_SUCCESS_WITHIN_SECONDS + 1},
        {"success_within_seconds": "3600"},
        {"success_within_seconds": 3600.5},
        {},
        {"success_within_seconds": 3600, "other": 1},
    ],
)
def test_given_a_bad_expect_when_created_or_changed_then_422_names_the_field(
    api: Api, expect: dict[str, Any]
) -> None:
    spec = job_spec({"type": "cron", "expression": "0 0 1 1 *"}).model_dump(mode="json")
    job = a_job(api)

    created = api.call("POST", "/jobs", "alice", {**spec, "name": "bad", "expect": expect})
    changed = api.call("PATCH", f"/jobs/{job['id']}", "alice", {"expect": expect})

    for status, body, _ in (created, changed):
        assert status == 422, body
        assert body["error"]["field"].startswith("expect"), body
        if expect and "other" not in expect:
            assert body["error"]["field"] == "expect.success_within_seconds"


def test_given_a_job_when_expect_is_set_changed_and_removed_then_each_answer_shows_it(
    api: Api,
) -> None:
    job = a_job(api)
    path = f"/jobs/{job['id']}"

    _, set_, _ = api.call("PATCH", path, "alice", {"expect": {"success_within_seconds": HOUR}})
    _, changed, _ = api.call(
        "PATCH", path, "alice", {"expect": {"success_within_seconds": 2 * HOUR}}
    )
    _, removed, _ = api.call("PATCH", path, "alice", {"expect": None})

    assert set_["expect"] == {"success_within_seconds": HOUR}
    assert changed["expect"] == {"success_within_seconds": 2 * HOUR}
    assert removed["expect"] is None
    assert api.fakes.store.get_expectation(job["id"]) is None
