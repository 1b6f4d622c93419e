"""The dispatcher on moto: the handler as EventBridge invokes it, and the dispatching rules
with a controlled clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import JobSpec, JobState
from chronoq.fakes import FakeClock

from tests.builders import Wiring, job_spec
from tests.integration.conftest import Harness
from tests.support import load_event


def spec(schedule: dict[str, str], priority: str = "normal") -> JobSpec:
    return job_spec(schedule, priority=priority)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 11, 25, 21, 47, 30, tzinfo=UTC))


@pytest.fixture
def service(harness: Harness, clock: FakeClock) -> Wiring:
    harness.nothing_to_catch_up(clock.now)
    return harness.wiring(clock)


def test_given_the_tick_event_when_the_handler_runs_then_the_coming_minute_is_enqueued(
    harness: Harness,
) -> None:
    harness.nothing_to_catch_up()
    service = harness.wiring()
    job = service.jobs.create_job(
        "alice", spec({"type": "at", "at": (harness.now() + timedelta(seconds=30)).isoformat()})
    )

    stored = service.store.get_job(job.id)

    report = harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))

    assert report["dispatched"] == 1
    assert [b["run_id"] for b in harness.bodies()] == [ids.run_id(job.id, job.next_run_at)]  # type: ignore[arg-type]
    assert harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))["dispatched"] == 0
    # the job item is not written: once its time has passed, it reads COMPLETED
    assert service.store.get_job(job.id) == stored
    assert job.next_run_at is not None
    later = harness.wiring(FakeClock(job.next_run_at + timedelta(seconds=1)))
    assert later.jobs.get_job("alice", job.id).state == JobState.COMPLETED


def test_given_a_run_inside_the_dispatched_window_when_created_then_it_goes_straight_to_sqs(
    harness: Harness, service: Wiring, clock: FakeClock
) -> None:
    service.dispatcher.dispatch()  # every shard has now dispatched through 21:48
    job = service.jobs.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:20Z"}))

    assert [b["run_id"] for b in harness.bodies()] == [ids.run_id(job.id, job.next_run_at)]  # type: ignore[arg-type]
    # The dispatcher does not send it again when its minute comes round.
    clock.now += timedelta(minutes=1)
    service.dispatcher.dispatch()
    assert len(harness.bodies()) == 1


def test_given_many_due_runs_when_dispatched_then_sqs_is_called_in_batches(
    harness: Harness, service: Wiring
) -> None:
    for _ in range(25):
        service.jobs.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:05Z"}))
    batches = harness.record("sqs", "SendMessageBatch")

    report = service.dispatcher.dispatch()

    calls = [len(batch["Entries"]) for batch in batches]

    assert report.dispatched == 25
    assert sum(calls) == 25
    assert max(calls) <= 10
    assert len(calls) <= 25 // 10 + service.shards


def test_given_a_recurring_job_when_the_dispatcher_chains_it_on_then_its_item_is_not_written_and_its_next_run_is_answered_as_of_now(
    harness: Harness, service: Wiring, clock: FakeClock
) -> None:
    job = service.jobs.create_job("alice", spec({"type": "cron", "expression": "* * * * *"}))
    stored = service.store.get_job(job.id)
    assert job.next_run_at == datetime(2026, 11, 25, 21, 48, tzinfo=UTC)

    service.dispatcher.dispatch()  # sends 21:48, and plans 21:49 in the time index

    assert [b["run_id"] for b in harness.bodies()] == [ids.run_id(job.id, job.next_run_at)]
    following = datetime(2026, 11, 25, 21, 49, tzinfo=UTC)
    shard = ids.shard_of(job.id, service.shards)
    assert [o.run_id for o in service.store.occurrences_in(following, shard)] == [
        ids.run_id(job.id, following)
    ]
    assert service.store.get_job(job.id) == stored  # the job item is left as it was
    clock.now = datetime(2026, 11, 25, 21, 48, 30, tzinfo=UTC)
    assert service.jobs.get_job("alice", job.id).next_run_at == following
    assert [j.next_run_at for j in service.jobs.list_jobs("alice")] == [following]


def test_given_a_rules_event_naming_a_group_of_shards_when_the_handler_runs_then_only_those_shards_are_dispatched(
    harness: Harness,
) -> None:
    # (what a rule of the stack sends: its constant input, the group's shards)
    event = load_event("dispatcher/group")
    harness.nothing_to_catch_up()
    store = harness.wiring().store
    before = store.checkpoints(r.DEFAULT_SHARDS)

    report = harness.invoke(r.DISPATCHER_FUNCTION, event)

    assert sorted(int(s) for s in report["per_shard"]) == event["shards"]
    assert report["unfinished"] == []
    after = store.checkpoints(r.DEFAULT_SHARDS)
    moved = {s for s in range(r.DEFAULT_SHARDS) if after[s] != before[s]}
    assert moved == set(event["shards"])
