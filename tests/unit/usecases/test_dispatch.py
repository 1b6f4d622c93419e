"""The dispatcher and the time index on the fakes: each shard's minutes enqueued from its
checkpoint, every job chained on to its next occurrence, occurrences past their start
deadline MISSED, those of paused, deleted or rescheduled jobs dropped.

Why this module is long: the dispatcher is one use case with many cases (chaining on, outages
and catch-up, start deadlines, paused, deleted and rescheduled jobs, what it does not write,
packs, the second each run is sent), each a short test over the same fakes."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import JobPatch, JobState
from chronoq.domain.runs import Priority, RunMessage, RunStatus
from chronoq.fakes import FakeQueues, FakeStore

from tests.builders import OWNER, Fakes, at, job_spec
from tests.unit.usecases.helpers import (
    CountingStore,
    RacingStore,
    a_change_that_lost,
    occurrences_of,
    sent_run_ids,
    stored_job,
)


def t(hour: int, minute: int, second: int = 0, day: int = 25) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def fakes(fakes: Fakes) -> Fakes:
    """The fakes, the clock at 21:47:30 (no shard has dispatched anything yet)."""
    fakes.clock.set(t(21, 47, 30))
    return fakes


def cron(expression: str, **extra: Any) -> dict[str, Any]:
    return {"type": "cron", "expression": expression, **extra}


def test_given_a_due_at_job_when_dispatched_then_its_run_is_enqueued_and_the_job_completes(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48))))

    report = fakes.dispatcher.dispatch()

    assert report.dispatched == 1
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48))]
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 48)  # not yet due
    fakes.clock.set(t(21, 48, 1))  # once its only fire time has passed
    done = fakes.jobs.get_job(OWNER, job.id)
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert fakes.dispatcher.dispatch().dispatched == 0
    assert len(fakes.queues.sent) == 1


def test_given_a_cron_job_when_its_minute_is_dispatched_then_the_next_occurrence_is_written(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/10 * * * *")))
    assert job.next_run_at == t(21, 50)

    fakes.clock.set(t(21, 49, 5))  # dispatches 21:49 and 21:50
    report = fakes.dispatcher.dispatch()

    assert (report.dispatched, report.scheduled) == (1, 1)
    assert [o.scheduled_at for o in occurrences_of(fakes, job)] == [t(21, 50), t(22, 0)]
    assert fakes.runs.list_runs(OWNER, job.id) == []  # recorded when they start
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 50))]
    assert stored_job(fakes, job) == job  # the job item is not written


def test_given_a_job_with_a_notify_block_when_chained_on_then_its_next_run_is_marked_notify_too(
    fakes: Fakes,
) -> None:
    notify = {"on": ["SUCCEEDED"], "email": "oncall@example.com"}
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/10 * * * *"), notify=notify))
    plain = fakes.jobs.create_job(OWNER, job_spec(cron("*/10 * * * *")))
    fakes.clock.set(t(21, 49, 5))  # dispatches 21:50, writes 22:00
    fakes.dispatcher.dispatch()
    fakes.queues.take()

    fakes.clock.set(t(21, 59, 5))  # dispatches 22:00, the chained occurrences
    fakes.dispatcher.dispatch()
    fakes.clock.set(t(22, 0))
    for sent in fakes.queues.take():
        assert fakes.starter.start_run(sent) == "started"

    started = {i.job_id: i for i in fakes.executor.started.values() if "T2200" in i.run_id}
    # the state machine writes the mark with the run's record
    assert started[job.id].notify is True
    assert started[plain.id].notify is False


def test_given_a_dispatched_minute_when_dispatching_again_then_nothing_is_sent_twice(
    fakes: Fakes,
) -> None:
    fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48, 40))))

    first = fakes.dispatcher.dispatch()
    second = fakes.dispatcher.dispatch()

    assert (first.dispatched, second.dispatched, second.minutes) == (1, 0, 0)
    assert len(fakes.queues.sent) == 1


def test_given_priorities_when_dispatched_then_each_run_goes_to_its_priority_queue_delayed_by_its_lead(
    fakes: Fakes,
) -> None:
    jobs = {
        p: fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48, 10)), priority=p.value))
        for p in Priority
    }

    fakes.dispatcher.dispatch()

    sent = {s.priority: s for s in fakes.queues.sent}
    assert len(fakes.queues.sent) == 3
    assert {p: s.message.run_id for p, s in sent.items()} == {
        p: ids.run_id(job.id, t(21, 48, 10)) for p, job in jobs.items()
    }
    # due in 40 s: each is held back until its priority's lead before that
    assert {p: s.delay_seconds for p, s in sent.items()} == {
        p: 40 - r.DISPATCH_LEAD_SECONDS[p.value] for p in Priority
    }
    assert [m.run_id for m in fakes.queues.take()] == [
        ids.run_id(jobs[p].id, t(21, 48, 10)) for p in Priority
    ]


def test_given_a_run_inside_the_dispatched_window_when_created_then_it_goes_straight_to_the_queue(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()  # every shard has now dispatched through 21:48
    job = fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48, 20))))

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48, 20))]
    assert fakes.queues.sent[0].delay_seconds == 50 - r.DISPATCH_LEAD_SECONDS["normal"]
    # The dispatcher does not send it again when its minute comes round.
    fakes.clock.advance(60)
    fakes.dispatcher.dispatch()
    assert len(fakes.queues.sent) == 1


def test_given_a_recurring_job_created_inside_the_dispatched_window_when_sent_at_once_then_it_is_chained_on(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()  # through 21:48

    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))  # first fire 21:48

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48))]
    assert [o.scheduled_at for o in occurrences_of(fakes, job)] == [t(21, 48), t(21, 49)]
    assert stored_job(fakes, job) == job  # next_run_at stays its first occurrence, 21:48


def test_given_a_job_rescheduled_into_the_dispatched_window_when_saved_then_its_new_run_goes_straight_to_the_queue(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(t(22, 30))))
    fakes.dispatcher.dispatch()  # through 21:48

    changed = fakes.jobs.update_job(
        OWNER, job.id, JobPatch.model_validate({"schedule": at(t(21, 48, 20))})
    )

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48, 20), generation=2)]
    assert [(o.scheduled_at, o.generation) for o in occurrences_of(fakes, job)] == [
        (t(21, 48, 20), 2),
        (t(22, 30), 1),
    ]
    assert fakes.runs.list_runs(OWNER, job.id) == []
    assert changed.generation == 2
    fakes.clock.set(t(21, 48, 21))  # its only fire time (the new one) has passed
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED


def test_given_an_outage_when_dispatching_resumes_then_every_missed_minute_is_processed_in_order(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    sent_before = len(fakes.queues.sent)  # 21:48 was already dispatched: sent straight away

    fakes.clock.set(t(21, 53, 30))  # no tick for five minutes
    report = fakes.dispatcher.dispatch()

    assert report.minutes == 6 * fakes.shards  # 21:49 .. 21:54 on every shard
    assert sent_run_ids(fakes)[sent_before:] == [
        ids.run_id(job.id, t(21, m)) for m in range(49, 55)
    ]
    assert occurrences_of(fakes, job)[-1].scheduled_at == t(21, 55)  # chained on
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 54)  # the next to run
    assert fakes.store.checkpoints(fakes.shards) == dict.fromkeys(range(fakes.shards), t(21, 54))


def test_given_many_due_runs_when_dispatched_then_the_queues_are_sent_them_in_batches(
    fakes: Fakes,
) -> None:
    for _ in range(25):
        fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48, 5))))

    report = fakes.dispatcher.dispatch()

    assert report.dispatched == 25
    assert sum(report.per_shard.values()) == 25
    assert len(fakes.queues.sent) == 25
    # one send per shard and minute, not one per run
    assert fakes.queues.requests <= 25 // 10 + fakes.shards


def test_given_an_outage_longer_than_the_start_deadline_when_dispatching_resumes_then_older_runs_are_missed(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *"), start_deadline_seconds=150))
    sent_before = len(fakes.queues.sent)

    fakes.clock.set(t(21, 54, 30))  # dispatching stopped at 21:48
    report = fakes.dispatcher.dispatch()

    runs = {x.scheduled_at.minute: x for x in fakes.runs.list_runs(OWNER, job.id, limit=100)}
    # 150 s before 21:54:30 is 21:52:00: 21:49 .. 21:51 are too late, 21:52 on still run.
    # The missed ones are recorded (from nothing); those sent are not (yet).
    assert sorted(runs) == [49, 50, 51]
    assert [runs[m].status for m in (49, 50, 51)] == [RunStatus.MISSED] * 3
    assert [(runs[m].id, runs[m].owner, runs[m].generation) for m in (49, 50, 51)] == [
        (ids.run_id(job.id, t(21, m)), OWNER, 1) for m in (49, 50, 51)
    ]
    assert runs[49].reason == "could not start within start_deadline_seconds (150 s)"
    assert runs[49].finished_at == t(21, 54, 30)
    assert sent_run_ids(fakes)[sent_before:] == [
        ids.run_id(job.id, t(21, m)) for m in range(52, 56)
    ]
    assert report.missed == 3
    assert occurrences_of(fakes, job)[-1].scheduled_at == t(21, 56)
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 55)


def test_given_an_outage_of_hours_when_dispatching_resumes_then_each_tick_catches_up_at_most_an_hour(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))  # deadline 900 s
    sent_before = len(fakes.queues.sent)

    fakes.clock.set(t(0, 47, 30, day=26))  # three hours without a tick
    first = fakes.dispatcher.dispatch()

    assert first.minutes == r.MAX_CATCH_UP_MINUTES * fakes.shards
    assert (first.dispatched, first.missed) == (0, r.MAX_CATCH_UP_MINUTES)
    assert fakes.store.checkpoints(fakes.shards) == dict.fromkeys(range(fakes.shards), t(22, 48))
    assert occurrences_of(fakes, job)[-1].scheduled_at == t(22, 49)

    later = [fakes.dispatcher.dispatch() for _ in range(3)]

    # 21:49 .. 00:32 are past the deadline of 00:32:30; 00:33 .. 00:48 still run
    assert first.missed + sum(x.missed for x in later) == 11 + 60 + 60 + 33
    assert sent_run_ids(fakes)[sent_before:] == [
        ids.run_id(job.id, t(0, m, day=26)) for m in range(33, 49)
    ]
    assert later[-1].minutes == 0
    assert occurrences_of(fakes, job)[-1].scheduled_at == t(0, 49, day=26)
    assert len(fakes.runs.list_runs(OWNER, job.id, limit=1000)) == 11 + 60 + 60 + 33  # MISSED
    assert stored_job(fakes, job) == job  # never written while it went on


def test_given_a_cron_with_an_end_when_its_last_occurrence_is_dispatched_then_the_job_completes(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/1 * * * *", end_at="2026-11-25T21:49:00Z")))

    fakes.clock.set(t(21, 48, 30))
    fakes.dispatcher.dispatch()

    fakes.clock.set(t(21, 49, 1))  # its last fire time has passed
    done = fakes.jobs.get_job(OWNER, job.id)
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert [o.scheduled_at.minute for o in occurrences_of(fakes, job)] == [48, 49]
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, m)) for m in (48, 49)]


def test_given_a_paused_job_when_its_minute_is_dispatched_then_nothing_is_sent(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    fakes.jobs.pause_job(OWNER, job.id)

    fakes.clock.set(t(21, 48, 30))
    report = fakes.dispatcher.dispatch()

    assert report.dispatched == 0
    assert fakes.queues.sent == []
    assert fakes.runs.list_runs(OWNER, job.id) == []
    assert stored_job(fakes, job).next_run_at is None  # not chained on either


def test_given_a_deleted_job_when_its_minute_is_dispatched_then_nothing_is_sent(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    fakes.jobs.delete_job(OWNER, job.id)

    fakes.clock.set(t(21, 48, 30))
    report = fakes.dispatcher.dispatch()

    assert (report.dispatched, report.scheduled) == (0, 0)
    assert fakes.queues.sent == []
    assert fakes.store.runs == {}


def test_given_a_rescheduled_job_when_its_old_minute_is_dispatched_then_only_the_new_occurrence_is_sent(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(t(21, 48, 10))))
    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"schedule": at(t(21, 48, 40))}))

    report = fakes.dispatcher.dispatch()

    assert report.dispatched == 1
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48, 40), generation=2)]
    assert fakes.store.get_run(job.id, ids.run_id(job.id, t(21, 48, 10))) is None


def test_given_a_job_paused_then_resumed_when_dispatching_catches_up_then_no_missed_occurrence_is_sent_or_recorded(
    fakes: Fakes,
) -> None:
    fakes.dispatcher.dispatch()  # through 21:48
    job = fakes.jobs.create_job(OWNER, job_spec(cron("*/5 * * * *")))  # next 21:50
    fakes.jobs.pause_job(OWNER, job.id)

    fakes.clock.set(t(22, 31))  # eight fire times went by, and no tick
    resumed = fakes.jobs.resume_job(OWNER, job.id)
    report = fakes.dispatcher.dispatch()  # 21:49 .. 22:32: the old 21:50 item is in there

    assert resumed.next_run_at == t(22, 35)
    assert (report.dispatched, report.missed) == (0, 0)
    assert fakes.queues.sent == []
    fakes.clock.set(t(22, 34, 30))
    fakes.dispatcher.dispatch()
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(22, 35), resumed.generation)]
    assert fakes.runs.list_runs(OWNER, job.id) == []  # the old 21:50 was not recorded MISSED


class FailingQueues(FakeQueues):
    """Queues that refuse the next ``failures`` sends."""

    failures: int = 0

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("SQS throttled")
        return super().send(messages, now)


def test_given_a_job_rescheduled_into_the_dispatched_window_when_sqs_fails_then_the_next_tick_sends_its_run() -> (
    None
):
    queues = FailingQueues()
    fakes = Fakes(queues=queues)
    fakes.clock.set(t(21, 47, 30))
    job = fakes.jobs.create_job(OWNER, job_spec(at(t(22, 30))))
    fakes.dispatcher.dispatch()  # through 21:48
    queues.failures = 1

    with pytest.raises(RuntimeError):
        fakes.jobs.update_job(
            OWNER, job.id, JobPatch.model_validate({"schedule": at(t(21, 48, 20))})
        )
    fakes.clock.set(t(21, 47, 40))
    fakes.dispatcher.dispatch()

    changed = stored_job(fakes, job)
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48, 20), changed.generation)]


# --- what the dispatcher does not write ------------------------------------------------------


def counting_fakes() -> tuple[Fakes, CountingStore]:
    store = CountingStore()
    fakes = Fakes(store=store)
    fakes.clock.set(t(21, 47, 30))
    return fakes, store


def test_given_a_recurring_job_that_goes_on_when_its_minutes_are_dispatched_then_no_job_item_is_written() -> (
    None
):
    fakes, store = counting_fakes()
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    store.job_writes.clear()

    for minute in range(48, 53):  # a tick a minute
        fakes.clock.set(t(21, minute - 1, 30))
        fakes.dispatcher.dispatch()

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, m)) for m in range(48, 53)]
    assert [o.scheduled_at for o in occurrences_of(fakes, job)] == [t(21, m) for m in range(48, 54)]
    assert store.job_writes == []
    assert store.run_writes == []  # and no run record either
    assert stored_job(fakes, job) == job


def test_given_a_schedule_at_its_end_when_its_last_occurrence_is_dispatched_then_the_job_is_completed_without_a_write() -> (
    None
):
    fakes, store = counting_fakes()
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *", end_at="2026-11-25T21:50:00Z")))
    store.job_writes.clear()

    for minute in range(48, 53):
        fakes.clock.set(t(21, minute - 1, 30))
        fakes.dispatcher.dispatch()

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, m)) for m in (48, 49, 50)]
    assert store.job_writes == []
    assert stored_job(fakes, job) == job
    done = fakes.jobs.get_job(OWNER, job.id)  # as of now: its schedule has ended
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)


# --- next_run_at as of now ---------------------------------------------------------------------


def test_given_occurrences_dispatched_when_the_job_is_read_then_its_next_run_at_is_the_next_fire_time_as_of_the_clock(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 48)

    fakes.clock.set(t(21, 49, 5))
    fakes.dispatcher.dispatch()  # 21:48, 21:49 and 21:50 sent; 21:51 planned

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, m)) for m in (48, 49, 50)]
    # the stored job still names its first occurrence; the API answers as of now
    assert stored_job(fakes, job).next_run_at == t(21, 48)
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 50)
    assert [j.next_run_at for j in fakes.jobs.list_jobs(OWNER)] == [t(21, 50)]
    # a run's second stays "next" until it is over
    fakes.clock.set(t(21, 50).replace(microsecond=500_000))
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 50)
    fakes.clock.set(t(21, 50, 1))
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == t(21, 51)
    assert stored_job(fakes, job) == job


def test_given_a_paused_job_when_read_later_then_it_has_no_next_run(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *")))
    fakes.jobs.pause_job(OWNER, job.id)

    fakes.clock.set(t(21, 55))

    assert fakes.jobs.get_job(OWNER, job.id).next_run_at is None


# --- an occurrence that is not one of the job's ------------------------------------------------


def test_given_an_occurrence_written_by_a_change_that_lost_when_its_minute_is_dispatched_then_it_is_dropped_unsent() -> (
    None
):
    fakes = Fakes(store=RacingStore())  # the clock at 12:00
    job, lost = a_change_that_lost(fakes)  # the winner fires at :30, the loser wrote 12:15
    assert job.next_run_at == t(12, 30, day=26)

    fakes.clock.set(t(12, 14, 30, day=26))
    report = fakes.dispatcher.dispatch()

    assert (report.dispatched, report.missed, report.scheduled) == (0, 0, 0)
    assert fakes.queues.sent == []
    assert fakes.store.runs == {}
    fakes.clock.set(t(12, 29, 30, day=26))
    fakes.dispatcher.dispatch()
    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(12, 30, day=26), generation=2)]
    # chained on from the winner's occurrence only
    assert [(o.scheduled_at, o.generation) for o in occurrences_of(fakes, job)] == [
        (t(12, 15, day=26), 2),
        (t(12, 30, day=26), 2),
        (t(13, 0, day=26), 1),
        (t(13, 30, day=26), 2),
    ]
    assert lost.id not in sent_run_ids(fakes)


@pytest.mark.parametrize(
    "schedule",
    [at(t(21, 48)), cron("* * * * *", end_at="2026-11-25T21:48:00Z")],
    ids=["at", "cron-with-an-end"],
)
def test_given_a_job_renamed_after_its_last_fire_time_while_dispatching_is_behind_when_its_occurrence_is_dispatched_then_the_job_completes(
    fakes: Fakes, schedule: dict[str, Any]
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(schedule))  # its one fire time: 21:48
    fakes.clock.set(t(21, 48, 10))  # no tick since 21:47 (within the start deadline)
    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"name": "renamed"}))

    fakes.dispatcher.dispatch()

    assert sent_run_ids(fakes) == [ids.run_id(job.id, t(21, 48))]
    done = fakes.jobs.get_job(OWNER, job.id)
    assert (done.name, done.state, done.next_run_at) == ("renamed", JobState.COMPLETED, None)


def test_given_recurring_jobs_when_their_minute_is_dispatched_then_their_next_occurrences_are_written_in_packs_named_by_that_minute() -> (
    None
):
    written: list[tuple[list[str], str | None]] = []

    class Recording(FakeStore):
        def put_occurrences(
            self, occurrences: Any, shards: int, now: datetime, pack: str | None = None
        ) -> None:
            occurrences = list(occurrences)
            written.append(([o.run_id for o in occurrences], pack))
            super().put_occurrences(occurrences, shards, now, pack)

    fakes = Fakes(store=Recording())
    fakes.clock.set(t(21, 47, 30))
    jobs = [fakes.jobs.create_job(OWNER, job_spec(cron("* * * * *"))) for _ in range(3)]
    written.clear()

    fakes.dispatcher.dispatch()  # 21:48

    # (one call per shard that had occurrences in the minute)
    chained = sorted(run_id for run_ids, pack in written for run_id in run_ids)
    assert chained == sorted(ids.run_id(job.id, t(21, 49)) for job in jobs)
    assert {pack for _, pack in written} == {"chain-20261125T2148"}


@pytest.mark.parametrize("offset", [0, 1, 30, 54, 55, 59])
def test_given_ticks_at_any_second_of_their_minute_when_runs_are_due_in_the_first_seconds_of_a_minute_then_each_is_sent_well_ahead_of_its_second(
    fakes: Fakes, offset: int
) -> None:
    first = t(22, 0)
    fakes.clock.set(first - timedelta(minutes=5))  # no minute below is opened yet
    due = [first + timedelta(minutes=m, seconds=s) for m in range(3) for s in range(3)]
    for instant in due:
        fakes.jobs.create_job(OWNER, job_spec(at(instant)))
    assert fakes.queues.sent == []

    sent_at: dict[str, datetime] = {}
    for minute in range(-3, 3):  # a tick a minute, each at ``offset`` into its minute
        fakes.clock.set(first + timedelta(minutes=minute, seconds=offset))
        fakes.dispatcher.dispatch()
        for s in fakes.queues.sent:
            sent_at.setdefault(s.message.run_id, fakes.clock())

    assert len(sent_at) == len(due)
    # (the worker's event source may hold a batch a second, and the priority's lead is up
    # to two: five seconds ahead leaves time to spare)
    for s in fakes.queues.sent:
        assert s.message.scheduled_at - sent_at[s.message.run_id] >= timedelta(seconds=5)


def test_given_jobs_of_two_owners_when_their_runs_are_sent_then_each_message_carries_its_owner(
    fakes: Fakes,
) -> None:
    """Queues are keyed by owner as well as priority: the dispatcher, a run sent at once
    (its minute already dispatched) and a manual run each name the job's owner, the
    message's group on SQS."""
    alices = fakes.jobs.create_job("alice", job_spec(cron("* * * * *")))
    fakes.jobs.create_job("bob", job_spec(cron("* * * * *")))
    fakes.dispatcher.dispatch()
    late = fakes.jobs.create_job("carol", job_spec(at(t(21, 48, 20))))  # minute opened
    fakes.jobs.trigger_job("alice", alices.id)

    owners = {m.message.job_id: m.message.owner for m in fakes.queues.sent}

    assert sorted(owners.values()) == ["alice", "bob", "carol"]
    assert owners[late.id] == "carol"
    assert all(m.message.owner for m in fakes.queues.sent)
