"""The worker's use case on the fakes: a queued run started at its second, once, unless it
must not start (gone, superseded, past its deadline, or barred by the job's overlap
policy).

Why this module is long: starting a run is one decision over many rules
(chronoq/usecases/start.py says why it is long too): a case or more per rule, the overlap
policies and batches, over the same clocked executor and changing store."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import inflight
from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Job, JobPatch, JobState
from chronoq.domain.retry import worst_case_seconds
from chronoq.domain.runs import Priority, Run, RunMessage, RunStatus, Trigger
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes import FakeClock, FakeExecutor, FakeStore
from chronoq.usecases.ports import Claim
from chronoq.usecases.start import CLAIM_ATTEMPTS, ClaimHeld, RunStarter

from tests.builders import OWNER, Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import (
    LONGER_THAN_EXPRESS,
    CountingStore,
    RacingStore,
    a_change_that_lost,
    due_job,
    finish,
    mark_running,
    message,
    pending_run,
    run_at,
    stored,
    stored_job,
    visibility_timeout,
)


@dataclass
class ClockedExecutor(FakeExecutor):
    """The fake executor, noting the (fake) time each execution was started at."""

    clock: FakeClock | None = None
    started_at: dict[str, datetime] = field(default_factory=dict)

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        assert self.clock is not None
        self.started_at.setdefault(run_id, self.clock())
        return super().start(run_id, execution_input)

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        assert self.clock is not None
        for execution_input in inputs:
            self.started_at.setdefault(execution_input.run_id, self.clock())
        super().start_batch(inputs)


# --- one run --------------------------------------------------------------------------------


def counted(fakes: Fakes, job: Job, starts_at: datetime) -> tuple[str, str]:
    """Where the worker counts a run of ``job`` starting at ``starts_at`` among its owner's
    runs in flight: the bucket of its worst-case end."""
    now = fakes.clock()
    worst = worst_case_seconds(job.retry, job.timeout_seconds)
    ahead = max(0.0, (starts_at - now).total_seconds())
    return inflight.item_key(job.owner), inflight.end_bucket(now, worst + ahead)


def test_given_a_due_run_of_an_allow_job_when_the_worker_gets_it_then_it_starts_one_execution_named_by_the_run_without_a_claim_or_any_write_but_its_count() -> (
    None
):
    fakes = Fakes(store=CountingStore())
    assert isinstance(fakes.store, CountingStore)
    job, run = due_job(fakes)  # concurrency allow, the default
    queued = message(fakes, run)
    job_writes, run_writes = len(fakes.store.job_writes), len(fakes.store.run_writes)

    outcome = fakes.starter.start_run(queued)

    assert outcome == "started"
    assert fakes.executor.started == {
        run.id: ExecutionInput.of(
            job,
            run.id,
            run.scheduled_at,
            generation=1,
            trigger=Trigger.SCHEDULE,
            queued_at=queued.queued_at,
            in_flight=counted(fakes, job, queued.starts_at),
        )
    }
    assert not fakes.executor.started[run.id].exclusive
    # one write: its owner's runs in flight (given back as its end reaches the notifier)
    key, bucket = counted(fakes, job, queued.starts_at)
    assert fakes.store.get_in_flight(key) == inflight.InFlight(1, {bucket: 1})
    # no claim, no job write, no run record: the state machine's first state records it
    assert fakes.store.job_writes[job_writes:] == []
    assert fakes.store.run_writes[run_writes:] == []
    assert fakes.store.get_run(job.id, run.id) is None
    assert stored_job(fakes, job) == job  # active_runs untouched


def test_given_an_allow_run_started_when_its_execution_marks_it_running_then_its_record_is_created_with_what_the_message_carried(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes, priority="high")
    queued = message(fakes, run)
    assert fakes.starter.start_run(queued) == "started"

    assert mark_running(fakes, run)

    kept = stored(fakes, run)
    assert (kept.status, kept.owner, kept.priority, kept.trigger, kept.generation) == (
        RunStatus.RUNNING,
        OWNER,
        Priority.HIGH,
        Trigger.SCHEDULE,
        1,
    )
    assert (kept.scheduled_at, kept.queued_at, kept.started_at) == (
        run.scheduled_at,
        queued.queued_at,
        fakes.clock(),
    )
    assert stored_job(fakes, job).active_runs == frozenset()


@pytest.mark.parametrize("concurrency", ["forbid", "replace"])
def test_given_a_due_run_of_an_exclusive_job_when_the_worker_gets_it_then_its_claim_creates_its_record_queued_and_it_starts(
    fakes: Fakes, concurrency: str
) -> None:
    job, run = due_job(fakes, concurrency=concurrency)
    queued = message(fakes, run)
    assert fakes.store.get_run(job.id, run.id) is None

    outcome = fakes.starter.start_run(queued)

    assert outcome == "started"
    claimed = stored(fakes, run)
    assert (claimed.status, claimed.queued_at) == (RunStatus.QUEUED, queued.queued_at)
    assert (claimed.owner, claimed.trigger, claimed.generation, claimed.scheduled_at) == (
        OWNER,
        Trigger.SCHEDULE,
        1,
        run.scheduled_at,
    )
    assert stored_job(fakes, job).active_runs == {run.id}
    started = fakes.executor.started[run.id]
    assert started == ExecutionInput.of(
        stored_job(fakes, job),
        run.id,
        run.scheduled_at,
        queued_at=queued.queued_at,
        in_flight=counted(fakes, job, queued.starts_at),
    )
    assert started.exclusive  # the state machine releases it at its end


@pytest.mark.parametrize("express", [False, True], ids=["standard", "express"])
def test_given_a_run_delivered_early_when_the_worker_takes_it_then_it_starts_at_its_second(
    express: bool,
) -> None:
    """STANDARD: the worker waits for the second, then starts the execution. EXPRESS: the
    worker starts the execution at once, and the execution waits for the second (its first
    state, OnItsSecond: see tests/unit/test_contracts.py), at half the price."""
    fakes = Fakes(executor=ClockedExecutor())
    assert isinstance(fakes.executor, ClockedExecutor)
    fakes.executor.clock = fakes.clock
    early = max(r.DISPATCH_LEAD_SECONDS.values()) + 1  # as early as a worker waits for
    timeout = {} if express else {"timeout_seconds": LONGER_THAN_EXPRESS}
    _, run = due_job(fakes, seconds=early, **timeout)
    received = fakes.clock()

    assert fakes.starter.start_run(message(fakes, run)) == "started"

    if express:
        assert fakes.clock.slept == []
        assert fakes.executor.started_at == {run.id: received}
        assert fakes.executor.express == {run.id: 1}
    else:
        assert fakes.clock.slept == [early]
        assert fakes.executor.started_at == {run.id: run.scheduled_at}


def test_given_a_run_delivered_on_time_when_the_worker_takes_it_then_it_does_not_wait(
    fakes: Fakes,
) -> None:
    _, run = due_job(fakes, seconds=2)
    fakes.clock.advance(3)

    assert fakes.starter.start_run(message(fakes, run)) == "started"

    assert fakes.clock.slept == []


@pytest.mark.parametrize("express", [False, True], ids=["standard", "express"])
def test_given_duplicate_deliveries_of_an_allow_run_when_the_worker_gets_them_then_only_one_execution_gets_past_marking_it_running(
    fakes: Fakes, express: bool
) -> None:
    _, run = due_job(fakes, **({} if express else {"timeout_seconds": LONGER_THAN_EXPRESS}))
    queued = message(fakes, run)

    # twice in one batch, before any execution marked the run RUNNING: the worker starts it
    # twice (it claims nothing for an allow job)
    assert [fakes.starter.start_run(queued) for _ in range(2)] == ["started", "started"]
    # STANDARD dedupes the name: one execution; EXPRESS starts two, and the state machine's
    # conditional first write lets one of them through
    assert fakes.executor.express == ({run.id: 2} if express else {})
    executions = 2 if express else 1
    assert [mark_running(fakes, run) for _ in range(executions)] == [True] + [False] * (
        executions - 1
    )
    running = stored(fakes, run)

    # and again while it runs, and once it is over: STANDARD answers with the same execution,
    # then refuses the name; EXPRESS starts others, which end at their first write
    assert fakes.starter.start_run(queued) == "started"
    if express:
        assert not mark_running(fakes, run)
    finish(fakes, run, RunStatus.SUCCEEDED)
    assert fakes.starter.start_run(queued) == ("started" if express else "duplicate")
    if express:
        assert not mark_running(fakes, run)

    assert fakes.executor.starts == {run.id: 4}
    assert list(fakes.executor.started) == [run.id]
    ended = stored(fakes, run)
    assert (ended.status, ended.started_at) == (RunStatus.SUCCEEDED, running.started_at)


def test_given_duplicate_deliveries_of_a_forbid_run_when_the_worker_gets_them_then_the_second_waits_for_the_claim_and_the_run_executes_once(
    fakes: Fakes,
) -> None:
    _, run = due_job(fakes, concurrency="forbid")
    queued = message(fakes, run)

    # twice in one batch, before the state machine marks the run RUNNING: the second finds
    # the first worker's claim and is asked to come back later (SQS redelivers it)
    assert fakes.starter.start_run(queued) == "started"
    with pytest.raises(ClaimHeld):
        fakes.starter.start_run(queued)
    assert fakes.executor.starts == {run.id: 1}
    starts = fakes.executor.starts[run.id]

    assert mark_running(fakes, run)
    assert fakes.starter.start_run(queued) == "duplicate"  # and again while it runs
    finish(fakes, run, RunStatus.SUCCEEDED)
    assert fakes.starter.start_run(queued) == "duplicate"  # and again once it is over

    assert fakes.executor.starts == {run.id: starts}
    assert list(fakes.executor.started) == [run.id]
    assert stored(fakes, run).status is RunStatus.SUCCEEDED


def test_given_a_worker_that_died_after_claiming_when_the_message_comes_back_then_the_run_still_starts(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes, concurrency="forbid")
    now = fakes.clock()
    assert fakes.store.claim_run(job, run, now, now, exclusive=True) == "claimed"
    assert fakes.executor.starts == {}  # claimed, never started
    with pytest.raises(ClaimHeld):  # while its claim lasts, it may still be starting
        fakes.starter.start_run(message(fakes, run))

    fakes.clock.advance(visibility_timeout(run))  # SQS delivers the message again
    outcome = fakes.starter.start_run(message(fakes, run))

    assert outcome == "started"
    assert fakes.executor.starts == {run.id: 1}
    assert stored(fakes, run).status is RunStatus.QUEUED


def test_given_a_message_for_a_deleted_job_when_the_worker_gets_it_then_nothing_starts(
    fakes: Fakes,
) -> None:
    now = fakes.clock()
    queued = RunMessage(
        job_id="job_00000000000000ff",
        run_id="job_00000000000000ff_20261126T120000Z",
        scheduled_at=now,
        queued_at=now,
    )

    assert fakes.starter.start_run(queued) == "gone"
    assert fakes.executor.starts == {}


def test_given_a_scheduled_run_whose_job_was_deleted_when_the_worker_gets_it_then_nothing_starts_or_is_recorded(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes)
    fakes.jobs.delete_job(OWNER, job.id)

    assert fakes.starter.start_run(message(fakes, run)) == "gone"

    assert fakes.executor.starts == {}
    assert fakes.store.runs == {}


def test_given_a_manual_run_whose_job_was_deleted_when_the_worker_gets_it_then_its_record_is_cancelled_and_nothing_starts(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())
    run = fakes.jobs.trigger_job(OWNER, job.id)
    (queued,) = fakes.queues.take()
    fakes.jobs.delete_job(OWNER, job.id)

    assert fakes.starter.start_run(queued) == "gone"

    assert fakes.executor.starts == {}
    cancelled = stored(fakes, run)
    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, "its job was deleted")
    assert cancelled.finished_at == fakes.clock()


@pytest.mark.parametrize("concurrency", ["allow", "forbid"])
def test_given_a_run_past_its_start_deadline_when_it_arrives_then_a_missed_record_is_created_and_it_does_not_start(
    fakes: Fakes, concurrency: str
) -> None:
    job, run = due_job(fakes, seconds=5, start_deadline_seconds=60, concurrency=concurrency)
    assert fakes.store.get_run(job.id, run.id) is None  # nothing recorded it yet

    fakes.clock.set(run.scheduled_at + timedelta(seconds=61))
    outcome = fakes.starter.start_run(message(fakes, run))

    missed = stored(fakes, run)
    assert outcome == "missed"
    assert (missed.status, missed.trigger, missed.owner, missed.scheduled_at) == (
        RunStatus.MISSED,
        Trigger.SCHEDULE,
        OWNER,
        run.scheduled_at,
    )
    assert missed.reason == "could not start within start_deadline_seconds (60 s)"
    assert missed.finished_at == run.scheduled_at + timedelta(seconds=61)
    assert fakes.executor.starts == {}
    assert stored_job(fakes, job).active_runs == frozenset()


def test_given_a_run_just_within_its_start_deadline_when_it_arrives_then_it_starts(
    fakes: Fakes,
) -> None:
    _, run = due_job(fakes, seconds=5, start_deadline_seconds=60)

    fakes.clock.set(run.scheduled_at + timedelta(seconds=60))

    assert fakes.starter.start_run(message(fakes, run)) == "started"


def test_given_a_paused_job_when_its_run_arrives_then_it_is_dropped_as_superseded(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes)

    paused = fakes.jobs.pause_job(OWNER, job.id)
    outcome = fakes.starter.start_run(message(fakes, run))

    assert (paused.state, paused.next_run_at) == (JobState.PAUSED, None)
    assert outcome == "superseded"  # pausing deleted nothing: the worker drops it
    assert fakes.executor.starts == {}
    assert fakes.runs.list_runs(OWNER, job.id) == []


def test_given_a_job_paused_after_its_minute_was_dispatched_when_the_run_arrives_then_it_is_dropped_as_superseded(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    fakes.clock.advance(30)
    fakes.dispatcher.dispatch()  # 12:01 is sent, 12:02 planned
    (queued,) = fakes.queues.take()

    fakes.jobs.pause_job(OWNER, job.id)
    fakes.clock.set(queued.scheduled_at)
    outcome = fakes.starter.start_run(queued)

    assert outcome == "superseded"
    assert fakes.executor.starts == {}
    assert fakes.runs.list_runs(OWNER, job.id) == []


def test_given_a_rescheduled_job_when_its_superseded_occurrence_arrives_then_it_is_dropped(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    old = pending_run(fakes, job)
    fakes.clock.advance(30)
    fakes.dispatcher.dispatch()  # 12:01 is sent, 12:02 planned
    (queued,) = fakes.queues.take()
    assert queued.run_id == old.id

    changed = fakes.jobs.update_job(
        OWNER, job.id, JobPatch.model_validate({"schedule": {"type": "rate", "every": "1 hour"}})
    )
    fakes.clock.set(queued.scheduled_at)
    outcome = fakes.starter.start_run(queued)

    assert outcome == "superseded"
    assert fakes.executor.starts == {}
    assert fakes.runs.list_runs(OWNER, job.id) == []  # nothing recorded for it
    # the job's current occurrence is still planned, in its new generation
    assert pending_run(fakes, changed).generation == 2


def test_given_an_occurrence_written_by_a_change_that_lost_when_it_arrives_then_it_is_superseded() -> (
    None
):
    fakes = Fakes(store=RacingStore())
    job, lost = a_change_that_lost(fakes)
    assert not job.fires_at(lost.scheduled_at)

    fakes.clock.set(lost.scheduled_at)
    outcome = fakes.starter.start_run(message(fakes, lost))

    assert outcome == "superseded"
    assert fakes.executor.starts == {}
    assert fakes.store.runs == {}


def test_given_a_claimed_run_whose_job_was_paused_when_its_message_comes_back_then_it_still_runs(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes, concurrency="forbid")
    now = fakes.clock()
    assert fakes.store.claim_run(job, run, now, now, exclusive=True) == "claimed"
    fakes.jobs.pause_job(OWNER, job.id)  # (the worker died before starting it)
    fakes.clock.advance(visibility_timeout(run))  # its message comes back

    assert fakes.starter.start_run(message(fakes, run)) == "started"

    assert list(fakes.executor.started) == [run.id]


# --- overlap --------------------------------------------------------------------------------


def running_job(fakes: Fakes, concurrency: str, **extra: Any) -> tuple[Job, Run, RunMessage]:
    """A job whose first run is executing (the state machine marked it RUNNING), and the
    message of a second run of it, triggered by hand and due now."""
    start = seconds_from(fakes.clock(), 1)
    job = fakes.jobs.create_job(
        OWNER,
        job_spec(
            {"type": "rate", "every": "1 minute", "start_at": start.isoformat()},
            concurrency=concurrency,
            **extra,
        ),
    )
    first = pending_run(fakes, job)
    assert fakes.starter.start_run(message(fakes, first)) == "started"
    assert mark_running(fakes, first)
    fakes.jobs.trigger_job(OWNER, job.id)
    (second,) = fakes.queues.take()
    return job, first, second


def test_given_forbid_when_a_run_is_due_while_one_is_active_then_it_is_skipped(
    fakes: Fakes,
) -> None:
    job, first, second = running_job(fakes, "forbid")

    outcome = fakes.starter.start_run(second)

    skipped = fakes.runs.get_run(OWNER, second.run_id)
    assert outcome == "skipped"
    assert skipped.status is RunStatus.SKIPPED
    assert skipped.reason == f"concurrency forbid: run {first.id} is still active"
    assert stored(fakes, first).status is RunStatus.RUNNING
    assert list(fakes.executor.started) == [first.id]
    assert fakes.executor.stopped == {}
    assert stored_job(fakes, job).active_runs == {first.id}


@pytest.mark.parametrize("express", [False, True], ids=["standard", "express"])
def test_given_replace_when_a_run_is_due_while_one_is_active_then_the_old_one_is_cancelled_and_the_new_one_runs(
    fakes: Fakes, express: bool
) -> None:
    # a timeout too long for EXPRESS puts the runs on STANDARD, whose executions stop
    job, first, second = running_job(
        fakes, "replace", **({} if express else {"timeout_seconds": LONGER_THAN_EXPRESS})
    )

    outcome = fakes.starter.start_run(second)

    assert outcome == "started"
    reason = f"concurrency replace: replaced by run {second.run_id}"
    assert fakes.executor.stopped == ({} if express else {first.id: reason})
    cancelled = stored(fakes, first)
    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, reason)
    assert list(fakes.executor.started) == [first.id, second.run_id]
    assert fakes.runs.get_run(OWNER, second.run_id).status is RunStatus.QUEUED
    assert stored_job(fakes, job).active_runs == {second.run_id}


def test_given_allow_when_runs_overlap_then_both_run_and_the_job_keeps_no_active_runs(
    fakes: Fakes,
) -> None:
    job, first, second = running_job(fakes, "allow")

    outcome = fakes.starter.start_run(second)

    assert outcome == "started"
    assert list(fakes.executor.started) == [first.id, second.run_id]
    assert mark_running(fakes, fakes.runs.get_run(OWNER, second.run_id))
    assert fakes.executor.stopped == {}
    assert stored(fakes, first).status is RunStatus.RUNNING
    assert fakes.runs.get_run(OWNER, second.run_id).status is RunStatus.RUNNING
    assert stored_job(fakes, job).active_runs == frozenset()
    # and each one's end leaves the job alone
    finish(fakes, first, RunStatus.SUCCEEDED)
    assert stored_job(fakes, job) == job


def test_given_forbid_when_a_scheduled_occurrence_is_due_while_a_run_is_active_then_a_skipped_record_is_created_for_it(
    fakes: Fakes,
) -> None:
    job, first, _ = running_job(fakes, "forbid")
    following = run_at(job, first.scheduled_at + timedelta(minutes=1))
    fakes.clock.set(following.scheduled_at)
    assert fakes.store.get_run(job.id, following.id) is None

    outcome = fakes.starter.start_run(message(fakes, following))

    skipped = stored(fakes, following)
    assert outcome == "skipped"
    assert (skipped.status, skipped.trigger, skipped.generation) == (
        RunStatus.SKIPPED,
        Trigger.SCHEDULE,
        1,
    )
    assert skipped.reason == f"concurrency forbid: run {first.id} is still active"
    assert skipped.finished_at == following.scheduled_at
    assert list(fakes.executor.started) == [first.id]
    assert stored_job(fakes, job).active_runs == {first.id}


@pytest.mark.parametrize("concurrency", ["forbid", "replace"])
def test_given_an_active_run_that_in_fact_ended_when_the_next_run_arrives_then_it_is_forgotten_and_the_next_one_starts(
    fakes: Fakes, concurrency: str
) -> None:
    job, first, second = running_job(fakes, concurrency)
    # the run ended, but it was never taken off the job's active runs
    fakes.store.update_run(job.id, first.id, status=RunStatus.SUCCEEDED)

    outcome = fakes.starter.start_run(second)

    assert outcome == "started"
    assert stored(fakes, first).status is RunStatus.SUCCEEDED
    assert fakes.executor.stopped == {}
    assert stored_job(fakes, job).active_runs == {second.run_id}


@dataclass
class ChangingStore(FakeStore):
    """A jobs table whose job changes under every claim."""

    tries: int = 0

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        self.tries += 1
        return "job_changed"


def test_given_a_job_that_keeps_changing_when_the_worker_claims_its_run_then_it_gives_up_and_the_message_is_retried() -> (
    None
):
    fakes = Fakes(store=ChangingStore())
    job, run = due_job(fakes, concurrency="forbid")

    with pytest.raises(Conflict, match="kept changing"):
        fakes.starter.start_run(message(fakes, run))

    assert isinstance(fakes.store, ChangingStore)
    assert fakes.store.tries == CLAIM_ATTEMPTS
    assert fakes.executor.starts == {}
    assert fakes.store.get_run(job.id, run.id) is None  # no claim got to record it


def test_given_two_workers_at_once_when_they_start_the_same_forbid_run_then_one_starts_it_and_the_other_is_refused(
    fakes: Fakes,
) -> None:
    _, run = due_job(fakes, concurrency="forbid")
    queued = message(fakes, run)
    fakes.clock.set(run.scheduled_at)
    together = threading.Barrier(2)
    outcomes: list[str] = []

    def worker() -> None:
        together.wait()
        try:
            outcomes.append(fakes.starter.start_run(queued))
        except ClaimHeld:
            outcomes.append("held")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["held", "started"]
    # asked once: an executor that does not refuse a second start of the same name (Express
    # starts at-least-once) still runs the target once
    assert fakes.executor.starts == {run.id: 1}


# --- a batch ----------------------------------------------------------------------------------


def test_given_a_batch_of_runs_due_in_the_same_second_when_the_worker_gets_it_then_those_that_fit_express_start_in_one_execution(
    fakes: Fakes,
) -> None:
    due = seconds_from(fakes.clock(), 1)  # delivered in the second before, as SQS does
    express = [
        fakes.jobs.create_job(OWNER, job_spec({"type": "at", "at": due.isoformat()}))
        for _ in range(3)
    ]
    standard = fakes.jobs.create_job(
        OWNER,
        job_spec({"type": "at", "at": due.isoformat()}, timeout_seconds=LONGER_THAN_EXPRESS),
    )
    messages = [message(fakes, pending_run(fakes, job)) for job in [*express, standard]]

    outcomes = fakes.starter.start_runs(messages)

    assert outcomes == ["started"] * 4
    # one EXPRESS execution for the three that fit; the other on STANDARD, named by its run
    assert [sorted(b) for b in fakes.executor.express_batches] == [
        sorted(m.run_id for m in messages[:3])
    ]
    assert set(fakes.executor.started) == {m.run_id for m in messages}
    assert messages[3].run_id not in fakes.executor.express
    # the batch waited once, for the second its runs were due
    assert fakes.clock() >= due
    assert len(fakes.clock.slept) == 1


def test_given_a_batch_of_runs_due_in_two_seconds_when_the_worker_gets_it_then_each_second_starts_in_an_execution_of_its_own(
    fakes: Fakes,
) -> None:
    first, second = seconds_from(fakes.clock(), 1), seconds_from(fakes.clock(), 2)
    jobs = [
        fakes.jobs.create_job(OWNER, job_spec({"type": "at", "at": at.isoformat()}))
        for at in (second, first, second)
    ]
    messages = [message(fakes, pending_run(fakes, job)) for job in jobs]
    executor = ClockedExecutor(clock=fakes.clock)
    fakes.executor = executor

    assert fakes.starter.start_runs(messages) == ["started"] * 3

    assert [sorted(b) for b in executor.express_batches] == [
        [messages[1].run_id],
        sorted([messages[0].run_id, messages[2].run_id]),
    ]
    # all started on receipt: each execution waits for its runs' second (OnItsSecond)
    assert fakes.clock.slept == []


def test_given_a_batch_where_one_run_cannot_be_decided_when_the_worker_gets_it_then_only_that_message_comes_back(
    fakes: Fakes,
) -> None:
    _, run = due_job(fakes, concurrency="forbid")
    _, other_run = due_job(fakes)
    broken = message(fakes, run)

    class Failing(FakeStore):
        def claim_run(
            self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
        ) -> Claim:
            raise ConnectionError("DynamoDB timed out")

    failing = Failing()
    failing.jobs, failing.runs, failing.schedule = (
        fakes.store.jobs,
        fakes.store.runs,
        fakes.store.schedule,
    )
    starter = RunStarter(
        failing, fakes.executor, fakes.canceller, fakes.clock, fakes.sleep, fakes.queues
    )

    outcomes = starter.start_runs([broken, message(fakes, other_run)])

    assert isinstance(outcomes[0], ConnectionError)
    assert outcomes[1] == "started"
    assert fakes.executor.express_batches == [[other_run.id]]


def test_given_a_batch_whose_jobs_cannot_be_read_when_the_worker_gets_it_then_every_message_comes_back(
    fakes: Fakes,
) -> None:
    runs = [due_job(fakes)[1] for _ in range(2)]

    class Unreadable(FakeStore):
        def get_jobs(self, job_ids: Iterable[str], consistent: bool = False) -> dict[str, Job]:
            raise ConnectionError("DynamoDB timed out")

    starter = RunStarter(
        Unreadable(), fakes.executor, fakes.canceller, fakes.clock, fakes.sleep, fakes.queues
    )

    outcomes = starter.start_runs([message(fakes, run) for run in runs])

    assert [type(o) for o in outcomes] == [ConnectionError, ConnectionError]
    assert fakes.executor.starts == {}


def test_given_a_batch_whose_start_fails_when_the_worker_gets_it_then_every_message_of_the_execution_comes_back(
    fakes: Fakes,
) -> None:
    runs = [due_job(fakes)[1] for _ in range(2)]

    class Throttled(FakeExecutor):
        def start_batch(self, inputs: list[ExecutionInput]) -> None:
            raise RuntimeError("ThrottlingException")

    fakes.executor = Throttled()

    outcomes = fakes.starter.start_runs([message(fakes, run) for run in runs])

    assert [type(o) for o in outcomes] == [RuntimeError, RuntimeError]
