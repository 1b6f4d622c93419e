"""The store's side of windows, flows, backfills and re-runs, on the fakes and on DynamoDB:
the time index keeps a windowed occurrence at its planned start, a flow's item is written
only at the version read, a held run is recorded once, backfills are kept in their job's
partition of the runs table without ever being taken for runs."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import ids
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.flow import FlowState
from chronoq.domain.runs import Occurrence, Priority, RunStatus, Trigger
from chronoq.domain.schedules import CronSchedule

from tests.contract.backends import NOW, SHARDS, Backend, a_job, a_run

KEY = "flow#0123456789abcdef0123456789abcdef01234567"


def test_given_a_windowed_occurrence_when_written_then_it_is_read_back_from_the_minute_it_starts_in(
    backend: Backend,
) -> None:
    job = a_job()
    fire = NOW.replace(second=0) + timedelta(minutes=2)
    offset = 150  # two and a half minutes after its fire time
    occurrence = Occurrence(
        job_id=job.id,
        run_id=ids.run_id(job.id, fire, 1, offset),
        scheduled_at=fire,
        priority=job.priority,
    )
    shard = ids.shard_of(job.id, SHARDS)

    backend.store.put_occurrences([occurrence], SHARDS, NOW)

    assert backend.store.occurrences_in(fire, shard) == []
    (found,) = backend.store.occurrences_in(fire + timedelta(seconds=offset), shard)
    assert (found.run_id, found.scheduled_at, found.starts_at) == (
        occurrence.run_id,
        fire,
        fire + timedelta(seconds=offset),
    )
    # as a pack (the dispatcher chaining jobs on), the same
    packed = a_job()
    chained = occurrence.model_copy(
        update={"job_id": packed.id, "run_id": ids.run_id(packed.id, fire, 1, offset)}
    )
    backend.store.put_occurrences([chained], SHARDS, NOW, pack="chain-x")
    in_its_minute = backend.store.occurrences_in(chained.starts_at, ids.shard_of(packed.id, SHARDS))
    assert chained.run_id in [o.run_id for o in in_its_minute]


def test_given_no_flow_item_when_read_then_it_is_empty_at_version_0_and_a_first_write_creates_it(
    backend: Backend,
) -> None:
    store = backend.store
    empty = store.get_flow(KEY)

    assert empty == FlowState()
    assert store.save_flow(KEY, empty, FlowState({"r1": 100}, 100, 1, 0), NOW)
    assert store.get_flow(KEY) == FlowState({"r1": 100}, 100, 1, 1)
    assert not store.save_flow(KEY, empty, FlowState({"r2": 100}, 100, 1, 0), NOW)  # exists now


def test_given_a_flow_item_when_written_at_an_older_version_then_it_is_refused_and_left_as_it_was(
    backend: Backend,
) -> None:
    store = backend.store
    store.save_flow(KEY, FlowState(), FlowState({"r1": 100}, 100, 1), NOW)
    read = store.get_flow(KEY)
    assert store.save_flow(KEY, read, FlowState({"r1": 100, "r2": 101}, 101, 1, 1), NOW)

    stale = store.save_flow(KEY, read, FlowState({"r1": 100, "r3": 101}, 101, 1, 1), NOW)

    assert not stale
    assert store.get_flow(KEY) == FlowState({"r1": 100, "r2": 101}, 101, 1, 2)


def test_given_a_flow_item_when_a_run_gives_its_slot_back_meanwhile_then_a_write_at_the_version_read_keeps_it_given_back(
    backend: Backend,
) -> None:
    """A run's end (the state machine) takes its holder out without changing the version: a
    worker that read the item before still writes, only what it adds and removes."""
    store = backend.store
    store.save_flow(KEY, FlowState(), FlowState({"r1": 100, "r2": 100}, 0, 0), NOW)
    read = store.get_flow(KEY)

    store.release_flow(KEY, "r1")
    store.release_flow(KEY, "r1")  # (twice: harmless)
    assert store.save_flow(KEY, read, FlowState({"r1": 100, "r3": 105}, 0, 0, 1), NOW)

    # r1, given back meanwhile, stays given back; r2 taken out, r3 added
    assert dict(store.get_flow(KEY).holders) == {"r3": 105}
    store.release_flow(KEY + "0", "r1")  # an item that does not exist: nothing made
    assert store.get_flow(KEY + "0") == FlowState()


def test_given_a_run_that_waits_for_its_flow_when_held_then_its_record_is_made_once_with_when_it_began_to_wait(
    backend: Backend,
) -> None:
    job = a_job()
    run = a_run(job)

    assert backend.store.hold_run(run, NOW, "its flow's rate", NOW)
    assert not backend.store.hold_run(run, NOW + timedelta(seconds=5), "its flow's rate", NOW)

    kept = backend.store.get_run(job.id, run.id)
    assert kept is not None
    assert (kept.status, kept.held_at, kept.owner, kept.scheduled_at) == (
        RunStatus.SCHEDULED,
        NOW,
        job.owner,
        run.scheduled_at,
    )
    manual = a_run(job, trigger=Trigger.MANUAL)
    backend.store.create_run(manual, NOW)
    assert backend.store.hold_run(
        manual, NOW, "its flow's rate", NOW
    )  # recorded SCHEDULED: it notes the wait
    backend.store.end_run(manual, RunStatus.CANCELLED, NOW, "x", [RunStatus.SCHEDULED])
    other = a_run(job, at=NOW + timedelta(hours=1))
    backend.store.create_run(other.model_copy(update={"status": RunStatus.RUNNING}), NOW)
    assert not backend.store.hold_run(other, NOW, "its flow's rate", NOW)  # running: untouched


def test_given_runs_parked_on_a_flow_when_the_flow_asks_for_its_next_ones_then_they_come_highest_priority_first_then_longest_waiting_and_leave_as_they_start_or_end(
    backend: Backend,
) -> None:
    job = a_job()
    low = a_run(job, at=NOW).model_copy(update={"priority": Priority.LOW})
    old = a_run(job, at=NOW + timedelta(minutes=1))
    high = a_run(job, at=NOW + timedelta(minutes=2)).model_copy(update={"priority": Priority.HIGH})
    new = a_run(job, at=NOW + timedelta(minutes=3))
    for n, run in enumerate((low, old, high, new)):
        assert backend.store.park_run(run, NOW + timedelta(seconds=n), KEY, "a slot", NOW)
    assert backend.store.park_run(
        old, NOW + timedelta(hours=1), KEY, "a slot", NOW
    )  # again: its place kept

    assert [r.id for r in backend.store.waiting_runs(KEY, 10)] == [high.id, old.id, new.id, low.id]
    assert [r.id for r in backend.store.waiting_runs(KEY, 2)] == [high.id, old.id]
    assert backend.store.waiting_runs(KEY + "0", 10) == []
    kept = backend.store.get_run(job.id, old.id)
    assert kept is not None
    assert (kept.status, kept.held_at) == (RunStatus.SCHEDULED, NOW + timedelta(seconds=1))
    assert kept.waiting_for == "a slot"  # why it waits, shown to its owner

    backend.store.end_run(high, RunStatus.CANCELLED, NOW, "x", [RunStatus.SCHEDULED])
    ended = backend.store.get_run(job.id, high.id)
    assert ended is not None
    assert (ended.waiting_for, ended.wait_reason) == (None, None)
    backend.state_machine_writes(job.id, old.id, status=RunStatus.RUNNING)
    assert [r.id for r in backend.store.waiting_runs(KEY, 10)] == [new.id, low.id]
    assert not backend.store.park_run(high, NOW, KEY, "a slot", NOW)  # ended: not parked again
    assert not backend.store.park_run(old, NOW, KEY, "a slot", NOW)  # running
    assert [r.id for r in backend.store.waiting_runs(KEY, 10)] == [new.id, low.id]


def test_given_manual_runs_of_a_job_when_its_waiting_triggers_are_counted_then_only_those_not_started_since_the_instant_count_among_the_newest(
    backend: Backend,
) -> None:
    job = a_job()
    made = []
    for n, status in enumerate(
        [RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUCCEEDED]
    ):
        run = a_run(job, at=NOW + timedelta(seconds=n), trigger=Trigger.MANUAL)
        backend.store.create_run(run.model_copy(update={"status": status}), NOW)
        made.append(run)
    old = a_run(job, at=NOW - timedelta(hours=1), trigger=Trigger.MANUAL)
    backend.store.create_run(old, NOW)  # before the instant: not counted
    backend.store.create_run(a_run(job, at=NOW + timedelta(seconds=9)), NOW)  # scheduled

    assert backend.store.count_waiting_triggers(job.id, NOW, 100) == 2
    assert backend.store.count_waiting_triggers(job.id, NOW - timedelta(hours=2), 100) == 3
    # the newest 4 runs: the scheduled one, then SUCCEEDED, RUNNING, QUEUED
    assert backend.store.count_waiting_triggers(job.id, NOW, 4) == 1
    assert backend.store.count_waiting_triggers(a_job().id, NOW, 100) == 0


def test_given_backfill_and_rerun_runs_when_recorded_then_they_keep_what_made_them(
    backend: Backend,
) -> None:
    job = a_job()
    rerun = a_run(job, trigger=Trigger.RERUN).model_copy(
        update={"rerun_of": "job_x_20261126T120000Z", "queued_at": NOW}
    )
    backfill = a_run(job, trigger=Trigger.BACKFILL).model_copy(
        update={"backfill_id": "bf0123", "queued_at": NOW}
    )

    for run in (rerun, backfill):
        backend.store.create_run(run, NOW)

    assert backend.store.get_run(job.id, rerun.id) == rerun
    assert backend.store.get_run(job.id, backfill.id) == backfill


def a_backfill(job_id: str, backfill_id: str, owner: str = "alice") -> Backfill:
    return Backfill(
        id=backfill_id,
        job_id=job_id,
        owner=owner,
        start=NOW - timedelta(hours=2),
        to=NOW,
        state=BackfillState.RUNNING,
        total=12,
        max_in_flight=10,
        schedule=CronSchedule(type="cron", expression="*/10 * * * *"),
        created_at=NOW,
    )


def test_given_backfills_of_a_job_when_kept_then_they_are_got_and_listed_newest_first_and_never_taken_for_runs(
    backend: Backend,
) -> None:
    job = a_job()
    backend.store.put_new_job(job)
    run = a_run(job)
    backend.store.create_run(run, NOW)
    older, newer = a_backfill(job.id, "bf0000000001aaaa"), a_backfill(job.id, "bf0000000002bbbb")
    for backfill in (older, newer):
        backend.store.put_backfill(backfill)
    backend.store.put_backfill(a_backfill(a_job().id, "bf0000000003cccc"))  # another job's

    assert backend.store.get_backfill(job.id, older.id) == older
    assert backend.store.get_backfill(job.id, "bf0000000009zzzz") is None
    page = backend.store.page_backfills(job.id, "alice", 1)
    assert [b.id for b in page.items] == [newer.id]
    assert page.after is not None
    rest = backend.store.page_backfills(job.id, "alice", 1, page.after)
    assert [b.id for b in rest.items] == [older.id]
    assert backend.store.page_backfills(job.id, "bob", 10).items == []
    # the job's runs are its runs only
    assert [r.id for r in backend.store.list_runs(job.id, 10)] == [run.id]
    assert [r.id for r in backend.store.page_runs(job.id, "alice", 10).items] == [run.id]


def test_given_a_running_backfill_when_ended_then_it_takes_its_state_once(
    backend: Backend,
) -> None:
    job = a_job()
    backfill = a_backfill(job.id, "bf0000000001aaaa")
    backend.store.put_backfill(backfill)

    assert backend.store.end_backfill(backfill, BackfillState.CANCELLED, NOW)
    assert not backend.store.end_backfill(backfill, BackfillState.COMPLETED, NOW)

    kept = backend.store.get_backfill(job.id, backfill.id)
    assert kept is not None
    assert (kept.state, kept.finished_at) == (BackfillState.CANCELLED, NOW)
