"""Each owner's limits on backfills and re-runs, through the api function's handler on the
fakes (tests/unit/api_on_fakes.py): backfills running at once per job and per owner, and fire
times queued by backfills and re-runs, refused with 429 and a Retry-After while what the
owner holds is in the way, or 422 naming the limit when the request could never fit; another
owner is never refused for what one holds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain import inflight
from chronoq.domain import limits as lim
from chronoq.domain.limits import Limits
from chronoq.domain.runs import RunStatus

from tests.builders import Fakes, job_spec
from tests.unit.api_on_fakes import Api, api_on_fakes

#: Small limits, to reach them: one backfill per job, two per owner, ten fire times queued.
LIMITS = Limits(
    running_backfills_per_job=1, running_backfills_per_owner=2, queued_runs_per_owner=10
)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(Fakes(limits=LIMITS)) as api:
        yield api


def a_job(api: Api, user: str = "alice") -> str:
    spec = job_spec({"type": "cron", "expression": "*/10 * * * *"})
    status, job, _ = api.call("POST", "/jobs", user, spec.model_dump(mode="json"))
    assert status == 201, job
    return str(job["id"])


def backfill(
    api: Api, job_id: str, hours: float, user: str = "alice"
) -> tuple[int, Any, dict[str, str]]:
    """POST a backfill of the last ``hours`` of a ten-minute schedule (6 fire times an hour)."""
    now = api.fakes.clock()
    body = {"from": (now - timedelta(hours=hours)).isoformat(), "to": now.isoformat()}
    return api.call("POST", f"/jobs/{job_id}/backfill", user, body)


def refused(answer: tuple[int, Any, dict[str, str]], status: int, limit: str) -> dict[str, Any]:
    code, body, headers = answer
    assert code == status, body
    assert (body["error"]["code"], body["error"]["limit"]) == ("limit_exceeded", limit)
    assert limit in body["error"]["message"]
    if status == 429:
        assert headers["Retry-After"] == str(lim.LIMIT_RETRY_AFTER_SECONDS)
    else:
        assert "Retry-After" not in headers
    return dict(body["error"])


def test_given_a_job_with_a_backfill_running_when_another_is_asked_for_then_429_until_it_ends(
    api: Api,
) -> None:
    job = a_job(api)
    status, first, _ = backfill(api, job, 1)
    assert status == 202, first

    refused(backfill(api, job, 0.5), 429, "max_running_backfills_per_job")

    assert len(api.fakes.store.backfills) == 1  # nothing kept of the refused one
    status, _, _ = api.call("POST", f"/jobs/{job}/backfills/{first['id']}/cancel")
    assert status == 200
    assert backfill(api, job, 0.5)[0] == 202


def test_given_an_owner_with_backfills_running_on_two_jobs_when_a_third_is_asked_for_then_429_and_other_owners_go_on(
    api: Api,
) -> None:
    for _ in range(2):
        assert backfill(api, a_job(api), 0.5)[0] == 202

    refused(backfill(api, a_job(api), 0.5), 429, "max_running_backfills_per_owner")

    assert backfill(api, a_job(api, "bob"), 0.5, "bob")[0] == 202


def test_given_an_owners_backfills_holding_fire_times_when_more_would_pass_the_limit_then_429_until_their_runs_end(
    api: Api,
) -> None:
    first_job, second_job = a_job(api), a_job(api)
    status, first, _ = backfill(api, first_job, 1)  # 6 of 10
    assert status == 202

    refused(backfill(api, second_job, 1), 429, "max_queued_runs_per_owner")  # 6 more: 12

    for (_, run_id), run in list(api.fakes.store.runs.items()):
        if run.backfill_id == first["id"]:
            api.fakes.store.update_run(first_job, run_id, status=RunStatus.SUCCEEDED)
    assert api.fakes.count_run_ends() == 6  # (as the notifier hears of their ends)
    status, done, _ = api.call("GET", f"/jobs/{first_job}/backfills/{first['id']}")
    assert (status, done["state"], done["ended"]) == (200, "COMPLETED", 6)
    assert backfill(api, second_job, 1)[0] == 202


def test_given_a_backfill_larger_than_the_queued_limit_when_asked_for_then_422_names_the_limit_and_to(
    api: Api,
) -> None:
    error = refused(backfill(api, a_job(api), 2), 422, "max_queued_runs_per_owner")  # 12

    assert error["field"] == "to"
    assert api.fakes.store.backfills == {}


def test_given_fire_times_queued_when_a_run_is_rerun_past_the_limit_then_429_and_a_range_that_never_fits_422(
    api: Api,
) -> None:
    job = a_job(api)
    status, run, _ = api.call("POST", f"/jobs/{job}/trigger")
    assert status == 202
    api.fakes.store.update_run(job, run["id"], status=RunStatus.FAILED)
    assert backfill(api, a_job(api), 1)[0] == 202  # 6 of 10
    for _ in range(4):
        assert api.call("POST", f"/runs/{run['id']}/rerun")[0] == 202  # 10 of 10

    refused(api.call("POST", f"/runs/{run['id']}/rerun"), 429, "max_queued_runs_per_owner")

    for (_, run_id), rerun in list(api.fakes.store.runs.items()):
        if rerun.rerun_of:
            api.fakes.store.update_run(job, run_id, status=RunStatus.FAILED)
    api.fakes.count_run_ends()
    assert api.call("POST", f"/runs/{run['id']}/rerun")[0] == 202
    # a range of more failed runs than the limit could ever hold
    now = api.fakes.clock()
    for minutes in range(11):
        other = api.fakes.store.runs[(job, run["id"])].model_copy(
            update={"id": f"{run['id']}x{minutes:02d}"}
        )
        api.fakes.store.create_run(other, now)
    body = {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(minutes=1)).isoformat(),
    }
    error = refused(
        api.call("POST", f"/jobs/{job}/rerun", body=body), 422, "max_queued_runs_per_owner"
    )
    assert error["field"] == "to"


def test_given_a_job_with_triggers_not_started_when_one_more_is_asked_for_then_429_until_one_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with api_on_fakes(Fakes(limits=Limits(waiting_triggers_per_job=2))) as api:
        job = a_job(api)
        other = a_job(api)
        for _ in range(2):
            assert api.call("POST", f"/jobs/{job}/trigger")[0] == 202

        code, body, headers = api.call("POST", f"/jobs/{job}/trigger")

        assert code == 429, body
        assert (body["error"]["code"], body["error"]["limit"]) == (
            "limit_exceeded",
            "max_waiting_triggers_per_job",
        )
        assert headers["Retry-After"] == str(lim.TRIGGER_RETRY_AFTER_SECONDS)
        assert api.call("POST", f"/jobs/{other}/trigger")[0] == 202  # another job goes on
        manual = [run for run in api.fakes.store.runs.values() if run.job_id == job]
        assert len(manual) == 2  # nothing kept of the refused one
        api.fakes.store.update_run(job, manual[0].id, status=RunStatus.RUNNING)  # one starts
        assert api.call("POST", f"/jobs/{job}/trigger")[0] == 202


def test_given_an_owner_when_it_asks_for_its_limits_then_each_shows_with_what_it_uses(
    api: Api,
) -> None:
    job = a_job(api)
    a_job(api, "bob")
    assert backfill(api, job, 1)[0] == 202
    assert api.call("POST", f"/jobs/{job}/trigger")[0] == 202
    assert api.call("PUT", "/secrets/token", body={"value": "t0ken"})[0] == 201
    assert api.call("PUT", "/secrets/other", user="bob", body={"value": "t0ken"})[0] == 201
    assert api.call("PUT", "/calendars/holidays", body={"dates": ["2026-12-25"]})[0] == 201
    # three of alice's runs counted in flight, one of them by a worker long gone (its
    # bucket past its worst-case end), and one of bob's
    store, now = api.fakes.store, api.fakes.clock()
    long_ago = now - timedelta(hours=2)
    buckets = {inflight.end_bucket(now, 60): 2, inflight.end_bucket(long_ago, 60): 1}
    assert store.take_in_flight(inflight.item_key("alice"), buckets, 10, now) is not None
    assert store.take_in_flight(inflight.item_key("bob"), {"b1": 1}, 10, now) is not None

    status, limits, _ = api.call("GET", "/limits")

    assert status == 200, limits
    assert limits == {
        "owner": "alice",
        "jobs": {"limit": lim.DEFAULT_MAX_JOBS_PER_OWNER, "used": 1},
        "running_backfills_per_owner": {"limit": 2, "used": 1},
        "running_backfills_per_job": {"limit": 1, "used": {job: 1}},
        "queued_runs_per_owner": {"limit": 10, "used": 6},
        "asked_runs_in_flight": {"limit": lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT, "used": 0},
        "runs_in_flight": {"limit": lim.DEFAULT_MAX_RUNS_IN_FLIGHT, "used": 2},
        "waiting_triggers_per_job": {"limit": lim.DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB},
        "secrets_per_owner": {"limit": lim.DEFAULT_MAX_SECRETS_PER_OWNER, "used": 1},
        "calendars_per_owner": {"limit": lim.DEFAULT_MAX_CALENDARS_PER_OWNER, "used": 1},
    }
