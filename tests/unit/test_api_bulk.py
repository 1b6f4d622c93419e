"""Pausing and resuming many jobs at once (``POST /jobs/pause``, ``POST /jobs/resume`` with a label
selector) through the api function's handler, on the fakes: only the caller's matching jobs, a page
at a time with a token to go on, the jobs skipped and why, a selector required, each job paused or
resumed exactly as the single-job routes do it (docs/api/jobs.md, "Pausing many jobs at once")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain.audit import AuditEntry
from chronoq.domain.jobs import Job, JobState
from chronoq.fakes.audit import FakeAuditTrail

from tests.builders import Fakes, at, job_spec, seconds_from
from tests.unit.api_on_fakes import Api, api_on_fakes
from tests.unit.usecases.helpers import occurrences_of

EVERY_TEN = {"type": "cron", "expression": "*/10 * * * *"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(Fakes()) as api:
        yield api


def created(api: Api, user: str = "alice", **extra: Any) -> dict[str, Any]:
    extra.setdefault("schedule", EVERY_TEN)
    body = job_spec(**extra).model_dump(mode="json", exclude_defaults=True)
    status, job, _ = api.call("POST", "/jobs", user, body)
    assert status == 201, job
    api.fakes.clock.advance(1)  # (jobs listed in order of creation: each created later)
    return dict(job)


def stored(api: Api, job: dict[str, Any]) -> Job:
    return api.fakes.store.jobs[job["id"]]


def state(api: Api, job: dict[str, Any]) -> JobState:
    return stored(api, job).as_of(api.fakes.clock()).state


def entries(api: Api) -> list[AuditEntry]:
    trail = api.fakes.audit
    assert isinstance(trail, FakeAuditTrail)
    return list(trail.entries.values())


def test_given_jobs_of_two_owners_with_one_label_when_alice_pauses_by_it_then_only_her_matching_jobs_pause(
    api: Api,
) -> None:
    mine = [created(api, labels={"team": "data", "env": env}) for env in ("prod", "dev")]
    other_team = created(api, labels={"team": "web"})
    bobs = created(api, "bob", labels={"team": "data", "env": "prod"})
    before = stored(api, bobs)

    status, answer, _ = api.call("POST", "/jobs/pause?label=team=data", "alice")

    assert status == 200, answer
    assert [(j["id"], j["name"], j["state"]) for j in answer["paused"]] == [
        (j["id"], j["name"], "PAUSED") for j in mine
    ]
    assert (answer["skipped"], "next_token" in answer) == ([], False)
    assert [state(api, j) for j in mine] == [JobState.PAUSED] * 2
    assert state(api, other_team) is JobState.ACTIVE
    assert stored(api, bobs) == before  # (bob's job, same label: untouched, not even its version)

    status, answer, _ = api.call("POST", "/jobs/resume?label=team=data", "bob")

    assert (status, answer["resumed"], answer["skipped"][0]["reason"]) == (200, [], "not_paused")
    assert [state(api, j) for j in mine] == [JobState.PAUSED] * 2  # (bob resumed none of them)


def test_given_several_selectors_when_paused_then_only_the_jobs_carrying_every_label(
    api: Api,
) -> None:
    prod = created(api, labels={"team": "data", "env": "prod"})
    dev = created(api, labels={"team": "data", "env": "dev"})

    status, answer, _ = api.call("POST", "/jobs/pause?label=team%3Ddata&label=env%3Dprod")

    assert (status, [j["id"] for j in answer["paused"]]) == (200, [prod["id"]])
    assert (state(api, prod), state(api, dev)) == (JobState.PAUSED, JobState.ACTIVE)


def test_given_more_matching_jobs_than_a_page_when_paused_then_each_page_pauses_its_own_and_a_token_goes_on(
    api: Api,
) -> None:
    made = [created(api, labels={"team": "data"}) for _ in range(5)]
    for n in range(3):  # (others between them: a filtered page)
        created(api, labels={"team": "web", "n": str(n)})

    paused: list[str] = []
    pages = 0
    token: str | None = None
    while True:
        query = "/jobs/pause?label=team=data&limit=2" + (f"&next_token={token}" if token else "")
        status, answer, _ = api.call("POST", query)
        assert status == 200, answer
        assert len(answer["paused"]) <= 2
        paused += [j["id"] for j in answer["paused"]]
        pages += 1
        token = answer.get("next_token")
        if token is None:
            break

    assert paused == [j["id"] for j in made]  # (each once, in order of creation)
    assert pages == 3
    assert {j["id"]: state(api, j) for j in made} == dict.fromkeys(paused, JobState.PAUSED)


def test_given_a_page_token_when_used_by_another_owner_or_for_another_action_or_selector_then_422(
    api: Api,
) -> None:
    for _ in range(3):
        created(api, labels={"team": "data"})
    created(api, "bob", labels={"team": "data"})
    _, first, _ = api.call("POST", "/jobs/pause?label=team=data&limit=1")
    token = first["next_token"]

    for user, method, path in [
        ("bob", "POST", f"/jobs/pause?label=team=data&next_token={token}"),
        ("alice", "POST", f"/jobs/resume?label=team=data&next_token={token}"),
        ("alice", "POST", f"/jobs/pause?label=team=web&next_token={token}"),
        ("alice", "GET", f"/jobs?label=team=data&next_token={token}"),
    ]:
        status, refused, _ = api.call(method, path, user)
        assert (status, refused["error"]["field"]) == (422, "next_token"), (user, path)


def test_given_paused_and_completed_jobs_when_paused_then_they_are_skipped_each_with_its_reason(
    api: Api,
) -> None:
    active = created(api, labels={"team": "data"})
    paused = created(api, labels={"team": "data"})
    api.call("POST", f"/jobs/{paused['id']}/pause")
    once = created(api, labels={"team": "data"}, schedule=at(seconds_from(api.fakes.clock(), 60)))
    api.fakes.clock.advance(120)  # (its one fire time has passed: COMPLETED)
    audited = len(entries(api))

    status, answer, _ = api.call("POST", "/jobs/pause?label=team=data")

    assert status == 200, answer
    assert [j["id"] for j in answer["paused"]] == [active["id"]]
    assert [(j["id"], j["state"], j["reason"]) for j in answer["skipped"]] == [
        (paused["id"], "PAUSED", "already_paused"),
        (once["id"], "COMPLETED", "completed"),
    ]
    assert all(j["message"] for j in answer["skipped"])
    assert len(entries(api)) == audited + 1  # (one entry: the job paused; none for those skipped)


def test_given_a_bulk_pause_when_sent_again_then_nothing_changes_and_every_job_is_skipped(
    api: Api,
) -> None:
    made = [created(api, labels={"team": "data"}) for _ in range(2)]
    api.call("POST", "/jobs/pause?label=team=data", headers={"Idempotency-Key": "k-1"})
    after_first = ([stored(api, j) for j in made], len(entries(api)))

    status, again, _ = api.call(
        "POST", "/jobs/pause?label=team=data", headers={"Idempotency-Key": "k-1"}
    )

    assert (status, again["paused"]) == (200, [])
    assert [j["reason"] for j in again["skipped"]] == ["already_paused"] * 2
    assert ([stored(api, j) for j in made], len(entries(api))) == after_first


def test_given_paused_jobs_when_resumed_by_label_then_each_is_active_from_its_next_fire_time(
    api: Api,
) -> None:
    made = [created(api, labels={"team": "data"}) for _ in range(2)]
    active = created(api, labels={"team": "data"})
    for job in made:
        api.call("POST", f"/jobs/{job['id']}/pause")
    api.fakes.clock.advance(3600)  # (fire times fall in the pause: not made up)
    now = api.fakes.clock()

    status, answer, _ = api.call("POST", "/jobs/resume?label=team=data")

    assert status == 200, answer
    assert [(j["id"], j["state"]) for j in answer["resumed"]] == [(j["id"], "ACTIVE") for j in made]
    assert [(j["id"], j["reason"]) for j in answer["skipped"]] == [(active["id"], "not_paused")]
    for job in made:
        resumed = stored(api, job)
        assert resumed.next_run_at is not None
        assert now < resumed.next_run_at <= now + timedelta(minutes=10)
        # (one pending run, of its new generation, at its next fire time)
        pending = [o for o in occurrences_of(api.fakes, resumed) if o.scheduled_at > now]
        assert [(o.scheduled_at, o.generation) for o in pending] == [
            (resumed.next_run_at, resumed.generation)
        ]


def test_given_twin_jobs_when_one_is_paused_and_resumed_by_label_and_the_other_by_id_then_both_end_alike(
    api: Api,
) -> None:
    bulk = created(api, labels={"team": "data"})
    single = created(api)
    api.fakes.clock.advance(30)

    api.call("POST", "/jobs/pause?label=team=data")
    api.call("POST", f"/jobs/{single['id']}/pause")
    paused = (stored(api, bulk), stored(api, single))
    api.fakes.clock.advance(1800)
    api.call("POST", "/jobs/resume?label=team=data")
    api.call("POST", f"/jobs/{single['id']}/resume")
    resumed = (stored(api, bulk), stored(api, single))

    fields = ("state", "next_run_at", "version", "generation", "runs_before")
    for one, other in (paused, resumed):
        assert one.model_dump(include=set(fields)) == other.model_dump(include=set(fields))

    def index(job: Job) -> list[tuple[Any, ...]]:
        return [(o.scheduled_at, o.generation) for o in occurrences_of(api.fakes, job)]

    assert index(resumed[0]) == index(resumed[1])
    actions = [(e.job_id, e.action.value) for e in entries(api) if e.action.value != "create"]
    assert sorted(a for j, a in actions if j == bulk["id"]) == ["pause", "resume"]
    assert sorted(a for j, a in actions if j == single["id"]) == ["pause", "resume"]


def test_given_a_bulk_pause_when_audited_then_each_job_has_one_pause_entry_with_the_request_id(
    api: Api,
) -> None:
    made = [created(api, labels={"team": "data"}) for _ in range(2)]

    api.call("POST", "/jobs/pause?label=team=data", request_id="req-bulk")

    _, page, _ = api.call("GET", f"/jobs/{made[1]['id']}/audit")
    latest = page["entries"][0]
    assert (latest["action"], latest["request_id"], latest["by"]) == ("pause", "req-bulk", "alice")
    paused = [e for e in entries(api) if e.action.value == "pause"]
    assert sorted(e.job_id for e in paused) == sorted(j["id"] for j in made)


@pytest.mark.parametrize("route", ["/jobs/pause", "/jobs/resume"])
@pytest.mark.parametrize("query", ["", "?limit=5", "?label=team", "?label=bad%20key=x"])
def test_given_no_selector_or_a_bad_one_when_posted_then_422_names_label_and_nothing_changes(
    api: Api, route: str, query: str
) -> None:
    job = created(api, labels={"team": "data"})
    before = stored(api, job)

    status, refused, _ = api.call("POST", route + query)

    assert (status, refused["error"]["field"]) == (422, "label"), refused
    assert stored(api, job) == before


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/jobs/pause", (405, "method_not_allowed")),
        ("DELETE", "/jobs/pause", (405, "method_not_allowed")),
        ("PATCH", "/jobs/pause", (405, "method_not_allowed")),
        ("GET", "/jobs/resume?label=team=data", (405, "method_not_allowed")),
        ("POST", "/jobs/pause/pause", (404, "not_found")),
    ],
)
def test_given_the_bulk_paths_when_asked_with_another_method_then_a_json_refusal_and_nothing_changes(
    api: Api, method: str, path: str, expected: tuple[int, str]
) -> None:
    job = created(api, labels={"team": "data"})
    before = dict(api.fakes.store.jobs)

    status, answer, headers = api.call(method, path)

    assert (status, answer["error"]["code"]) == expected, answer
    assert headers.get("Content-Type") == "application/json"
    if status == 405:  # (the bulk paths are paths of their own: not a job's)
        assert headers.get("Allow") == "POST"
    assert api.fakes.store.jobs == before
    assert state(api, job) is JobState.ACTIVE


def test_given_no_caller_when_bulk_paused_then_401(api: Api) -> None:
    created(api, labels={"team": "data"})

    status, _, _ = api.call("POST", "/jobs/pause?label=team=data", user="")

    assert status == 401
