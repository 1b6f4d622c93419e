"""Small steps the use-case tests share: a job's pending occurrence (a schedule item: its run
has no record until it starts), the message that asks a worker to start a run, the state
machine's writes played by hand, and a store that counts its writes."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Job, JobPatch
from chronoq.domain.runs import Attempt, Occurrence, Priority, Run, RunMessage, RunStatus, Trigger
from chronoq.fakes import FakeQueues, FakeStore, statemachine
from chronoq.fakes.statemachine import ExecutingFakeExecutor
from chronoq.usecases.ports import Claim
from chronoq.usecases.timeindex import new_run

from tests.builders import OWNER, Fakes, job_spec, seconds_from

#: A timeout that puts a run (of one attempt) on the STANDARD state machine.
LONGER_THAN_EXPRESS = r.EXPRESS_BUDGET_SECONDS + 1


def occurrences_of(fakes: Fakes, job: Job) -> list[Occurrence]:
    """Every schedule item of ``job`` in the time index, by due time."""
    return sorted(
        (
            o
            for items in fakes.store.schedule.values()
            for o in items.values()
            if o.job_id == job.id
        ),
        key=lambda o: (o.scheduled_at, o.run_id),
    )


def pending_occurrence(fakes: Fakes, job: Job) -> Occurrence:
    """The schedule item of the occurrence ``job.next_run_at`` announces (in its generation)."""
    assert job.next_run_at is not None
    run_id = ids.run_id(job.id, job.next_run_at, job.generation)
    shard = ids.shard_of(job.id, fakes.shards)
    found = [o for o in fakes.store.occurrences_in(job.next_run_at, shard) if o.run_id == run_id]
    assert found, f"the time index holds no occurrence {run_id}"
    return found[0]


def run_at(job: Job, at: datetime, generation: int | None = None) -> Run:
    """The (unrecorded) run of the scheduled occurrence of ``job`` at ``at``."""
    generation = job.generation if generation is None else generation
    run = new_run(job, ids.run_id(job.id, at, generation), at, Trigger.SCHEDULE)
    return run.model_copy(update={"generation": generation})


def pending_run(fakes: Fakes, job: Job) -> Run:
    """The run planned at the job's next fire time: its schedule item is in the time index,
    and it has no record yet (a scheduled run is recorded when it starts)."""
    o = pending_occurrence(fakes, job)
    return run_at(job, o.scheduled_at, o.generation).model_copy(update={"priority": o.priority})


def due_job(fakes: Fakes, seconds: float = 2, **extra: Any) -> tuple[Job, Run]:
    """A one-time job due ``seconds`` from now, and its pending (unrecorded) run."""
    due = seconds_from(fakes.clock(), seconds)
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "at", "at": due.isoformat()}, **extra))
    return job, pending_run(fakes, job)


def message(fakes: Fakes, run: Run) -> RunMessage:
    """The message that asks a worker to start ``run``, queued now (on the fake clock)."""
    return RunMessage(
        job_id=run.job_id,
        run_id=run.id,
        scheduled_at=run.scheduled_at,
        queued_at=fakes.clock(),
        generation=run.generation,
    )


def visibility_timeout(run: Run) -> int:
    """How long after a worker took the run's message SQS delivers it again, unless the
    worker deleted it (its queue's setting)."""
    (queue,) = [q for q in r.QUEUES if q.priority == run.priority.value]
    return queue.visibility_timeout_seconds


def stored(fakes: Fakes, run: Run) -> Run:
    """The run as it is kept now."""
    kept = fakes.store.get_run(run.job_id, run.id)
    assert kept is not None, f"run {run.id} has no record"
    return kept


def stored_job(fakes: Fakes, job: Job) -> Job:
    """The job as it is kept now."""
    kept = fakes.store.get_job(job.id)
    assert kept is not None
    return kept


def mark_running(fakes: Fakes, run: Run | RunMessage) -> bool:
    """The state machine's first state (MarkRunning), from the input its execution was
    started with, decided by the condition the ASL file gives it (chronoq.fakes.asl): the
    run's record created RUNNING, or moved on to it. False (the execution ends NotStarted)
    when the condition refuses: another execution of the run got there first, or it was
    cancelled."""
    run_id = run.id if isinstance(run, Run) else run.run_id
    started = fakes.executor.started.get(run_id)
    assert started is not None, f"no execution of run {run_id} was started"
    return statemachine.mark_running(fakes.store, started, fakes.clock())


def finish(fakes: Fakes, run: Run, status: RunStatus, **changes: Any) -> bool:
    """What the state machine writes when the run ends: its outcome (if the ASL's condition
    for it holds: the run is still RUNNING), and, for a job that keeps its active runs, the
    run taken off them; then its execution is over."""
    started = fakes.executor.started.get(run.id)
    assert started is not None, f"no execution of run {run.id} was started"
    if status in statemachine.OUTCOME_STATES:
        recorded = statemachine.record_outcome(
            fakes.store, started, status, fakes.clock(), **changes
        )
    else:  # (a status the state machine never writes: set by hand, for tests of readers)
        fakes.store.update_run(
            run.job_id, run.id, status=status, finished_at=fakes.clock(), **changes
        )
        recorded = True
    statemachine.release_job(fakes.store, started, fakes.clock())
    fakes.executor.finish(run.id)
    return recorded


def started_run(fakes: Fakes, **extra: Any) -> tuple[Job, Run]:
    """A one-time job whose run the worker started and the state machine marked RUNNING;
    the run as recorded."""
    job, run = due_job(fakes, **extra)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert mark_running(fakes, run)
    return job, stored(fakes, run)


def sent_run_ids(fakes: Fakes) -> list[str]:
    """The run ids of every message sent so far, in the order sent."""
    return [s.message.run_id for s in fakes.queues.sent]


@dataclass
class CountingStore(FakeStore):
    """The fake store, noting every write to the jobs table and to the runs table."""

    job_writes: list[str] = field(default_factory=list)
    run_writes: list[str] = field(default_factory=list)

    def put_new_job(self, job: Job) -> None:
        self.job_writes.append("put_new_job")
        super().put_new_job(job)

    def save_job(self, job: Job, expected_version: int) -> bool:
        self.job_writes.append("save_job")
        return super().save_job(job, expected_version)

    def delete_job(self, job_id: str) -> bool:
        self.job_writes.append("delete_job")
        return super().delete_job(job_id)

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        self.job_writes.append("claim_run")
        return super().claim_run(job, run, queued_at, now, exclusive)

    def release_run(self, job_id: str, run_id: str) -> None:
        self.job_writes.append("release_run")
        super().release_run(job_id, run_id)

    def create_run(self, run: Run, now: datetime) -> bool:
        self.run_writes.append("create_run")
        return super().create_run(run, now)

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        self.run_writes.append("end_run")
        return super().end_run(run, status, now, reason, only_from, attempt)

    def delete_pending_run(self, job_id: str, run_id: str) -> bool:
        self.run_writes.append("delete_pending_run")
        return super().delete_pending_run(job_id, run_id)


@dataclass
class RacingStore(FakeStore):
    """A jobs table in which ``race`` (another change of the same job) gets in just before
    the next save of a job: that save then finds the job at another version."""

    race: Callable[[], object] | None = None

    def save_job(self, job: Job, expected_version: int) -> bool:
        race, self.race = self.race, None
        if race is not None:
            race()
        return super().save_job(job, expected_version)


def a_change_that_lost(fakes: Fakes) -> tuple[Job, Run]:
    """An hourly job (at minute 0) changed twice at once from the same version: to minute 30
    (the change that wins) and to minute 15 (the one that loses, with a Conflict, after it
    wrote its occurrence). The job as the winner left it, and the run of the loser's
    occurrence: of the job's generation, but not a fire time of its schedule."""
    assert isinstance(fakes.store, RacingStore)
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "0 * * * *"}))

    def winner() -> None:
        patch = JobPatch.model_validate({"schedule": {"type": "cron", "expression": "30 * * * *"}})
        fakes.jobs.update_job(OWNER, job.id, patch)

    fakes.store.race = winner
    loser = JobPatch.model_validate({"schedule": {"type": "cron", "expression": "15 * * * *"}})
    with pytest.raises(Conflict):
        fakes.jobs.update_job(OWNER, job.id, loser)
    won = stored_job(fakes, job)
    lost = run_at(won, fakes.clock().replace(minute=15, second=0, microsecond=0))
    assert won.generation == lost.generation == 2
    assert lost.id in [o.run_id for o in occurrences_of(fakes, job)]  # written, never removed
    return won, lost


#: Every call of the fake tables a function makes (a step at which it may die, or at which
#: another function may get in).
STORE_STEPS = (
    "put_new_job",
    "get_job",
    "get_jobs",
    "save_job",
    "delete_job",
    "count_job",
    "claim_run",
    "release_run",
    "create_run",
    "get_run",
    "end_run",
    "delete_pending_run",
    "put_occurrences",
    "schedule_page",
    "dispatch_marks",
    "advance_within",
    "opened_through",
    "open_minute",
    "close_minute",
    "reopen_minute",
)


class Interrupted(Exception):
    """A function died at a step (its process stopped there)."""


@dataclass
class SteppingStore(FakeStore):
    """The fake tables, calling ``before(step)`` before each call of STORE_STEPS (nested
    calls, the store's own, are not steps): a test makes a function die there, or lets
    another function run there."""

    before: Callable[[str], None] | None = None
    _inside: threading.local = field(default_factory=threading.local, repr=False)

    def _step(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self._inside, "call", False) and self.before is not None:
            self.before(name)
        self._inside.call = True
        try:
            return getattr(FakeStore, name)(self, *args, **kwargs)
        finally:
            self._inside.call = False


def _stepping(name: str) -> Any:
    def call(self: SteppingStore, *args: Any, **kwargs: Any) -> Any:
        return self._step(name, *args, **kwargs)

    call.__name__ = name
    return call


for _name in STORE_STEPS:
    setattr(SteppingStore, _name, _stepping(_name))


@dataclass
class SteppingQueues(FakeQueues):
    """SQS, calling ``before(step)`` just before a send and just after it."""

    before: Callable[[str], None] | None = None

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        if self.before is not None:
            self.before("send")
        sent = super().send(messages, now)
        if self.before is not None:
            self.before("sent")
        return sent


def stepping_fakes(shards: int = 1) -> Fakes:
    """The use cases over stepping tables and queues (on one shard: the dispatcher's steps
    come in one order), Step Functions running each execution's
    first state as the ASL decides it (``fakes.executor.executed`` counts the executions that
    got past it), the dispatcher's checkpoints at the minute before now."""
    fakes = Fakes(store=SteppingStore(), queues=SteppingQueues(), shards=shards)
    fakes.executor = ExecutingFakeExecutor(fakes.store, fakes.clock)
    fakes.executor.waker = fakes.waker
    before = ids.minute_of(fakes.clock()) - timedelta(minutes=1)
    for shard in range(fakes.shards):
        fakes.store.open_minute(shard, before)
        fakes.store.close_minute(shard, before)
    return fakes


def settle(fakes: Fakes, minutes: int = 4) -> Counter[str]:
    """Let the system run on its own for ``minutes``: a tick every 20 s, every message
    delivered once SQS shows it (one a worker hands back comes again after the visibility
    timeout), every execution ended. The executions of each run's target (by run id)."""
    assert isinstance(fakes.executor, ExecutingFakeExecutor)
    assert isinstance(fakes.queues, FakeQueues)
    visibility = timedelta(seconds=r.QUEUES[0].visibility_timeout_seconds)
    waiting: list[tuple[RunMessage, datetime]] = []
    end = fakes.clock() + timedelta(minutes=minutes)
    while fakes.clock() < end:
        fakes.dispatcher.dispatch()
        for _ in range(10):
            now = fakes.clock()
            waiting += [
                (s.message, now + timedelta(seconds=s.delay_seconds)) for s in fakes.queues.sent
            ]
            fakes.queues.sent = []
            visible = [(m, at) for m, at in waiting if at <= fakes.clock()]
            if not visible:
                break
            for item in visible:
                waiting.remove(item)
                try:
                    fakes.starter.start_run(item[0])
                except Conflict:  # handed back: SQS delivers it again later
                    waiting.append((item[0], fakes.clock() + visibility))
        fakes.executor.finish_all()
        fakes.clock.advance(20)
    return fakes.executor.executed
