"""Time windows on the fakes: a windowed occurrence is kept, sent and started at its planned
start (its fire time plus its offset), its run records both, its lag is measured from the
planned start, and nothing moves it: a replay, a duplicate delivery, a dispatcher that reads
its minute again."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from chronoq.domain import ids, windows
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import Job, JobPatch
from chronoq.domain.runs import RunStatus

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import mark_running, occurrences_of, stored

WINDOW = 600


def test_given_a_windowed_job_when_created_then_its_occurrence_is_kept_at_its_planned_start_under_an_id_that_carries_the_offset(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW})
    )
    fire = datetime.fromisoformat("2026-11-26T13:00:00+00:00")
    offset = windows.offset(job.id, fire, WINDOW)
    assert offset > 0  # (this job's hour-13 offset, as the hash gives it)

    (occurrence,) = occurrences_of(fakes, job)

    assert job.next_run_at == fire  # the fire time: what identifies the occurrence
    assert job.next_start_at == fire + timedelta(seconds=offset)
    assert occurrence.run_id == ids.run_id(job.id, fire, 1, offset)
    assert (occurrence.scheduled_at, occurrence.starts_at) == (fire, job.next_start_at)
    # kept in the bucket of the minute it starts in
    shard = ids.shard_of(job.id, fakes.shards)
    assert fakes.store.occurrences_in(job.next_start_at, shard) == [occurrence]


def test_given_a_windowed_run_when_dispatched_and_started_then_it_is_sent_for_and_starts_at_its_planned_start_and_records_both_times(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW})
    )
    assert job.next_run_at is not None
    assert job.next_start_at is not None
    planned = job.next_start_at
    fakes.clock.set(planned - timedelta(seconds=50))
    fakes.dispatcher.dispatch()

    (sent,) = fakes.queues.sent
    assert sent.message.starts_at == planned
    assert sent.delay_seconds == 50 - 1  # reaches a worker in the second before it (normal)
    fakes.clock.set(planned - timedelta(seconds=1))
    assert fakes.starter.start_run(sent.message) == "started"
    started = fakes.executor.started[sent.message.run_id]
    assert started.scheduled_at == "2026-11-26T13:00:00Z"
    assert started.starts_at == planned.strftime("%Y-%m-%dT%H:%M:%SZ")  # its execution waits

    fakes.clock.set(planned + timedelta(milliseconds=40))  # EXPRESS's first state: its second
    assert mark_running(fakes, sent.message)
    run = stored(fakes, fakes.store.runs[(job.id, sent.message.run_id)])
    assert (run.scheduled_at, run.starts_at) == (job.next_run_at, planned)
    assert run.lag_ms == 40  # from the planned start, not from the fire time


def test_given_a_windowed_run_delivered_twice_and_its_minute_dispatched_again_when_started_then_its_start_never_moves(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW})
    )
    assert job.next_start_at is not None
    fakes.clock.set(job.next_start_at - timedelta(seconds=30))
    fakes.dispatcher.dispatch()
    fakes.store.reopen_minute(
        ids.shard_of(job.id, fakes.shards), job.next_start_at
    )  # a tick that crashed: read again
    fakes.dispatcher.dispatch()

    messages = [s.message for s in fakes.queues.sent]
    assert len(messages) == 2
    assert {m.run_id for m in messages} == {job.occurrence_id(job.next_run_at)}  # type: ignore[arg-type]
    assert {m.starts_at for m in messages} == {job.next_start_at}
    assert fakes.starter.start_runs(messages) == ["started", "started"]
    assert {e.starts_at for e in fakes.executor.started.values()} == {
        job.next_start_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    }


def test_given_a_windowed_run_when_its_start_deadline_is_judged_then_it_counts_from_the_planned_start(
    fakes: Fakes,
) -> None:
    def planned_late() -> Job:
        """A job whose run is planned later than its deadline after the fire time (offsets
        come from job ids: one in ten is planned within the first 60 s of the window)."""
        for _ in range(50):
            job = fakes.jobs.create_job(
                OWNER,
                job_spec(
                    {"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW},
                    start_deadline_seconds=60,
                ),
            )
            assert job.next_run_at is not None
            assert job.next_start_at is not None
            if (job.next_start_at - job.next_run_at).total_seconds() > 60:
                return job
            fakes.jobs.delete_job(OWNER, job.id)
        raise AssertionError("no job planned later than 60 s into its window")

    job = planned_late()
    assert job.next_start_at is not None
    fakes.clock.set(job.next_start_at - timedelta(seconds=5))
    fakes.dispatcher.dispatch()
    (sent,) = fakes.queues.sent
    fakes.clock.set(job.next_start_at + timedelta(seconds=30))

    assert fakes.starter.start_run(sent.message) == "started"


def test_given_a_job_without_a_window_when_created_then_its_occurrence_is_kept_as_it_always_was(
    fakes: Fakes,
) -> None:
    """A window moves when a run is kept and sent, nothing else: a job without one has the
    same run ids, time index items and start as before."""
    plain = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "0 * * * *"}))

    (occurrence,) = occurrences_of(fakes, plain)

    assert occurrence.run_id == ids.run_id(plain.id, plain.next_run_at)  # type: ignore[arg-type]
    assert occurrence.starts_at == occurrence.scheduled_at
    assert plain.next_start_at == plain.next_run_at


def test_given_a_window_longer_than_the_schedules_gap_when_created_or_changed_then_422_names_it(
    fakes: Fakes,
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.create_job(
            OWNER,
            job_spec({"type": "cron", "expression": "*/5 * * * *", "window_seconds": 301}),
        )
    assert refused.value.field == "schedule.window_seconds"
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "*/5 * * * *"}))
    patch = JobPatch.model_validate(
        {"schedule": {"type": "cron", "expression": "*/5 * * * *", "window_seconds": 900}}
    )
    with pytest.raises(InvalidRequest):
        fakes.jobs.update_job(OWNER, job.id, patch)


def test_given_a_windowed_job_when_its_window_changes_then_its_pending_occurrence_is_planned_anew_under_a_new_generation(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW})
    )
    patch = JobPatch.model_validate(
        {"schedule": {"type": "cron", "expression": "0 * * * *", "window_seconds": 60}}
    )

    changed = fakes.jobs.update_job(OWNER, job.id, patch)

    assert changed.generation == 2
    assert changed.next_run_at == job.next_run_at
    assert changed.next_start_at is not None
    assert changed.next_run_at is not None
    assert 0 <= (changed.next_start_at - changed.next_run_at).total_seconds() < 60
    ids_now = {o.run_id for o in occurrences_of(fakes, job)}
    assert changed.occurrence_id(changed.next_run_at) in ids_now


def test_given_a_missed_windowed_run_when_recorded_then_it_keeps_its_planned_start(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER,
        job_spec(
            {"type": "cron", "expression": "0 * * * *", "window_seconds": WINDOW},
            start_deadline_seconds=1,
        ),
    )
    assert job.next_start_at is not None
    fakes.clock.set(job.next_start_at - timedelta(seconds=5))
    fakes.dispatcher.dispatch()
    (sent,) = fakes.queues.sent
    fakes.clock.set(job.next_start_at + timedelta(seconds=10))  # the worker was late

    assert fakes.starter.start_run(sent.message) == "missed"
    run = fakes.store.runs[(job.id, sent.message.run_id)]
    assert run.status is RunStatus.MISSED
    assert run.starts_at == job.next_start_at
