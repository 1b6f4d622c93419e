"""The store's side of erasing an owner (chronoq.usecases.erasure), on the fakes, moto and the
engine: a job's partition of the runs table goes whole (runs and backfills) and no other job's
item with it; the owner's own items go and no other owner's."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import inflight
from chronoq.domain.limits import Usage

from tests.contract.backends import NOW, Backend, a_job, a_run
from tests.contract.test_run_features_store import a_backfill


def test_given_runs_and_backfills_of_two_jobs_when_one_jobs_partition_is_erased_then_only_its_items_go(
    backend: Backend,
) -> None:
    store = backend.store
    job, other = a_job(), a_job()
    runs = [a_run(job, NOW + timedelta(minutes=n)) for n in range(3)]
    for run in [*runs, a_run(other)]:
        assert store.create_run(run, NOW)
    store.put_backfill(a_backfill(job.id, "bf1"))

    erased = store.erase_job_partition(job.id)

    assert erased == 4  # three runs and a backfill
    assert all(store.get_run(job.id, run.id) is None for run in runs)
    assert store.get_backfill(job.id, "bf1") is None
    assert store.list_runs(other.id, 10) != []
    assert store.erase_job_partition(job.id) == 0


def test_given_an_owners_items_when_erased_then_they_go_and_another_owners_stay(
    backend: Backend,
) -> None:
    store = backend.store
    for owner in ("alice", "bob"):
        assert store.count_job(owner, 1)
        store.take_in_flight(inflight.item_key(owner), {"b1": 1}, 10, NOW)
        assert store.reserve_reruns(owner, 5, Usage())

    erased = store.erase_owner_items("alice")

    assert erased == 3  # its job count, its usage, its runs in flight
    assert store.job_count("alice") == 0
    assert store.get_in_flight(inflight.item_key("alice")).total == 0
    assert store.get_usage("alice").reruns == 0
    assert store.job_count("bob") == 1
    assert store.get_in_flight(inflight.item_key("bob")).total == 1
    assert store.erase_owner_items("alice") == 0
