"""Completion triggers through the api function's handler on the fakes: an ``after`` job made
with its upstreams by name, shown with them (and they with it), refused with 422 naming
``schedule.jobs`` (unknown names, another owner's jobs, cycles); preview says what it follows;
a run shows the runs it triggered."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from chronoq.domain import ids
from chronoq.domain.runs import RunStatus, Trigger
from chronoq.usecases.timeindex import new_run

from tests.builders import job_spec
from tests.unit.api_on_fakes import Api, api_on_fakes

YEARLY = {"type": "cron", "expression": "0 0 1 1 *"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def made(api: Api, name: str, schedule: dict[str, Any], user: str = "alice") -> tuple[int, Any]:
    spec = job_spec(YEARLY, name=name).model_dump(mode="json")
    status, body, _ = api.call("POST", "/jobs", user, {**spec, "schedule": schedule})
    return status, body


def test_given_upstreams_by_name_when_an_after_job_is_made_then_both_sides_show_the_link(
    api: Api,
) -> None:
    _, extract = made(api, "extract", YEARLY)
    _, clean = made(api, "clean", YEARLY)

    status, load = made(api, "load", {"type": "after", "jobs": ["extract", "clean"]})

    assert status == 201, load
    assert load["schedule"] == {
        "type": "after",
        "jobs": [extract["id"], clean["id"]],
        "on": "SUCCEEDED",
        "within_seconds": 86400,
    }
    assert load["next_run_at"] is None
    _, shown, _ = api.call("GET", f"/jobs/{load['id']}")
    assert [u["name"] for u in shown["upstreams"]] == ["extract", "clean"]
    assert "followed_by" not in shown
    _, up, _ = api.call("GET", f"/jobs/{extract['id']}")
    assert up["downstreams"] == [{"id": load["id"], "name": "load", "state": "ACTIVE"}]
    assert "upstreams" not in up


@pytest.mark.parametrize("given", ["nosuch", "bobs"])
def test_given_an_unknown_or_another_owners_upstream_then_422_names_schedule_jobs(
    api: Api, given: str
) -> None:
    made(api, "bobs", YEARLY, user="bob")
    status, body = made(api, "load", {"type": "after", "jobs": [given]})
    assert status == 422, body
    assert "schedule.jobs" in str(body)


def test_given_a_change_closing_a_cycle_then_422_names_schedule_jobs(api: Api) -> None:
    _, a = made(api, "a", YEARLY)
    made(api, "b", {"type": "after", "jobs": ["a"]})
    status, body, _ = api.call(
        "PATCH", f"/jobs/{a['id']}", "alice", {"schedule": {"type": "after", "jobs": ["b"]}}
    )
    assert status == 422, body
    assert "schedule.jobs" in str(body)
    assert "cycle" in str(body)


def test_given_an_after_schedule_when_previewed_then_it_says_what_it_follows(api: Api) -> None:
    status, body, _ = api.call(
        "POST",
        "/schedules/preview",
        "alice",
        {"schedule": {"type": "after", "jobs": ["extract", "clean"]}},
    )
    assert status == 200, body
    assert body == {"fire_times": [], "description": "after extract and clean"}


def test_given_an_upstream_run_that_triggered_one_when_read_then_it_lists_it(api: Api) -> None:
    _, extract = made(api, "extract", YEARLY)
    _, load = made(api, "load", {"type": "after", "jobs": ["extract"]})
    fakes = api.fakes
    job = fakes.store.get_job(extract["id"])
    assert job is not None
    at = datetime.fromisoformat("2026-11-26T06:00:00+00:00")
    run = new_run(job, ids.run_id(job.id, at), at, Trigger.SCHEDULE)
    fakes.store.create_run(run, fakes.clock())
    (made_run,) = fakes.pipelines.upstream_ended(
        run.model_copy(update={"status": RunStatus.SUCCEEDED}), [load["id"]]
    )

    _, upstream_run, _ = api.call("GET", f"/runs/{run.id}")
    _, downstream_run, _ = api.call("GET", f"/runs/{made_run}")

    assert upstream_run["triggered"] == [made_run]
    assert downstream_run["trigger"] == "after"
    assert downstream_run["triggered_by"] == [run.id]
    assert downstream_run["scheduled_at"] == "2026-11-26T06:00:00Z"


def test_given_a_rerun_asking_to_cascade_then_the_run_cascades_and_a_bad_flag_is_refused(
    api: Api,
) -> None:
    _, extract = made(api, "extract", YEARLY)
    fakes = api.fakes
    job = fakes.store.get_job(extract["id"])
    assert job is not None
    at = datetime.fromisoformat("2026-11-26T06:00:00+00:00")
    run = new_run(job, ids.run_id(job.id, at), at, Trigger.SCHEDULE)
    fakes.store.create_run(run, fakes.clock())
    fakes.store.end_run(run, RunStatus.FAILED, fakes.clock(), "", [RunStatus.SCHEDULED])

    status, plain, _ = api.call("POST", f"/runs/{run.id}/rerun")
    assert status == 202, plain
    status, cascading, _ = api.call("POST", f"/runs/{run.id}/rerun", "alice", {"cascade": True})
    assert status == 202, cascading
    status, refused, _ = api.call("POST", f"/runs/{run.id}/rerun", "alice", {"cascade": "yes"})

    assert "cascade" not in plain or plain["cascade"] is False
    assert cascading["cascade"] is True
    assert status == 422, refused
    assert "cascade" in str(refused)
