"""The heartbeat job: created once, idempotently, owned by nobody a token can be, dispatched
every minute like any job; and what its last runs say (ok, late, missing)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from chronoq import heartbeat
from chronoq import resources as r
from chronoq.domain.runs import RunStatus, Trigger
from chronoq.usecases.timeindex import new_run

from tests.builders import Fakes


def test_given_no_heartbeat_when_ensured_then_a_job_of_the_system_owner_runs_every_minute() -> None:
    fakes = Fakes()

    answer = heartbeat.ensure(fakes.store, fakes.index, fakes.clock())
    fakes.clock.advance(60)
    fakes.dispatcher.dispatch()

    job = fakes.store.get_job(r.HEARTBEAT_JOB_ID)
    assert answer[heartbeat.ENSURE] == "created"
    assert job is not None
    assert job.owner == r.SYSTEM_OWNER
    assert job.target.model_dump()["task"] == heartbeat.TASK
    assert job.retry.max_attempts == 1
    assert {m.message.job_id for m in fakes.queues.sent} == {r.HEARTBEAT_JOB_ID}
    assert fakes.store.list_jobs(r.SYSTEM_OWNER) == [job]  # nobody else's


def test_given_a_heartbeat_when_ensured_again_then_it_is_kept_as_it_is() -> None:
    fakes = Fakes()
    heartbeat.ensure(fakes.store, fakes.index, fakes.clock())
    first = fakes.store.get_job(r.HEARTBEAT_JOB_ID)
    fakes.clock.advance(3600)

    answer = heartbeat.ensure(fakes.store, fakes.index, fakes.clock())

    assert answer[heartbeat.ENSURE] == "kept"
    assert fakes.store.get_job(r.HEARTBEAT_JOB_ID) == first


def _beat(fakes: Fakes, minutes_ago: float, lag_seconds: float, status: RunStatus) -> None:
    job = fakes.store.get_job(r.HEARTBEAT_JOB_ID)
    assert job is not None
    scheduled = (fakes.clock() - timedelta(minutes=minutes_ago)).replace(microsecond=0)
    run = new_run(job, f"{job.id}_{scheduled:%Y%m%dT%H%M%S}Z", scheduled, Trigger.SCHEDULE)
    started = scheduled + timedelta(seconds=lag_seconds)
    fakes.store.runs[(job.id, run.id)] = run.model_copy(
        update={
            "status": status,
            "started_at": started,
            "finished_at": started + timedelta(milliseconds=20),
        }
    )


@pytest.mark.parametrize(
    ("beats", "state"),
    [
        ([(1, 0.05, RunStatus.SUCCEEDED)], "ok"),
        ([(1, r.HEARTBEAT_MAX_LAG_SECONDS + 1, RunStatus.SUCCEEDED)], "late"),
        ([(10, 0.05, RunStatus.SUCCEEDED), (1, 0.05, RunStatus.MISSED)], "missing"),
        ([], "missing"),
    ],
)
def test_given_the_heartbeats_last_runs_when_its_status_is_asked_then_it_says_how_it_goes(
    beats: list[tuple[float, float, RunStatus]], state: str
) -> None:
    fakes = Fakes()
    heartbeat.ensure(fakes.store, fakes.index, fakes.clock())
    for beat in beats:
        _beat(fakes, *beat)

    seen = heartbeat.status(fakes.store, fakes.clock())["heartbeat"]

    assert seen["state"] == state
    if beats:
        assert seen["last_run"]["status"] == beats[-1][2].value
