"""The Store contract (jobs, runs, the time index), on the fakes and on DynamoDB.

Why this module is long: one suite over every store port (jobs, claims, runs, the time index,
pages, idempotency keys), kept together so each backend runs the same cases, and moto, started
once per module, is started once for them all."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import pytest
from botocore.exceptions import ClientError
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import JobState
from chronoq.domain.runs import Attempt, Occurrence, Priority, RunStatus, Trigger
from chronoq.resources import (
    CLAIM_LEASE_SECONDS,
    IDEMPOTENCY_KEY_SECONDS,
    IDEMPOTENCY_STALE_SECONDS,
)
from chronoq.usecases.ports import KeyRecord, Page, Position, RunFilter

from tests.contract.backends import (
    NOW,
    SHARDS,
    Backend,
    a_job,
    a_job_on_shard,
    a_run,
)

MINUTE = timedelta(minutes=1)
T = TypeVar("T")
NOT_STARTED = (RunStatus.SCHEDULED, RunStatus.QUEUED)


# --- Jobs -----------------------------------------------------------------------------------


def test_given_a_new_job_when_put_then_got_back_as_it_was(backend: Backend) -> None:
    job = a_job(active_runs=frozenset({"job_x_20261126T120000Z"}))

    backend.store.put_new_job(job)

    assert backend.store.get_job(job.id) == job


def test_given_no_job_when_got_then_none(backend: Backend) -> None:
    assert backend.store.get_job(ids.new_job_id()) is None


def test_given_an_owners_job_count_when_counted_up_to_the_limit_then_the_next_is_refused_until_one_is_counted_down(
    backend: Backend,
) -> None:
    store = backend.store

    assert [store.count_job("alice", +1, 2) for _ in range(3)] == [True, True, False]
    assert store.count_job("bob", +1, 2)  # a count per owner
    assert store.count_job("alice", -1)
    assert store.count_job("alice", +1, 2)
    assert not store.count_job("alice", +1, 2)


def test_given_an_owners_job_count_when_its_key_is_asked_for_as_a_job_then_there_is_none(
    backend: Backend,
) -> None:
    backend.store.count_job("alice", +1, 10)

    assert backend.store.get_job("count#alice") is None
    assert backend.store.get_jobs(["count#alice"]) == {}
    assert backend.store.list_jobs("alice") == []


def test_given_a_job_when_put_again_then_refused_and_kept(backend: Backend) -> None:
    job = a_job()
    backend.store.put_new_job(job)

    with pytest.raises((KeyError, ClientError)):
        backend.store.put_new_job(job.model_copy(update={"name": "other"}))

    assert backend.store.get_job(job.id) == job


def test_given_jobs_of_two_owners_when_listed_then_only_the_owners_jobs(backend: Backend) -> None:
    mine = [a_job(owner="alice"), a_job(owner="alice", created_at=NOW + MINUTE)]
    theirs = a_job(owner="bob")
    for job in [*mine, theirs]:
        backend.store.put_new_job(job)

    listed = backend.store.list_jobs("alice")

    assert sorted(listed, key=lambda j: j.id) == sorted(mine, key=lambda j: j.id)
    assert backend.store.list_jobs("carol") == []


def test_given_jobs_created_in_turn_when_listed_then_oldest_first(backend: Backend) -> None:
    jobs = [a_job(owner="alice", created_at=NOW + n * MINUTE) for n in (2, 0, 1)]
    for job in jobs:
        backend.store.put_new_job(job)

    listed = backend.store.list_jobs("alice")

    assert [j.id for j in listed] == [jobs[1].id, jobs[2].id, jobs[0].id]


def test_given_more_jobs_than_one_batch_read_takes_when_listed_then_every_one_in_order(
    backend: Backend,
) -> None:
    jobs = [a_job(owner="alice", created_at=NOW + n * timedelta(seconds=1)) for n in range(130)]
    for job in jobs:
        backend.store.put_new_job(job)

    listed = backend.store.list_jobs("alice")

    assert listed == jobs


def test_given_a_changed_job_when_listed_then_it_is_listed_as_stored(backend: Backend) -> None:
    job = a_job(owner="alice", active_runs=frozenset({"job_x_20261126T120000Z"}))
    backend.store.put_new_job(job)
    changed = job.model_copy(
        update={"name": "renamed", "state": JobState.PAUSED, "next_run_at": None, "version": 2}
    )
    assert backend.store.save_job(changed, expected_version=1)

    (listed,) = backend.store.list_jobs("alice")

    assert listed == changed
    assert listed == backend.store.get_job(job.id)


def test_given_a_deleted_job_when_listed_then_it_is_gone(backend: Backend) -> None:
    kept, deleted = a_job(owner="alice"), a_job(owner="alice", created_at=NOW + MINUTE)
    for job in (kept, deleted):
        backend.store.put_new_job(job)
    assert backend.store.delete_job(deleted.id)

    assert backend.store.list_jobs("alice") == [kept]


def test_given_some_jobs_when_got_by_ids_then_the_existing_ones_by_id(backend: Backend) -> None:
    jobs = [a_job() for _ in range(3)]
    for job in jobs:
        backend.store.put_new_job(job)
    missing = ids.new_job_id()

    found = backend.store.get_jobs([jobs[0].id, jobs[2].id, jobs[0].id, missing])

    assert found == {jobs[0].id: jobs[0], jobs[2].id: jobs[2]}
    assert backend.store.get_jobs([]) == {}


def test_given_a_job_when_saved_with_its_version_then_changed_and_its_active_runs_kept(
    backend: Backend,
) -> None:
    job = a_job(active_runs=frozenset({"job_x_20261126T120000Z"}))
    backend.store.put_new_job(job)
    changed = job.model_copy(
        update={
            "name": "renamed",
            "version": 2,
            "generation": 2,
            "next_run_at": NOW + 5 * MINUTE,
            "updated_at": NOW + MINUTE,
            "active_runs": frozenset(),
        }
    )

    assert backend.store.save_job(changed, expected_version=1) is True

    assert backend.store.get_job(job.id) == changed.model_copy(
        update={"active_runs": job.active_runs}
    )


def test_given_a_job_when_saved_without_a_next_run_then_its_next_run_removed(
    backend: Backend,
) -> None:
    job = a_job()
    backend.store.put_new_job(job)
    paused = job.model_copy(update={"state": JobState.PAUSED, "next_run_at": None, "version": 2})

    assert backend.store.save_job(paused, expected_version=1) is True

    assert backend.store.get_job(job.id) == paused


def test_given_a_job_when_saved_with_a_stale_version_then_refused_and_unchanged(
    backend: Backend,
) -> None:
    job = a_job()
    backend.store.put_new_job(job)
    first = job.model_copy(update={"name": "first", "version": 2})
    assert backend.store.save_job(first, expected_version=1)

    second = job.model_copy(update={"name": "second", "version": 2})

    assert backend.store.save_job(second, expected_version=1) is False
    assert backend.store.get_job(job.id) == first


def test_given_no_job_when_saved_then_refused_and_not_created(backend: Backend) -> None:
    job = a_job()

    assert (
        backend.store.save_job(job.model_copy(update={"version": 2}), expected_version=1) is False
    )
    assert backend.store.get_job(job.id) is None


def test_given_a_job_when_deleted_then_gone_and_deleting_again_is_refused(
    backend: Backend,
) -> None:
    job = a_job()
    backend.store.put_new_job(job)

    assert backend.store.delete_job(job.id) is True
    assert backend.store.get_job(job.id) is None
    assert backend.store.delete_job(job.id) is False


# --- Claiming runs --------------------------------------------------------------------------


def active_runs(backend: Backend, job_id: str) -> frozenset[str]:
    job = backend.store.get_job(job_id)
    assert job is not None
    return job.active_runs


def status_of(backend: Backend, job_id: str, run_id: str) -> RunStatus:
    run = backend.store.get_run(job_id, run_id)
    assert run is not None
    return run.status


def test_given_a_scheduled_run_when_claimed_then_queued_and_active(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)

    assert (
        backend.store.claim_run(job, run, NOW + MINUTE, NOW + MINUTE, exclusive=False) == "claimed"
    )

    assert backend.store.get_run(job.id, run.id) == run.model_copy(
        update={"status": RunStatus.QUEUED, "queued_at": NOW + MINUTE}
    )
    assert active_runs(backend, job.id) == {run.id}


def test_given_a_claimed_run_when_claimed_again_while_its_claim_lasts_then_held(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=True) == "claimed"
    almost = NOW + timedelta(seconds=CLAIM_LEASE_SECONDS - 1)

    assert backend.store.claim_run(job, run, almost, almost, exclusive=True) == "held"

    assert status_of(backend, job.id, run.id) is RunStatus.QUEUED
    assert active_runs(backend, job.id) == {run.id}


def test_given_a_claimed_run_when_claimed_again_after_its_claim_lapsed_then_claimed_with_its_first_queued_at(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    assert backend.store.claim_run(job, run, NOW + MINUTE, NOW, exclusive=True) == "claimed"
    lapsed = NOW + timedelta(seconds=CLAIM_LEASE_SECONDS)

    assert backend.store.claim_run(job, run, NOW + 2 * MINUTE, lapsed, exclusive=True) == "claimed"

    claimed = backend.store.get_run(job.id, run.id)
    assert claimed is not None
    assert (claimed.status, claimed.queued_at) == (RunStatus.QUEUED, NOW + MINUTE)
    assert active_runs(backend, job.id) == {run.id}


def test_given_a_running_run_when_claimed_then_taken_and_not_left_active(
    backend: Backend,
) -> None:
    job = a_job(active_runs=frozenset({"job_x_20261126T115900Z"}))
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    backend.state_machine_writes(job.id, run.id, status=RunStatus.RUNNING, started_at=NOW)

    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=False) == "taken"

    assert status_of(backend, job.id, run.id) is RunStatus.RUNNING
    assert active_runs(backend, job.id) == job.active_runs


def test_given_a_claimed_run_that_is_running_when_claimed_again_then_taken_and_still_active(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=False) == "claimed"
    backend.state_machine_writes(job.id, run.id, status=RunStatus.RUNNING, started_at=NOW)

    assert backend.store.claim_run(job, run, NOW + MINUTE, NOW + MINUTE, exclusive=False) == "taken"

    assert status_of(backend, job.id, run.id) is RunStatus.RUNNING
    assert active_runs(backend, job.id) == {run.id}  # the state machine releases it at its end


@pytest.mark.parametrize(
    "status", [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.MISSED]
)
def test_given_an_ended_run_when_claimed_then_taken_and_not_left_active(
    backend: Backend, status: RunStatus
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    assert backend.store.end_run(run, status, NOW, "over", NOT_STARTED)

    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=True) == "taken"

    assert status_of(backend, job.id, run.id) is status
    assert active_runs(backend, job.id) == frozenset()


def test_given_no_run_record_when_claimed_then_the_claim_records_it_queued(
    backend: Backend,
) -> None:
    """A scheduled run has no record until it starts: the claim (of a job that keeps its
    active runs) writes it."""
    job = a_job()
    backend.store.put_new_job(job)
    run = a_run(job)

    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=True) == "claimed"

    kept = backend.store.get_run(job.id, run.id)
    assert kept is not None
    assert kept.status is RunStatus.QUEUED
    assert (kept.owner, kept.priority, kept.trigger, kept.scheduled_at, kept.generation) == (
        run.owner,
        run.priority,
        run.trigger,
        run.scheduled_at,
        run.generation,
    )
    assert kept.queued_at == NOW
    assert active_runs(backend, job.id) == {run.id}


def test_given_a_changed_job_when_claimed_with_the_version_read_before_then_job_changed(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    assert backend.store.save_job(job.model_copy(update={"version": 2}), expected_version=1)

    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=False) == "job_changed"

    assert status_of(backend, job.id, run.id) is RunStatus.SCHEDULED
    assert active_runs(backend, job.id) == frozenset()


def test_given_no_job_when_claimed_then_job_changed(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)

    assert backend.store.claim_run(job, run, NOW, NOW, exclusive=False) == "job_changed"

    assert status_of(backend, job.id, run.id) is RunStatus.SCHEDULED
    assert backend.store.get_job(job.id) is None


def test_given_another_active_run_when_claimed_exclusively_then_job_changed(
    backend: Backend,
) -> None:
    job = a_job()
    first, second = a_run(job), a_run(job, NOW + 2 * MINUTE)
    backend.store.put_new_job(job)
    backend.store.create_run(first, NOW)
    backend.store.create_run(second, NOW)
    assert backend.store.claim_run(job, first, NOW, NOW, exclusive=True) == "claimed"

    assert backend.store.claim_run(job, second, NOW, NOW, exclusive=True) == "job_changed"

    assert status_of(backend, job.id, second.id) is RunStatus.SCHEDULED
    assert active_runs(backend, job.id) == {first.id}


def test_given_another_active_run_when_claimed_not_exclusively_then_both_active(
    backend: Backend,
) -> None:
    job = a_job()
    first, second = a_run(job), a_run(job, NOW + 2 * MINUTE)
    backend.store.put_new_job(job)
    backend.store.create_run(first, NOW)
    backend.store.create_run(second, NOW)
    assert backend.store.claim_run(job, first, NOW, NOW, exclusive=False) == "claimed"

    assert backend.store.claim_run(job, second, NOW, NOW, exclusive=False) == "claimed"

    assert status_of(backend, job.id, second.id) is RunStatus.QUEUED
    assert active_runs(backend, job.id) == {first.id, second.id}


def test_given_active_runs_when_one_released_then_only_the_others_active(
    backend: Backend,
) -> None:
    job = a_job()
    first, second = a_run(job), a_run(job, NOW + 2 * MINUTE)
    backend.store.put_new_job(job)
    for run in (first, second):
        backend.store.create_run(run, NOW)
        assert backend.store.claim_run(job, run, NOW, NOW, exclusive=False) == "claimed"

    backend.store.release_run(job.id, first.id)
    assert active_runs(backend, job.id) == {second.id}

    backend.store.release_run(job.id, second.id)
    backend.store.release_run(job.id, second.id)
    assert active_runs(backend, job.id) == frozenset()
    assert status_of(backend, job.id, second.id) is RunStatus.QUEUED  # the run is untouched


def test_given_no_job_when_a_run_released_then_nothing_happens(backend: Backend) -> None:
    job = a_job()

    backend.store.release_run(job.id, a_run(job).id)

    assert backend.store.get_job(job.id) is None


# --- Runs -----------------------------------------------------------------------------------


def test_given_a_new_run_when_created_then_got_back_as_it_was(backend: Backend) -> None:
    job = a_job(priority=Priority.HIGH, generation=3)
    run = a_run(job, trigger=Trigger.MANUAL)

    assert backend.store.create_run(run, NOW) is True

    assert backend.store.get_run(job.id, run.id) == run


def test_given_a_requested_run_with_its_own_start_deadline_when_created_then_the_deadline_is_kept(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job, trigger=Trigger.RERUN).model_copy(update={"start_deadline_seconds": 60})

    assert backend.store.create_run(run, NOW)

    kept = backend.store.get_run(job.id, run.id)
    assert kept is not None
    assert kept.start_deadline_seconds == 60


@pytest.mark.parametrize("notify", [True, False])
def test_given_a_new_run_marked_notify_or_not_when_created_then_the_mark_is_kept_through_its_end(
    backend: Backend, notify: bool
) -> None:
    job = a_job()
    run = a_run(job).model_copy(update={"notify": notify})

    assert backend.store.create_run(run, NOW)
    backend.state_machine_writes(job.id, run.id, status="SUCCEEDED", finished_at=NOW)

    kept = backend.store.get_run(job.id, run.id)
    assert kept is not None
    assert (kept.notify, kept.status) == (notify, RunStatus.SUCCEEDED)


def test_given_a_run_when_created_again_then_refused_and_the_first_kept(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    assert backend.store.create_run(run, NOW)

    again = run.model_copy(update={"status": RunStatus.QUEUED, "generation": 2, "owner": "bob"})

    assert backend.store.create_run(again, NOW + MINUTE) is False
    assert backend.store.get_run(job.id, run.id) == run


def test_given_no_run_when_got_then_none(backend: Backend) -> None:
    job = a_job()
    backend.store.create_run(a_run(job), NOW)

    assert backend.store.get_run(job.id, a_run(job, NOW + 2 * MINUTE).id) is None
    assert backend.store.get_run(ids.new_job_id(), a_run(job).id) is None


def test_given_runs_of_a_job_when_listed_then_the_newest_first_up_to_the_limit(
    backend: Backend,
) -> None:
    job, other = a_job(), a_job()
    runs = [a_run(job, NOW + i * MINUTE) for i in (3, 0, 4, 1, 2)]
    runs.append(a_run(job, NOW + 4 * MINUTE, trigger=Trigger.MANUAL))
    for run in [*runs, a_run(other, NOW + 9 * MINUTE)]:
        backend.store.create_run(run, NOW)
    newest_first = sorted(runs, key=lambda r: r.id, reverse=True)

    assert backend.store.list_runs(job.id, limit=3) == newest_first[:3]
    assert backend.store.list_runs(job.id, limit=100) == newest_first
    assert backend.store.list_runs(ids.new_job_id(), limit=10) == []


def test_given_a_run_not_started_when_ended_from_not_started_then_final_with_its_reason(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)

    ended = backend.store.end_run(run, RunStatus.SKIPPED, NOW + MINUTE, "forbid", NOT_STARTED)

    assert ended is True
    assert backend.store.get_run(job.id, run.id) == run.model_copy(
        update={"status": RunStatus.SKIPPED, "finished_at": NOW + MINUTE, "reason": "forbid"}
    )


def test_given_a_running_run_when_ended_only_from_not_started_then_refused_and_unchanged(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)
    backend.state_machine_writes(job.id, run.id, status=RunStatus.RUNNING, started_at=NOW)

    ended = backend.store.end_run(run, RunStatus.MISSED, NOW + MINUTE, "late", NOT_STARTED)

    assert ended is False
    assert backend.store.get_run(job.id, run.id) == run.model_copy(
        update={"status": RunStatus.RUNNING, "started_at": NOW}
    )


def test_given_a_running_run_when_ended_from_running_then_final(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)
    backend.state_machine_writes(job.id, run.id, status=RunStatus.RUNNING, started_at=NOW)

    ended = backend.store.end_run(
        run, RunStatus.CANCELLED, NOW + MINUTE, "by alice", [RunStatus.RUNNING, RunStatus.QUEUED]
    )

    assert ended is True
    assert status_of(backend, job.id, run.id) is RunStatus.CANCELLED


def test_given_a_running_run_when_ended_with_the_attempt_it_ends_then_the_attempt_is_kept(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)
    backend.state_machine_writes(job.id, run.id, status=RunStatus.RUNNING, started_at=NOW)
    attempt = Attempt(
        attempt=1,
        started_at=NOW,
        finished_at=NOW + MINUTE,
        outcome="Cancelled",
        error="cancelled by alice",
    )

    ended = backend.store.end_run(
        run, RunStatus.CANCELLED, NOW + MINUTE, "cancelled by alice", [RunStatus.RUNNING], attempt
    )

    kept = backend.store.get_run(job.id, run.id)
    assert ended is True
    assert kept is not None
    assert kept.attempts == [attempt]


def test_given_an_ended_run_when_ended_again_then_refused_and_the_first_end_kept(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)
    assert backend.store.end_run(run, RunStatus.SKIPPED, NOW, "first", NOT_STARTED)

    assert (
        backend.store.end_run(run, RunStatus.MISSED, NOW + MINUTE, "second", NOT_STARTED) is False
    )

    ended = backend.store.get_run(job.id, run.id)
    assert ended is not None
    assert (ended.status, ended.finished_at, ended.reason) == (RunStatus.SKIPPED, NOW, "first")


def test_given_no_run_when_ended_then_refused_and_not_created(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)

    assert backend.store.end_run(run, RunStatus.MISSED, NOW, "late", NOT_STARTED) is False
    assert backend.store.get_run(job.id, run.id) is None


def test_given_a_scheduled_run_when_deleted_as_pending_then_gone(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)

    assert backend.store.delete_pending_run(job.id, run.id) is True

    assert backend.store.get_run(job.id, run.id) is None
    assert backend.store.delete_pending_run(job.id, run.id) is False


def test_given_a_queued_run_when_deleted_as_pending_then_refused_and_kept(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job, status=RunStatus.QUEUED)
    backend.store.create_run(run, NOW)

    assert backend.store.delete_pending_run(job.id, run.id) is False

    assert backend.store.get_run(job.id, run.id) == run


def test_given_a_run_when_notifications_noted_then_shown_per_channel(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)

    backend.store.note_notification(job.id, run.id, "sns", "failed: throttled")
    backend.store.note_notification(job.id, run.id, "webhook", "sent")
    backend.store.note_notification(job.id, run.id, "sns", "sent")

    noted = backend.store.get_run(job.id, run.id)
    assert noted is not None
    assert noted.notifications == {"sns": "sent", "webhook": "sent"}


def test_given_no_run_when_a_notification_noted_then_no_run_appears(backend: Backend) -> None:
    job = a_job()
    run = a_run(job)

    backend.store.note_notification(job.id, run.id, "sns", "sent")

    assert backend.store.get_run(job.id, run.id) is None


# --- The time index -------------------------------------------------------------------------


def occurrence(job_id: str, at: timedelta, generation: int = 1) -> Occurrence:
    """The occurrence of ``job_id`` due ``at`` after NOW."""
    due = NOW + at
    return Occurrence(
        job_id=job_id,
        run_id=ids.run_id(job_id, due),
        scheduled_at=due,
        priority=Priority.NORMAL,
        generation=generation,
    )


def test_given_occurrences_when_queried_by_minute_and_shard_then_only_those_by_due_time(
    backend: Backend,
) -> None:
    one, two = a_job_on_shard(1), a_job_on_shard(1)
    elsewhere = a_job_on_shard(2)
    s = timedelta(seconds=1)
    in_minute = [
        occurrence(one.id, 40 * s),
        occurrence(two.id, 5 * s),
        occurrence(one.id, 20 * s),
        occurrence(two.id, 59 * s),
        occurrence(one.id, 0 * s),
    ]
    next_minute = occurrence(one.id, MINUTE + 5 * s)
    on_shard_2 = occurrence(elsewhere.id, 30 * s, generation=4)
    backend.store.put_occurrences([*in_minute, next_minute, on_shard_2], SHARDS, NOW)

    by_due = sorted(in_minute, key=lambda o: o.scheduled_at)
    assert backend.store.occurrences_in(NOW, 1) == by_due
    assert backend.store.occurrences_in(NOW + 30 * s, 1) == by_due
    assert backend.store.occurrences_in(NOW + MINUTE, 1) == [next_minute]
    assert backend.store.occurrences_in(NOW, 2) == [on_shard_2]
    assert backend.store.occurrences_in(NOW, 0) == []
    assert backend.store.occurrences_in(NOW - MINUTE, 1) == []


def test_given_occurrences_due_together_when_queried_then_by_run_id(backend: Backend) -> None:
    jobs = [a_job_on_shard(3) for _ in range(4)]
    together = [occurrence(job.id, timedelta(seconds=10)) for job in jobs]
    backend.store.put_occurrences(together, SHARDS, NOW)

    assert backend.store.occurrences_in(NOW, 3) == sorted(together, key=lambda o: o.run_id)


def test_given_an_occurrence_when_put_again_then_kept_once(backend: Backend) -> None:
    job = a_job_on_shard(0)
    first = occurrence(job.id, timedelta(seconds=30))
    backend.store.put_occurrences([first], SHARDS, NOW)

    backend.store.put_occurrences([first], SHARDS, NOW + MINUTE)

    assert backend.store.occurrences_in(NOW, 0) == [first]


def test_given_the_same_occurrence_twice_when_put_together_then_kept_once(
    backend: Backend,
) -> None:
    job = a_job_on_shard(0)
    first = occurrence(job.id, timedelta(seconds=30))

    backend.store.put_occurrences([first, first], SHARDS, NOW)

    assert backend.store.occurrences_in(NOW, 0) == [first]


def test_given_no_occurrences_when_put_then_nothing_kept(backend: Backend) -> None:
    backend.store.put_occurrences([], SHARDS, NOW)

    assert all(backend.store.occurrences_in(NOW, s) == [] for s in range(SHARDS))


def test_given_no_dispatch_when_checkpoints_read_then_none_on_every_shard(
    backend: Backend,
) -> None:
    assert backend.store.checkpoints(SHARDS) == dict.fromkeys(range(SHARDS))
    assert backend.store.opened_through(0) is None


def test_given_a_closed_minute_when_an_earlier_one_closed_then_the_checkpoint_stays(
    backend: Backend,
) -> None:
    backend.store.close_minute(2, NOW + 2 * MINUTE)

    backend.store.close_minute(2, NOW)

    assert backend.store.checkpoints(SHARDS) == {0: None, 1: None, 2: NOW + 2 * MINUTE, 3: None}
    backend.store.close_minute(2, NOW + 3 * MINUTE)
    assert backend.store.checkpoints(SHARDS)[2] == NOW + 3 * MINUTE


def test_given_a_closed_minute_when_reopened_then_the_checkpoint_moves_back_before_it_only(
    backend: Backend,
) -> None:
    backend.store.close_minute(0, NOW + 2 * MINUTE)

    backend.store.reopen_minute(0, NOW + MINUTE)
    backend.store.reopen_minute(0, NOW + 2 * MINUTE)  # never forward again

    assert backend.store.checkpoints(2) == {0: NOW, 1: None}


def test_given_an_opened_minute_when_an_earlier_one_opened_then_opened_through_stays(
    backend: Backend,
) -> None:
    backend.store.open_minute(1, NOW + 2 * MINUTE)

    backend.store.open_minute(1, NOW)

    assert backend.store.opened_through(1) == NOW + 2 * MINUTE
    assert backend.store.opened_through(0) is None
    assert backend.store.checkpoints(SHARDS) == dict.fromkeys(range(SHARDS))  # not closed
    backend.store.open_minute(1, NOW + 3 * MINUTE)
    assert backend.store.opened_through(1) == NOW + 3 * MINUTE


def test_given_instants_within_a_minute_when_opened_and_closed_then_kept_as_that_minute(
    backend: Backend,
) -> None:
    backend.store.open_minute(3, NOW + timedelta(seconds=59, milliseconds=500))
    backend.store.close_minute(3, NOW + timedelta(seconds=1))

    assert backend.store.opened_through(3) == NOW
    assert backend.store.checkpoints(SHARDS)[3] == NOW


def test_given_a_minute_closed_past_the_opened_one_when_read_then_opened_through_it(
    backend: Backend,
) -> None:
    backend.store.open_minute(0, NOW)
    backend.store.close_minute(0, NOW + MINUTE)

    assert backend.store.opened_through(0) == NOW + MINUTE
    assert backend.store.checkpoints(1) == {0: NOW + MINUTE}


def test_given_occurrences_written_in_packs_when_their_minutes_are_read_then_each_comes_back_once(
    backend: Backend,
) -> None:
    """The dispatcher chains jobs on in packs (a write unit per few occurrences); written
    again under the same name (a minute dispatched again) they are the same items."""
    jobs = [a_job() for _ in range(12)]
    occurrences = [
        a_run(job, at=NOW + MINUTE + timedelta(seconds=5 * i)) for i, job in enumerate(jobs)
    ]
    packed = [Occurrence.of(run) for run in occurrences]
    backend.store.put_occurrences([Occurrence.of(a_run(jobs[0], at=NOW))], SHARDS, NOW)  # alone

    backend.store.put_occurrences(packed, SHARDS, NOW, pack="chain-x")
    backend.store.put_occurrences(packed, SHARDS, NOW, pack="chain-x")

    found = [
        o for shard in range(SHARDS) for o in backend.store.occurrences_in(NOW + MINUTE, shard)
    ]
    assert sorted(o.run_id for o in found) == sorted(o.run_id for o in packed)
    for shard in range(SHARDS):
        minute = backend.store.occurrences_in(NOW + MINUTE, shard)
        assert [o.scheduled_at for o in minute] == sorted(o.scheduled_at for o in minute)
    alone = [o for s in range(SHARDS) for o in backend.store.occurrences_in(NOW, s)]
    assert [o.run_id for o in alone] == [a_run(jobs[0], at=NOW).id]


def test_given_two_pages_of_a_minute_chained_under_one_pack_name_when_read_then_neither_overwrites_the_other(
    backend: Backend,
) -> None:
    """The dispatcher chains a minute on page by page, each page's packs named by the minute:
    two pages whose next occurrences begin in the same second are still two packs."""
    first = [Occurrence.of(a_run(a_job(), at=NOW + MINUTE)) for _ in range(3)]
    second = [Occurrence.of(a_run(a_job(), at=NOW + MINUTE)) for _ in range(3)]

    backend.store.put_occurrences(first, 1, NOW, pack="chain-x")
    backend.store.put_occurrences(second, 1, NOW, pack="chain-x")

    found = backend.store.occurrences_in(NOW + MINUTE, 0)
    assert sorted(o.run_id for o in found) == sorted(o.run_id for o in first + second)


def test_given_a_minute_larger_than_a_page_when_read_page_after_page_then_each_occurrence_comes_once_and_the_last_page_says_so(
    backend: Backend,
) -> None:
    jobs = [a_job_on_shard(1) for _ in range(3)]
    written = [occurrence(job.id, timedelta(seconds=second)) for second in range(5) for job in jobs]
    backend.store.put_occurrences(written, SHARDS, NOW)

    read: list[Occurrence] = []
    after: str | None = None
    pages = 0
    while True:
        page, after = backend.store.occurrence_page(NOW, 1, after, 4)
        pages += 1
        read += page
        if after is None:
            break
        assert len(page) == 4

    assert sorted(o.run_id for o in read) == sorted(o.run_id for o in written)
    assert len(read) == len(written)
    assert pages in (4, 5)
    assert backend.store.occurrence_page(NOW, 2, None, 4) == ([], None)


def test_given_progress_within_a_minute_when_recorded_then_read_back_and_forgotten_when_the_minute_is_reopened(
    backend: Backend,
) -> None:
    assert backend.store.progress(SHARDS) == {}

    backend.store.advance_within(2, NOW + MINUTE, "some-key")
    backend.store.advance_within(2, NOW + MINUTE, "a-later-key")

    assert backend.store.progress(SHARDS) == {2: (NOW + MINUTE, "a-later-key")}
    backend.store.reopen_minute(2, NOW + 2 * MINUTE)  # a later minute: progress kept
    assert backend.store.progress(SHARDS) == {2: (NOW + MINUTE, "a-later-key")}
    backend.store.reopen_minute(2, NOW + MINUTE)
    assert backend.store.progress(SHARDS) == {}


# --- Pages ----------------------------------------------------------------------------------


def every_page(fetch: Callable[[Position | None], Page[T]]) -> list[list[T]]:
    """Every page of a listing, following each page's ``after`` to the end."""
    pages, after = [fetch(None)], None
    while pages[-1].after is not None:
        assert pages[-1].after != after, "a page must move the listing on"
        after = pages[-1].after
        pages.append(fetch(after))
    return [p.items for p in pages]


def test_given_jobs_of_two_owners_when_paged_then_the_pages_hold_the_owners_jobs_once_each_oldest_first(
    backend: Backend,
) -> None:
    mine = [a_job(owner="alice", created_at=NOW + n * MINUTE) for n in range(7)]
    for job in [*reversed(mine), a_job(owner="bob", created_at=NOW + 3 * MINUTE)]:
        backend.store.put_new_job(job)

    pages = every_page(lambda after: backend.store.page_jobs("alice", 3, after))

    assert pages == [mine[0:3], mine[3:6], mine[6:]]
    assert every_page(lambda after: backend.store.page_jobs("carol", 3, after)) == [[]]


def test_given_a_whole_number_of_pages_of_jobs_when_paged_then_no_empty_page_follows(
    backend: Backend,
) -> None:
    jobs = [a_job(owner="alice", created_at=NOW + n * MINUTE) for n in range(4)]
    for job in jobs:
        backend.store.put_new_job(job)

    assert every_page(lambda after: backend.store.page_jobs("alice", 2, after)) == [
        jobs[:2],
        jobs[2:],
    ]


def test_given_paused_and_active_jobs_when_paged_keeping_the_paused_then_each_once_in_order(
    backend: Backend,
) -> None:
    jobs = [
        a_job(owner="alice", created_at=NOW + n * MINUTE, state=state)
        for n, state in enumerate([JobState.PAUSED, JobState.ACTIVE] * 2 + [JobState.PAUSED] * 3)
    ]
    for job in jobs:
        backend.store.put_new_job(job)
    paused = [j for j in jobs if j.state is JobState.PAUSED]

    pages = every_page(
        lambda after: backend.store.page_jobs(
            "alice", 2, after, keep=lambda j: j.state is JobState.PAUSED
        )
    )

    assert [j for page in pages for j in page] == paused
    assert all(len(page) <= 2 for page in pages)


def test_given_more_jobs_than_a_page_looks_at_when_paged_through_a_filter_then_short_pages_still_cover_all(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(r, "PAGE_SCAN_LIMIT", 3)
    jobs = [a_job(owner="alice", created_at=NOW + n * MINUTE) for n in range(8)]
    for job in jobs:
        backend.store.put_new_job(job)
    last_two = {jobs[6].id, jobs[7].id}

    pages = every_page(
        lambda after: backend.store.page_jobs("alice", 5, after, keep=lambda j: j.id in last_two)
    )

    assert pages == [[], [], jobs[6:]]


def test_given_runs_of_two_jobs_when_paged_then_the_jobs_runs_once_each_newest_first(
    backend: Backend,
) -> None:
    job, other = a_job(owner="alice"), a_job(owner="alice")
    runs = [a_run(job, NOW + n * MINUTE) for n in range(6)]
    runs.append(a_run(job, NOW + 2 * MINUTE, trigger=Trigger.MANUAL))
    for run in [*runs, a_run(other, NOW + MINUTE)]:
        backend.store.create_run(run, NOW)
    newest_first = sorted(runs, key=lambda r: r.id, reverse=True)

    pages = every_page(lambda after: backend.store.page_runs(job.id, "alice", 3, after))

    assert pages == [newest_first[0:3], newest_first[3:6], newest_first[6:]]


def test_given_runs_when_paged_by_status_and_scheduled_time_then_only_the_matching_in_order(
    backend: Backend,
) -> None:
    job = a_job(owner="alice")
    statuses = [RunStatus.FAILED, RunStatus.SUCCEEDED, RunStatus.TIMED_OUT] * 4
    runs = [a_run(job, NOW + n * MINUTE, status=s) for n, s in enumerate(statuses)]
    for run in runs:
        backend.store.create_run(run, NOW)
    where = RunFilter(
        statuses=frozenset({RunStatus.FAILED, RunStatus.TIMED_OUT}),
        since=NOW + 2 * MINUTE,
        until=NOW + 9 * MINUTE,  # (not included)
    )
    expected = [
        run
        for run in reversed(runs)
        if run.status is not RunStatus.SUCCEEDED and run.scheduled_at >= NOW + 2 * MINUTE
        if run.scheduled_at < NOW + 9 * MINUTE
    ]

    pages = every_page(lambda after: backend.store.page_runs(job.id, "alice", 2, after, where))

    assert [r for page in pages for r in page] == expected
    assert [r.scheduled_at.minute - NOW.minute for r in expected] == [8, 6, 5, 3, 2]


def test_given_a_deleted_jobs_runs_when_paged_then_its_owner_still_sees_them_and_no_one_else(
    backend: Backend,
) -> None:
    job = a_job(owner="alice")
    backend.store.put_new_job(job)
    runs = [a_run(job, NOW + n * MINUTE) for n in range(3)]
    for run in runs:
        backend.store.create_run(run, NOW)
    assert backend.store.delete_job(job.id)

    assert backend.store.page_runs(job.id, "alice", 10).items == runs[::-1]
    assert backend.store.page_runs(job.id, "bob", 10) == Page([], None)
    assert backend.store.page_runs(ids.new_job_id(), "alice", 10) == Page([], None)


# --- Idempotency keys -----------------------------------------------------------------------

STALE = timedelta(seconds=IDEMPOTENCY_STALE_SECONDS)


def test_given_a_new_key_when_claimed_then_taken_and_a_second_claim_sees_it_unanswered(
    backend: Backend,
) -> None:
    assert backend.store.claim_key("k1", "fp", NOW, NOW - STALE) is None

    held = backend.store.claim_key("k1", "fp", NOW, NOW - STALE)

    assert held == KeyRecord("fp", None, NOW)


def test_given_an_answered_key_when_claimed_again_then_its_answer_and_fingerprint(
    backend: Backend,
) -> None:
    backend.store.claim_key("k1", "fp", NOW, NOW - STALE)
    backend.store.answer_key("k1", '{"id": "job_1"}' * 500)

    later = NOW + timedelta(hours=1)
    held = backend.store.claim_key("k1", "other", later, later - STALE)

    assert held == KeyRecord("fp", '{"id": "job_1"}' * 500, NOW)


def test_given_a_key_claimed_long_ago_and_never_answered_when_claimed_with_its_request_then_taken_over(
    backend: Backend,
) -> None:
    backend.store.claim_key("k1", "fp", NOW, NOW - STALE)
    later = NOW + 2 * STALE

    assert backend.store.claim_key("k1", "other", later, later - STALE) == KeyRecord(
        "fp", None, NOW
    )
    assert backend.store.claim_key("k1", "fp", later, later - STALE) is None
    assert backend.store.claim_key("k1", "fp", later, later - STALE) == KeyRecord("fp", None, later)


def test_given_a_released_or_expired_key_when_claimed_then_taken_afresh(backend: Backend) -> None:
    backend.store.claim_key("k1", "fp", NOW, NOW - STALE)
    backend.store.release_key("k1")
    assert backend.store.claim_key("k1", "other", NOW, NOW - STALE) is None
    backend.store.answer_key("k1", "{}")

    expired = NOW + timedelta(seconds=IDEMPOTENCY_KEY_SECONDS)

    assert backend.store.claim_key("k1", "fp", expired, expired - STALE) is None


def test_given_a_key_item_in_the_jobs_table_when_read_as_a_job_then_there_is_none(
    backend: Backend,
) -> None:
    backend.store.claim_key("k1", "fp", NOW, NOW - STALE)

    assert backend.store.get_job("idem#k1") is None
    assert backend.store.get_jobs(["idem#k1"]) == {}
    assert backend.store.page_jobs("alice", 10) == Page([], None)
