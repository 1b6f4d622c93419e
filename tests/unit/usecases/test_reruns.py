"""Re-runs on the fakes: a run that ended, run again as a new run of the same job and fire
time; every run of a range that ended so; each idempotent under an Idempotency-Key."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain import limits as lim
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.reruns import RerunRequest
from chronoq.domain.runs import Run, RunStatus, Trigger

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import mark_running, started_run, stored


def ended(fakes: Fakes, status: RunStatus = RunStatus.FAILED, **extra: Any) -> Run:
    _, run = started_run(fakes, **extra)
    fakes.store.update_run(run.job_id, run.id, status=status, finished_at=fakes.clock())
    return stored(fakes, run)


def view(run: Run) -> dict[str, Any]:
    return run.model_dump(mode="json")


def test_given_a_run_that_ended_when_rerun_then_a_new_run_of_the_same_job_and_fire_time_is_recorded_and_sent_now(
    fakes: Fakes,
) -> None:
    original = ended(fakes)
    fakes.clock.advance(3600)
    fakes.queues.sent.clear()

    rerun = fakes.reruns.rerun_run(OWNER, original.id)

    assert rerun.id != original.id
    assert rerun.id.startswith(original.id.split("-")[0])
    kept = stored(fakes, rerun)
    assert (kept.job_id, kept.scheduled_at, kept.trigger, kept.rerun_of, kept.status) == (
        original.job_id,
        original.scheduled_at,
        Trigger.RERUN,
        original.id,
        RunStatus.SCHEDULED,
    )
    assert kept.starts_at == fakes.clock()  # its lag counts from now, not its fire time
    (sent,) = fakes.queues.sent
    assert (sent.message.run_id, sent.delay_seconds) == (rerun.id, 0)
    assert fakes.starter.start_run(sent.message) == "started"  # (its deadline counts from now)
    assert mark_running(fakes, rerun)
    assert stored(fakes, rerun).lag_ms == 0


def test_given_a_run_not_ended_or_of_a_deleted_job_or_someone_elses_when_rerun_then_it_is_refused(
    fakes: Fakes,
) -> None:
    _, running = started_run(fakes)
    with pytest.raises(Conflict):
        fakes.reruns.rerun_run(OWNER, running.id)
    with pytest.raises(NotFound):
        fakes.reruns.rerun_run("bob", running.id)
    with pytest.raises(NotFound):
        fakes.reruns.rerun_run(OWNER, "not-a-run")
    gone = ended(fakes)
    fakes.jobs.delete_job(OWNER, gone.job_id)
    with pytest.raises(NotFound):
        fakes.reruns.rerun_run(OWNER, gone.id)


def test_given_a_rerun_requested_twice_with_one_idempotency_key_when_served_then_one_run_is_made(
    fakes: Fakes,
) -> None:
    original = ended(fakes)
    request = {"route": "POST /runs/{id}/rerun", "run_id": original.id}

    def act() -> dict[str, Any]:
        return view(fakes.reruns.rerun_run(OWNER, original.id))

    first, replayed_first = fakes.idempotency.once(OWNER, "k-1", request, act)
    second, replayed_second = fakes.idempotency.once(OWNER, "k-1", request, act)

    assert (replayed_first, replayed_second) == (False, True)
    assert first == second
    reruns = [r for r in fakes.store.runs.values() if r.rerun_of == original.id]
    assert [r.id for r in reruns] == [first["id"]]


def test_given_runs_of_a_range_when_the_job_is_rerun_for_some_statuses_then_exactly_those_that_ended_so_are_rerun(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    statuses = [RunStatus.FAILED, RunStatus.SUCCEEDED, RunStatus.TIMED_OUT, RunStatus.MISSED]
    made = []
    for n, status in enumerate(statuses):
        run = fakes.jobs.trigger_job(OWNER, job.id)
        fakes.store.update_run(job.id, run.id, status=status)
        made.append(run)
        fakes.clock.advance(60 * (n + 1))
    fakes.queues.sent.clear()
    start = made[0].scheduled_at

    reruns = fakes.reruns.rerun_job(
        OWNER,
        job.id,
        RerunRequest.model_validate(
            {"from": start.isoformat(), "to": (start + timedelta(hours=1)).isoformat()}
        ),
    )

    assert sorted(r.rerun_of or "" for r in reruns) == sorted([made[0].id, made[2].id])
    assert {r.trigger for r in reruns} == {Trigger.RERUN}
    assert len(fakes.queues.sent) == 2
    missed = fakes.reruns.rerun_job(
        OWNER,
        job.id,
        RerunRequest.model_validate(
            {
                "from": start.isoformat(),
                "to": (start + timedelta(hours=1)).isoformat(),
                "statuses": ["MISSED"],
            }
        ),
    )
    assert [r.rerun_of for r in missed] == [made[3].id]


def test_given_more_matching_runs_than_allowed_when_the_job_is_rerun_then_422_names_to_and_nothing_is_made(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    start = fakes.clock()
    for _ in range(lim.MAX_RERUN_RUNS + 1):
        run = fakes.jobs.trigger_job(OWNER, job.id)
        fakes.store.update_run(job.id, run.id, status=RunStatus.FAILED)
        fakes.clock.advance(1)
    before = len(fakes.store.runs)

    with pytest.raises(InvalidRequest) as refused:
        fakes.reruns.rerun_job(
            OWNER,
            job.id,
            RerunRequest.model_validate(
                {"from": start.isoformat(), "to": fakes.clock().isoformat()}
            ),
        )

    assert refused.value.field == "to"
    assert len(fakes.store.runs) == before


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"from": "2026-11-26T12:00:00Z", "to": "2026-11-26T11:00:00Z"}, "to"),
        ({"from": "2026-01-01T00:00:00Z", "to": "2026-06-01T00:00:00Z"}, "to"),  # > 90 days
    ],
)
def test_given_a_bad_range_when_the_job_is_rerun_then_422_names_the_field(
    fakes: Fakes, document: dict[str, str], field: str
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))

    with pytest.raises(InvalidRequest) as refused:
        fakes.reruns.rerun_job(OWNER, job.id, RerunRequest.model_validate(document))

    assert refused.value.field == field


def test_given_statuses_that_are_not_final_when_a_rerun_is_asked_then_the_request_is_refused() -> (
    None
):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as refused:
        RerunRequest.model_validate(
            {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "statuses": ["RUNNING"]}
        )
    assert "statuses" in str(refused.value)


def test_given_a_rerun_that_waits_past_its_start_deadline_when_a_worker_takes_it_then_it_is_missed(
    fakes: Fakes,
) -> None:
    original = ended(fakes)
    fakes.queues.sent.clear()
    scheduled = original.scheduled_at - timedelta(seconds=1)
    request = RerunRequest.model_validate(
        {
            "from": scheduled.isoformat(),
            "to": (original.scheduled_at + timedelta(seconds=1)).isoformat(),
            "start_deadline_seconds": 60,
        }
    )
    (rerun,) = fakes.reruns.rerun_job(OWNER, original.job_id, request)
    (sent,) = fakes.queues.sent
    fakes.clock.advance(61)

    assert fakes.starter.start_run(sent.message) == "missed"
    kept = stored(fakes, rerun)
    assert (kept.status, kept.start_deadline_seconds) == (RunStatus.MISSED, 60)
    assert "start_deadline_seconds (60 s) of its request" in str(kept.reason)


def test_given_a_single_rerun_when_it_waits_past_the_default_deadline_then_it_is_missed_and_not_before(
    fakes: Fakes,
) -> None:
    original = ended(fakes)
    fakes.queues.sent.clear()
    rerun = fakes.reruns.rerun_run(OWNER, original.id)
    (sent,) = fakes.queues.sent

    fakes.clock.advance(lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS + 1)

    assert fakes.starter.start_run(sent.message) == "missed"
    assert stored(fakes, rerun).status is RunStatus.MISSED
