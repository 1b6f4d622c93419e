"""The API's job operations on the fakes: create, read, change, pause, resume, delete,
trigger; what the models cannot check (registered tasks, writable buckets); owners kept
apart."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq.domain import ids
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import JobPatch, JobState
from chronoq.domain.runs import Occurrence, Priority, RunStatus, Trigger
from chronoq.domain.targets import HttpTarget

from tests.builders import OWNER, Fakes, at, job_spec, seconds_from
from tests.unit.usecases.helpers import (
    CountingStore,
    due_job,
    mark_running,
    message,
    occurrences_of,
    pending_occurrence,
    pending_run,
    stored,
    stored_job,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # the fake clock's start


def cron(expression: str) -> dict[str, str]:
    return {"type": "cron", "expression": expression}


def patch(**changes: Any) -> JobPatch:
    return JobPatch.model_validate(changes)


# --- create and read ------------------------------------------------------------------------


def test_given_a_cron_job_when_created_then_it_is_active_with_one_occurrence_in_the_time_index_at_its_next_fire_time(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/5 * * * *")))

    assert (job.state, job.version, job.generation) == (JobState.ACTIVE, 1, 1)
    assert job.next_run_at == NOW + timedelta(minutes=5)
    assert fakes.jobs.get_job(OWNER, job.id) == job
    assert occurrences_of(fakes, job) == [
        Occurrence(
            job_id=job.id,
            run_id=ids.run_id(job.id, NOW + timedelta(minutes=5)),
            scheduled_at=NOW + timedelta(minutes=5),
            priority=Priority.NORMAL,
            generation=1,
        )
    ]
    assert fakes.runs.list_runs(OWNER, job.id) == []  # recorded when it starts
    assert fakes.queues.sent == []  # its minute is not dispatched yet


def test_given_a_rate_job_when_created_then_it_starts_one_interval_from_now(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "rate", "every": "2 hours"}))

    assert job.next_run_at == NOW + timedelta(hours=2)


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        (at(NOW - timedelta(seconds=1)), "schedule.at"),
        ({**cron("* * * * *"), "end_at": "2026-11-26T11:00:00Z"}, "schedule.end_at"),
    ],
)
def test_given_a_schedule_with_no_future_fire_time_when_created_then_invalid_names_the_field(
    fakes: Fakes, schedule: dict[str, str], field: str
) -> None:
    with pytest.raises(InvalidRequest) as raised:
        fakes.jobs.create_job(OWNER, job_spec(schedule))

    assert raised.value.field == field
    assert fakes.store.jobs == {}
    assert fakes.store.runs == {}


@pytest.mark.parametrize(
    "task", ["os:system", "subprocess:run", "chronoq.tasks:lookup", "builtins:eval"]
)
def test_given_a_task_that_is_not_registered_when_a_job_names_it_then_invalid_names_target_task(
    fakes: Fakes, task: str
) -> None:
    with pytest.raises(InvalidRequest) as raised:
        fakes.jobs.create_job(OWNER, job_spec(target={"type": "python", "task": task}))

    assert (raised.value.field, raised.value.message) == (
        "target.task",
        f"{task} is not a registered task",
    )
    assert fakes.store.jobs == {}


def test_given_a_registered_task_when_a_job_names_it_then_it_is_created(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec(target={"type": "python", "task": "chronoq.tasks:echo"})
    )

    assert fakes.store.get_job(job.id) == job


def test_given_a_bucket_the_deployment_may_not_write_to_when_a_job_names_it_then_invalid_names_output_location() -> (
    None
):
    fakes = Fakes(output_buckets=frozenset({"team-results", "fake-outputs"}))

    with pytest.raises(InvalidRequest) as raised:
        fakes.jobs.create_job(OWNER, job_spec(output_location="s3://elsewhere/x"))
    accepted = fakes.jobs.create_job(OWNER, job_spec(output_location="s3://team-results/x"))
    own = fakes.jobs.create_job(OWNER, job_spec(output_location="s3://fake-outputs/x"))

    assert raised.value.field == "output_location"
    assert "elsewhere" in raised.value.message
    assert set(fakes.store.jobs) == {accepted.id, own.id}


def test_given_a_bucket_the_deployment_may_not_write_to_when_a_job_is_changed_to_it_then_invalid_and_nothing_changes() -> (
    None
):
    fakes = Fakes(output_buckets=frozenset({"team-results"}))
    job = fakes.jobs.create_job(OWNER, job_spec(output_location="s3://team-results/x"))

    with pytest.raises(InvalidRequest) as raised:
        fakes.jobs.update_job(OWNER, job.id, patch(output_location="s3://elsewhere/x"))

    assert raised.value.field == "output_location"
    assert stored_job(fakes, job) == job


def test_given_no_bucket_list_when_a_job_names_any_bucket_then_it_is_accepted(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(output_location="s3://anywhere/x"))

    assert job.output_location == "s3://anywhere/x"


def test_given_stored_jobs_when_listed_then_only_the_callers_jobs_are_returned_oldest_first(
    fakes: Fakes,
) -> None:
    first = fakes.jobs.create_job(OWNER, job_spec(name="first"))
    fakes.jobs.create_job("bob", job_spec(name="bobs"))
    fakes.clock.advance(1)
    second = fakes.jobs.create_job(OWNER, job_spec(name="second"))

    assert [j.id for j in fakes.jobs.list_jobs(OWNER)] == [first.id, second.id]
    assert [j.name for j in fakes.jobs.list_jobs("bob")] == ["bobs"]


OPERATIONS: dict[str, Callable[[Fakes, str], object]] = {
    "get": lambda f, job_id: f.jobs.get_job("bob", job_id),
    "update": lambda f, job_id: f.jobs.update_job("bob", job_id, patch(name="mine")),
    "pause": lambda f, job_id: f.jobs.pause_job("bob", job_id),
    "resume": lambda f, job_id: f.jobs.resume_job("bob", job_id),
    "delete": lambda f, job_id: f.jobs.delete_job("bob", job_id),
    "trigger": lambda f, job_id: f.jobs.trigger_job("bob", job_id),
    "list runs": lambda f, job_id: f.runs.list_runs("bob", job_id),
}


@pytest.mark.parametrize("operation", OPERATIONS)
def test_given_alices_job_when_bob_uses_it_then_not_found_and_nothing_changes(
    fakes: Fakes, operation: str
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())
    runs_before = dict(fakes.store.runs)

    with pytest.raises(NotFound, match=f"job {job.id} not found"):
        OPERATIONS[operation](fakes, job.id)

    assert stored_job(fakes, job) == job
    assert fakes.store.runs == runs_before
    assert fakes.queues.sent == []


def test_given_an_unknown_job_id_when_requested_then_not_found(fakes: Fakes) -> None:
    with pytest.raises(NotFound, match="job job_0123456789abcdef not found"):
        fakes.jobs.get_job(OWNER, "job_0123456789abcdef")


# --- PATCH ----------------------------------------------------------------------------------


def test_given_a_cron_job_when_its_schedule_is_changed_then_a_new_occurrence_is_planned_and_the_old_one_no_longer_belongs_to_it(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("0 0 1 1 *")))
    old = pending_occurrence(fakes, job)

    changed = fakes.jobs.update_job(OWNER, job.id, patch(schedule=cron("0 12 * * *"), version=1))

    assert (changed.version, changed.generation) == (2, 2)
    assert changed.next_run_at == datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    new = pending_occurrence(fakes, changed)
    assert (new.run_id, new.generation) == (ids.run_id(job.id, changed.next_run_at, 2), 2)
    # the old item is left in the time index (no delete): it is of an older generation
    assert occurrences_of(fakes, job) == [new, old]
    assert [changed.is_current(o) for o in (new, old)] == [True, False]
    assert fakes.runs.list_runs(OWNER, job.id) == []
    assert stored_job(fakes, job) == changed


def test_given_a_stale_version_when_patching_then_conflict_and_nothing_changes(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(name="every-minute"))

    with pytest.raises(Conflict, match="version 1"):
        fakes.jobs.update_job(OWNER, job.id, patch(name="renamed", version=7))

    assert stored_job(fakes, job) == job
    assert fakes.jobs.get_job(OWNER, job.id).name == "every-minute"


def test_given_the_current_version_when_patching_other_fields_then_the_pending_occurrence_is_kept(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())
    pending = pending_occurrence(fakes, job)

    changed = fakes.jobs.update_job(OWNER, job.id, patch(name="renamed", version=1))

    assert (changed.name, changed.version, changed.generation) == ("renamed", 2, 1)
    assert changed.next_run_at == job.next_run_at
    assert occurrences_of(fakes, job) == [pending]
    assert changed.is_current(pending)
    assert stored_job(fakes, job) == changed


def test_given_a_new_target_when_patched_then_the_next_run_calls_it(fakes: Fakes) -> None:
    job, run = due_job(fakes)
    fakes.jobs.update_job(
        OWNER, job.id, patch(target={"type": "http", "url": "http://127.0.0.1:9/new"})
    )

    outcome = fakes.starter.start_run(message(fakes, run))

    assert outcome == "started"
    target = fakes.executor.started[run.id].target
    assert isinstance(target, HttpTarget)
    assert target.url == "http://127.0.0.1:9/new"


def test_given_a_schedule_patched_to_the_same_fire_time_when_the_run_is_due_then_it_still_starts(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("0 12 * * *")))
    # e.g. a client sending the whole job back with a new name
    changed = fakes.jobs.update_job(
        OWNER, job.id, patch(name="renamed", schedule=cron("0 12 * * *"))
    )
    assert changed.next_run_at == job.next_run_at

    assert job.next_run_at is not None
    fakes.clock.set(job.next_run_at - timedelta(seconds=30))
    fakes.dispatcher.dispatch()
    fakes.clock.set(job.next_run_at)
    outcomes = [fakes.starter.start_run(m) for m in fakes.queues.take()]

    assert outcomes == ["started"]
    assert list(fakes.executor.started) == [pending_run(fakes, changed).id]


def test_given_a_new_priority_when_patched_then_the_pending_run_is_sent_to_its_queue(
    fakes: Fakes,
) -> None:
    job, _ = due_job(fakes, seconds=30)
    changed = fakes.jobs.update_job(OWNER, job.id, patch(priority="high"))

    fakes.dispatcher.dispatch()

    pending = pending_occurrence(fakes, changed)
    assert pending.priority is Priority.HIGH
    assert [(s.priority, s.message.run_id) for s in fakes.queues.sent] == [
        (Priority.HIGH, pending.run_id)
    ]


# --- pause, resume, delete, trigger ---------------------------------------------------------


def test_given_an_active_job_when_paused_then_it_has_no_pending_run_and_pausing_again_changes_nothing(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/5 * * * *")))

    paused = fakes.jobs.pause_job(OWNER, job.id)
    again = fakes.jobs.pause_job(OWNER, job.id)

    assert (paused.state, paused.next_run_at) == (JobState.PAUSED, None)
    assert (paused.version, paused.generation) == (2, 2)
    assert again == paused == stored_job(fakes, job)
    assert fakes.runs.list_runs(OWNER, job.id) == []


def test_given_a_paused_cron_job_when_resumed_then_the_next_run_is_the_next_future_fire_time(
    fakes: Fakes,
) -> None:
    fakes.clock.set(datetime(2026, 11, 25, 21, 47, 30, tzinfo=UTC))
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/5 * * * *")))
    fakes.jobs.pause_job(OWNER, job.id)

    fakes.clock.set(datetime(2026, 11, 25, 22, 31, 0, tzinfo=UTC))  # eight fire times went by
    resumed = fakes.jobs.resume_job(OWNER, job.id)

    assert resumed.state is JobState.ACTIVE
    assert resumed.next_run_at == datetime(2026, 11, 25, 22, 35, tzinfo=UTC)
    assert (resumed.version, resumed.generation) == (3, 3)
    current = [o for o in occurrences_of(fakes, job) if resumed.is_current(o)]
    assert [o.scheduled_at for o in current] == [resumed.next_run_at]
    assert pending_occurrence(fakes, resumed).generation == 3
    assert fakes.runs.list_runs(OWNER, job.id) == []
    assert fakes.queues.sent == []  # no burst of the missed runs


def test_given_an_active_job_when_resumed_then_nothing_changes(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())

    assert fakes.jobs.resume_job(OWNER, job.id) == job == stored_job(fakes, job)


def test_given_a_paused_one_time_job_whose_time_passed_when_resumed_then_it_completes_without_a_run(
    fakes: Fakes,
) -> None:
    job, _ = due_job(fakes, seconds=60)
    fakes.jobs.pause_job(OWNER, job.id)

    fakes.clock.advance(120)
    resumed = fakes.jobs.resume_job(OWNER, job.id)

    assert (resumed.state, resumed.next_run_at) == (JobState.COMPLETED, None)
    assert fakes.runs.list_runs(OWNER, job.id) == []
    assert [o.generation for o in occurrences_of(fakes, job)] == [1]  # nothing new planned


CHANGES: dict[str, Callable[[Fakes, str], object]] = {
    "reschedule": lambda f, job_id: f.jobs.update_job(
        OWNER, job_id, patch(schedule=cron("0 12 * * *"))
    ),
    "pause": lambda f, job_id: f.jobs.pause_job(OWNER, job_id),
    "pause and resume": lambda f, job_id: (
        f.jobs.pause_job(OWNER, job_id),
        f.jobs.resume_job(OWNER, job_id),
    ),
    "delete": lambda f, job_id: f.jobs.delete_job(OWNER, job_id),
}


@pytest.mark.parametrize("change", CHANGES)
def test_given_a_job_with_a_planned_occurrence_when_changed_or_deleted_then_no_run_record_is_written_or_deleted(
    change: str,
) -> None:
    fakes = Fakes(store=CountingStore())
    assert isinstance(fakes.store, CountingStore)
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/5 * * * *")))
    planned = pending_occurrence(fakes, job)

    CHANGES[change](fakes, job.id)

    assert fakes.store.run_writes == []
    assert planned in occurrences_of(fakes, job)  # left for the dispatcher to drop
    assert fakes.store.runs == {}


def test_given_a_completed_job_when_paused_then_conflict(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(seconds_from(NOW, 60))))
    fakes.clock.set(NOW + timedelta(seconds=62))  # its only fire time is past

    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED
    with pytest.raises(Conflict, match="COMPLETED"):
        fakes.jobs.pause_job(OWNER, job.id)

    assert stored_job(fakes, job) == job  # (its end is derived, not written)


def test_given_a_deleted_job_when_its_run_arrives_then_nothing_starts_or_is_recorded_and_the_job_is_gone(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes)

    fakes.jobs.delete_job(OWNER, job.id)

    with pytest.raises(NotFound):
        fakes.jobs.get_job(OWNER, job.id)
    # nothing to delete but the job: its occurrence is left for the worker to drop
    assert [o.run_id for o in occurrences_of(fakes, job)] == [run.id]
    assert fakes.starter.start_run(message(fakes, run)) == "gone"
    assert fakes.executor.starts == {}
    assert fakes.store.runs == {}
    with pytest.raises(NotFound):
        fakes.jobs.delete_job(OWNER, job.id)


def test_given_an_active_job_when_triggered_then_a_manual_run_is_queued_for_now(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("0 0 1 1 *"), priority="low"))

    run = fakes.jobs.trigger_job(OWNER, job.id)

    assert (run.trigger, run.status, run.scheduled_at) == (
        Trigger.MANUAL,
        RunStatus.SCHEDULED,
        NOW,
    )
    assert ids.job_id_of_run(run.id) == job.id
    assert run.id != ids.run_id(job.id, NOW)  # never a scheduled occurrence's id
    assert stored(fakes, run) == run
    (sent,) = fakes.queues.sent
    assert (sent.priority, sent.message.run_id, sent.delay_seconds) == (Priority.LOW, run.id, 0)
    assert stored_job(fakes, job) == job  # the schedule is untouched


def test_given_a_paused_job_when_triggered_then_one_run_starts_now(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec(cron("0 0 1 1 *"), target={"type": "http", "url": "http://h.test/manual"})
    )
    fakes.jobs.pause_job(OWNER, job.id)

    run = fakes.jobs.trigger_job(OWNER, job.id)

    (queued,) = fakes.queues.take()
    assert (run.trigger, run.status, queued.run_id) == (Trigger.MANUAL, RunStatus.SCHEDULED, run.id)
    assert fakes.starter.start_run(queued) == "started"
    assert list(fakes.executor.started) == [run.id]
    target = fakes.executor.started[run.id].target
    assert isinstance(target, HttpTarget)
    assert target.url == "http://h.test/manual"
    assert fakes.executor.started[run.id].trigger == Trigger.MANUAL.value
    # an allow job's run is not claimed: its record waits for the state machine
    assert stored(fakes, run).status is RunStatus.SCHEDULED
    assert mark_running(fakes, run)
    assert stored(fakes, run).status is RunStatus.RUNNING


# --- whether anyone is to hear of a run -------------------------------------------------------

NOTIFY = {"on": ["SUCCEEDED"], "webhook": "https://hooks.example.com/x"}


def test_given_a_job_with_a_notify_block_when_created_and_triggered_then_its_runs_are_marked_notify(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("0 0 1 1 *"), notify=NOTIFY))

    triggered = fakes.jobs.trigger_job(OWNER, job.id)

    assert pending_run(fakes, job).notify
    assert stored(fakes, triggered).notify


def test_given_a_job_without_a_notify_block_when_created_and_triggered_then_its_runs_are_not_marked(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("0 0 1 1 *")))

    triggered = fakes.jobs.trigger_job(OWNER, job.id)

    assert not pending_run(fakes, job).notify
    assert not stored(fakes, triggered).notify
