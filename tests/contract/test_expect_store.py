"""The store's side of silence (chronoq.domain.silence), on the fakes, moto and the engine: an
expectation's wait moves only forward and never past a silence; a silence is marked once, and
ended once, each with its record written in the same write or not at all; the silent index
holds an owner's silent jobs only; deadlines are found in the minute the dispatcher reads after
them, with the occurrences of that minute."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import ids
from chronoq.domain.runs import Occurrence
from chronoq.domain.silence import (
    Deadline,
    Expectation,
    SilenceEvent,
    SilenceStatus,
    check_minute,
)

from tests.contract.backends import NOW, SHARDS, Backend, a_job, a_run

HOUR = 3600
LATER = NOW + timedelta(minutes=30)


def silent(e: Expectation, owner: str = "alice", at: object = None) -> SilenceEvent:
    return SilenceEvent(
        job_id=e.job_id,
        owner=owner,
        status=SilenceStatus.SILENT,
        within=e.within,
        silent_since=at or e.deadline + timedelta(minutes=2),
        last_success_at=e.last_success_at,
    )


def recovered(e: Expectation, at: object, run_id: str = "run") -> SilenceEvent:
    assert e.silent_since is not None
    return SilenceEvent(
        job_id=e.job_id,
        owner=e.owner,
        status=SilenceStatus.RECOVERED,
        within=e.within,
        silent_since=e.silent_since,
        last_success_at=e.last_success_at,
        recovered_at=at,
        run_id=run_id,
    )


def test_given_no_expectation_when_read_changed_or_succeeded_then_there_is_none(
    backend: Backend,
) -> None:
    store = backend.store

    assert store.get_expectation("job_none") is None
    assert store.get_expectations(["job_none"]) == {}
    assert store.change_expectation("job_none", HOUR) is None
    assert store.record_success("job_none", NOW) is None
    assert store.pause_expectation("job_none", NOW) is None
    store.end_expectation("job_none")
    assert store.get_expectation("job_none") is None


def test_given_an_expectation_when_started_changed_and_ended_then_each_is_kept(
    backend: Backend,
) -> None:
    store = backend.store

    started = store.start_expectation("job_a", HOUR, NOW)
    changed = store.change_expectation("job_a", 2 * HOUR)

    assert started == Expectation(job_id="job_a", within=HOUR, since=NOW)
    assert started.deadline == NOW + timedelta(hours=1)
    assert changed == Expectation(job_id="job_a", within=2 * HOUR, since=NOW)
    assert store.get_expectation("job_a") == changed
    assert store.get_expectations(["job_a", "job_b"]) == {"job_a": changed}
    store.end_expectation("job_a")
    assert store.get_expectation("job_a") is None


def test_given_an_expectation_when_runs_succeed_then_its_wait_moves_only_forward(
    backend: Backend,
) -> None:
    store = backend.store
    store.start_expectation("job_a", HOUR, NOW)
    at = NOW + timedelta(minutes=10, milliseconds=250)

    moved = store.record_success("job_a", at)

    assert moved == Expectation(job_id="job_a", within=HOUR, since=at, last_success_at=at)
    assert store.record_success("job_a", at) is None  # the same success again
    assert store.record_success("job_a", at - timedelta(seconds=1)) is None  # an older one
    assert store.get_expectation("job_a") == moved
    # a new wait (a resume) keeps its last success
    resumed = store.start_expectation("job_a", HOUR, LATER)
    assert (resumed.since, resumed.last_success_at) == (LATER, at)


def test_given_a_silence_marked_from_a_read_when_marked_again_from_it_then_it_is_refused(
    backend: Backend,
) -> None:
    store = backend.store
    read = store.start_expectation("job_a", HOUR, NOW)
    first = silent(read)

    assert store.mark_silent(read, first)
    # another dispatcher that read it at once, a second later: refused, nothing written
    assert not store.mark_silent(read, silent(read, at=first.silent_since + timedelta(seconds=1)))

    kept = store.get_expectation("job_a")
    assert kept is not None
    assert (kept.silent_since, kept.owner, kept.since) == (first.silent_since, "alice", NOW)
    assert store.get_silence("job_a", first.key) == first
    assert store.record_success("job_a", LATER + timedelta(hours=2)) is None  # (silent)


def test_given_an_expectation_that_moved_on_when_marked_silent_from_an_older_read_then_refused(
    backend: Backend,
) -> None:
    store = backend.store
    read = store.start_expectation("job_a", HOUR, NOW)
    store.record_success("job_a", LATER)  # a success meanwhile

    assert not store.mark_silent(read, silent(read))

    store.change_expectation("job_a", 2 * HOUR)  # and a change of its time: refused too
    moved = store.get_expectation("job_a")
    assert moved is not None
    assert not store.mark_silent(moved.model_copy(update={"within": HOUR}), silent(moved))
    assert store.get_silence("job_a", silent(read).key) is None
    paused = store.start_expectation("job_b", HOUR, NOW)
    store.pause_expectation("job_b", LATER)  # a pause meanwhile
    assert not store.mark_silent(paused, silent(paused))


def test_given_a_silence_when_ended_then_it_is_ended_once_and_its_record_written_once(
    backend: Backend,
) -> None:
    store = backend.store
    read = store.start_expectation("job_a", HOUR, NOW)
    store.mark_silent(read, silent(read))
    silent_read = store.get_expectation("job_a")
    assert silent_read is not None
    at = silent_read.deadline + timedelta(minutes=20)

    assert store.end_silence(silent_read, recovered(silent_read, at))
    assert not store.end_silence(silent_read, recovered(silent_read, at + timedelta(seconds=1)))

    kept = store.get_expectation("job_a")
    assert kept == Expectation(job_id="job_a", within=HOUR, since=at, last_success_at=at)
    assert store.get_silence("job_a", recovered(silent_read, at).key) == recovered(silent_read, at)


def test_given_a_silent_job_when_paused_then_its_silence_ends_without_a_record(
    backend: Backend,
) -> None:
    store = backend.store
    read = store.start_expectation("job_a", HOUR, NOW)
    store.mark_silent(read, silent(read))

    paused = store.pause_expectation("job_a", LATER)

    kept = store.get_expectation("job_a")
    assert kept == paused == Expectation(job_id="job_a", within=HOUR, since=LATER)
    assert store.silent_jobs("alice", 10).items == []


def test_given_silent_jobs_of_two_owners_when_each_owner_lists_them_then_only_theirs_longest_first(
    backend: Backend,
) -> None:
    store = backend.store
    for n, (job_id, owner) in enumerate(
        [("job_c", "alice"), ("job_b", "bob"), ("job_a", "alice"), ("job_d", "alice")]
    ):
        read = store.start_expectation(job_id, HOUR, NOW)
        store.mark_silent(read, silent(read, owner, NOW + timedelta(hours=2, minutes=n)))
    store.start_expectation("job_e", HOUR, NOW)  # waiting: not silent

    first = store.silent_jobs("alice", 2)
    rest = store.silent_jobs("alice", 2, first.after)

    assert [e.job_id for e in first.items] == ["job_c", "job_a"]
    assert first.after is not None
    assert ([e.job_id for e in rest.items], rest.after) == (["job_d"], None)
    assert [(e.job_id, e.owner) for e in store.silent_jobs("bob", 10).items] == [("job_b", "bob")]
    assert store.silent_jobs("carol", 10).items == []


def test_given_a_silence_record_when_its_notifications_are_noted_then_they_are_kept(
    backend: Backend,
) -> None:
    store = backend.store
    read = store.start_expectation("job_a", HOUR, NOW)
    event = silent(read)
    store.mark_silent(read, event)

    store.note_notification("job_a", event.key, "sns", "published m-1")
    store.note_notification("job_a", event.key, "webhook", "delivered (HTTP 200, attempt 1)")

    kept = store.get_silence("job_a", event.key)
    assert kept is not None
    assert kept.notifications == {
        "sns": "published m-1",
        "webhook": "delivered (HTTP 200, attempt 1)",
    }
    assert store.get_silence("job_a", "expect#none") is None


def test_given_a_deadline_when_written_then_the_minute_read_after_it_holds_it_with_its_occurrences(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job()
    deadline = Deadline(job_id=job.id, at=NOW + timedelta(hours=1, seconds=30))
    minute = check_minute(deadline.at, NOW)
    shard = ids.shard_of(job.id, SHARDS)
    store.put_occurrences([Occurrence.of(a_run(job, minute))], SHARDS, NOW)
    store.put_deadlines([deadline], SHARDS, NOW)
    store.put_deadlines([deadline], SHARDS, NOW)  # written again: the same item

    page = store.schedule_page(minute, shard, None, 10)
    assert page.deadlines == [deadline]
    assert [o.job_id for o in page.occurrences] == [job.id]
    assert page.after is None
    assert store.occurrence_page(minute, shard, None, 10)[0] == page.occurrences
    assert store.occurrences_in(minute, shard) == page.occurrences
    earlier = minute - timedelta(minutes=1)
    assert store.schedule_page(earlier, shard, None, 10).deadlines == []
    # paged: one item at a time, the deadline on one page, the occurrence on another
    one = store.schedule_page(minute, shard, None, 1)
    assert one.after is not None
    two = store.schedule_page(minute, shard, one.after, 1)
    assert len(one.deadlines + two.deadlines) == 1
    assert len(one.occurrences + two.occurrences) == 1
    # the first minute the dispatcher opens at or after the deadline, and one not yet opened
    assert ids.opened_at(minute) >= deadline.at > ids.opened_at(minute - timedelta(minutes=1))
