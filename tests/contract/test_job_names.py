"""The Store contract of job names (unique per owner: one item of the jobs table per owner
and name, taken with a conditional write) and of the attributes of limited runs, on the fakes
and on DynamoDB."""

from __future__ import annotations

import threading
from datetime import timedelta

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.usecases.names import claim_existing_names

from tests.contract.backends import NOW, Backend, a_job

STALE = timedelta(seconds=r.NAME_STALE_SECONDS + 1)


def test_given_a_free_name_when_claimed_then_taken_and_another_job_is_refused_with_the_holder(
    backend: Backend,
) -> None:
    store = backend.store

    assert store.claim_name("alice", "nightly", "job_a", NOW) is None
    assert store.claim_name("alice", "nightly", "job_b", NOW) == "job_a"
    assert store.claim_name("alice", "nightly", "job_a", NOW) is None  # its own, again
    assert store.claim_name("bob", "nightly", "job_c", NOW) is None  # names are per owner
    assert store.claim_name("alice", "Nightly", "job_d", NOW) is None  # as written


def test_given_owners_and_names_that_join_alike_when_claimed_then_each_is_its_own(
    backend: Backend,
) -> None:
    store = backend.store

    assert store.claim_name("a#b", "c", "job_1", NOW) is None
    assert store.claim_name("a", "b#c", "job_2", NOW) is None
    assert store.claim_name("a#", "b#c", "job_3", NOW) is None


def test_given_a_claimed_name_when_released_by_its_job_then_free_and_by_another_then_kept(
    backend: Backend,
) -> None:
    store = backend.store
    store.claim_name("alice", "nightly", "job_a", NOW)

    store.release_name("alice", "nightly", "job_b")
    assert store.claim_name("alice", "nightly", "job_b", NOW) == "job_a"
    store.release_name("alice", "nightly", "job_a")
    assert store.claim_name("alice", "nightly", "job_b", NOW) is None


def test_given_many_jobs_claiming_one_name_at_once_when_they_race_then_exactly_one_wins(
    backend: Backend,
) -> None:
    store = backend.store
    start = threading.Barrier(8)
    won: list[str] = []

    def claim(job_id: str) -> None:
        start.wait()
        if store.claim_name("alice", "nightly", job_id, NOW) is None:
            won.append(job_id)

    threads = [threading.Thread(target=claim, args=(f"job_{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(won) == 1


def test_given_a_name_whose_job_is_gone_when_claimed_a_while_later_then_taken_over(
    backend: Backend,
) -> None:
    store = backend.store
    store.claim_name("alice", "nightly", "job_gone", NOW)  # (its create died before the job)

    assert store.claim_name("alice", "nightly", "job_b", NOW + timedelta(seconds=5)) == "job_gone"
    assert store.claim_name("alice", "nightly", "job_b", NOW + STALE) is None
    assert store.claim_name("alice", "nightly", "job_c", NOW + STALE) == "job_b"


def test_given_a_name_whose_job_exists_when_claimed_any_time_later_then_refused(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(name="nightly")
    store.put_new_job(job)
    store.claim_name(job.owner, "nightly", job.id, NOW)

    assert store.claim_name(job.owner, "nightly", "job_b", NOW + 100 * STALE) == job.id


def test_given_a_name_whose_job_was_renamed_when_claimed_a_while_later_then_taken_over(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(name="weekly")  # once "nightly": its old name was not released
    store.put_new_job(job)
    store.claim_name(job.owner, "nightly", job.id, NOW)

    assert store.claim_name(job.owner, "nightly", "job_b", NOW + STALE) is None


def test_given_a_claimed_name_when_jobs_are_listed_or_got_then_it_is_no_job(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(name="nightly")
    store.put_new_job(job)
    store.claim_name(job.owner, "nightly", job.id, NOW)

    assert [j.id for j in store.list_jobs(job.owner)] == [job.id]
    assert [j.id for j in store.all_jobs()] == [job.id]


def test_given_jobs_of_several_owners_when_all_are_asked_for_then_every_job(
    backend: Backend,
) -> None:
    store = backend.store
    jobs = [a_job(owner) for owner in ("alice", "bob", "alice")]
    for job in jobs:
        store.put_new_job(job)
    store.count_job("alice", +1)

    assert sorted(j.id for j in store.all_jobs()) == sorted(j.id for j in jobs)


# --- limited runs ------------------------------------------------------------------------------


def test_given_a_limited_job_when_put_saved_and_unlimited_then_its_count_and_last_run_follow(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(max_runs=3, runs_before=1, final_run_at=NOW + timedelta(minutes=2))
    store.put_new_job(job)
    assert store.get_job(job.id) == job

    counted = job.model_copy(update={"runs_before": 2, "version": 2})
    assert store.save_job(counted, expected_version=1)
    assert store.get_job(job.id) == counted

    unlimited = counted.model_copy(
        update={"max_runs": None, "runs_before": 0, "final_run_at": None, "version": 3}
    )
    assert store.save_job(unlimited, expected_version=2)
    assert store.get_job(job.id) == unlimited
    assert store.get_jobs([job.id, ids.new_job_id()]) == {job.id: unlimited}


# --- jobs stored before names were unique ----------------------------------------------------


def test_given_jobs_stored_without_their_names_when_migrated_then_the_oldest_of_each_name_holds_it(
    backend: Backend,
) -> None:
    store = backend.store
    older = a_job(name="nightly")
    newer = a_job(name="nightly", created_at=NOW + timedelta(seconds=1))
    lone = a_job(name="weekly")
    for job in (newer, older, lone):
        store.put_new_job(job)  # (as stored before: no name claimed)

    report = claim_existing_names(store, NOW)

    assert report.names == 2
    assert [(d.owner, d.name, d.job_ids) for d in report.duplicates] == [
        (older.owner, "nightly", (older.id, newer.id))
    ]
    assert store.claim_name(older.owner, "nightly", "job_new", NOW + STALE) == older.id
    assert store.claim_name(lone.owner, "weekly", "job_new", NOW + STALE) == lone.id
