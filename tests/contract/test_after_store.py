"""The store's side of completion triggers (chronoq.domain.after), on the fakes, moto and the
engine: an owner's pipeline graph is written only at the version it was read at (two changes
racing: one wins, the other reads again); an upstream's followers are added and removed without
touching the rest of its item, and survive a change of the job; a fan-in notes each upstream
once however often it arrives; an after job's run is created once; names resolve to the
owner's jobs."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import ids
from chronoq.domain.after import Graph
from chronoq.domain.runs import Priority, Trigger

from tests.contract.backends import NOW, Backend, a_job, a_run

T = NOW - timedelta(hours=1)


def test_given_two_writers_of_one_graph_version_then_only_the_first_is_written(
    backend: Backend,
) -> None:
    store = backend.store
    empty = store.get_graph("alice")
    assert (empty.version, empty.edges) == (0, {})

    first = empty.with_job("job_b", ["job_a"])
    second = empty.with_job("job_a", ["job_b"])  # (checked on the same graph as read)
    assert store.save_graph(first)
    assert not store.save_graph(second)

    kept = store.get_graph("alice")
    assert (kept.version, kept.edges) == (1, {"job_b": frozenset({"job_a"})})
    assert store.save_graph(kept.with_job("job_c", ["job_a", "job_b"]))
    assert not store.save_graph(kept.with_job("job_c", []))
    assert store.get_graph("alice").version == 2
    assert store.get_graph("bob") == Graph(owner="bob")


def test_given_followers_when_added_and_removed_then_the_job_keeps_the_rest(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job()
    store.put_new_job(job)

    store.follow(job.id, add=["job_x", "job_y"])
    store.follow(job.id, add=["job_x"], remove=["job_y"])
    changed = job.model_copy(update={"version": 2, "priority": Priority.HIGH})
    assert store.save_job(changed, expected_version=1)

    kept = store.get_job(job.id)
    assert kept is not None
    assert (kept.followed_by, kept.version, kept.priority) == (
        frozenset({"job_x"}),
        2,
        Priority.HIGH,
    )
    store.follow(job.id, remove=["job_x"])
    assert store.get_job(job.id).followed_by == frozenset()  # type: ignore[union-attr]
    store.follow("job_gone", add=["job_x"])  # (nothing: no such job)
    assert store.get_job("job_gone") is None


def test_given_upstreams_arriving_twice_and_out_of_order_then_each_is_noted_once(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.get_fanin("job_d", T) is None

    store.arrive("job_d", T, "job_b", "run_b", NOW)
    store.arrive("job_d", T, "job_a", "run_a", NOW + timedelta(seconds=5))
    again = store.arrive("job_d", T, "job_b", "run_b", NOW + timedelta(seconds=9))

    assert again.arrived == {"job_a", "job_b"}
    assert again.runs == {"run_a", "run_b"}
    assert again.first_at == NOW
    assert again.complete(["job_a", "job_b"])
    assert store.get_fanin("job_d", T) == again
    other = store.arrive("job_d", T + timedelta(hours=1), "job_a", "run_a2", NOW)
    assert other.arrived == {"job_a"}


def test_given_an_after_run_when_created_twice_then_it_is_created_once(backend: Backend) -> None:
    store = backend.store
    job = a_job()
    store.put_new_job(job)
    run = a_run(job, T, trigger=Trigger.AFTER).model_copy(
        update={
            "id": ids.after_run_id(job.id, T),
            "triggered_by": ["run_a", "run_b"],
            "cascade": True,
        }
    )

    assert store.create_run(run, NOW)
    assert not store.create_run(run, NOW)

    kept = store.get_run(job.id, run.id)
    assert kept is not None
    assert (kept.trigger, kept.triggered_by, kept.scheduled_at, kept.cascade) == (
        Trigger.AFTER,
        ["run_a", "run_b"],
        T,
        True,
    )


def test_given_a_name_held_then_it_resolves_to_its_job(backend: Backend) -> None:
    store = backend.store
    assert store.claim_name("alice", "extract", "job_x", NOW) is None
    assert store.job_named("alice", "extract") == "job_x"
    assert store.job_named("bob", "extract") is None
    assert store.job_named("alice", "other") is None


def test_given_a_fan_in_wait_and_a_success_deadline_of_one_job_then_the_minute_holds_both(
    backend: Backend,
) -> None:
    """An after job's wait is an entry of the time index beside a success deadline (its key
    its own: the instant), found in the minute the dispatcher reads after it."""
    from chronoq.domain.silence import Deadline, check_minute

    from tests.contract.backends import SHARDS

    store = backend.store
    at = NOW + timedelta(minutes=10)
    waits = [
        Deadline(job_id="job_d", at=at),
        Deadline(job_id="job_d", at=at, instant=T),
        Deadline(job_id="job_d", at=at, instant=T + timedelta(hours=1)),
    ]
    store.put_deadlines(waits, SHARDS, NOW)

    minute = check_minute(at, NOW)
    page = store.schedule_page(minute, ids.shard_of("job_d", SHARDS), None, 100)
    assert sorted(page.deadlines, key=lambda d: str(d.instant)[:19]) == sorted(
        waits, key=lambda d: str(d.instant)[:19]
    )


def test_given_an_owners_graph_when_the_owner_is_erased_then_it_is_gone(backend: Backend) -> None:
    store = backend.store
    assert store.save_graph(Graph(owner="alice").with_job("job_b", ["job_a"]))
    assert store.save_graph(Graph(owner="bob").with_job("job_d", ["job_c"]))

    assert store.erase_owner_items("alice") >= 1

    assert store.get_graph("alice") == Graph(owner="alice")
    assert store.get_graph("bob").edges == {"job_d": frozenset({"job_c"})}
