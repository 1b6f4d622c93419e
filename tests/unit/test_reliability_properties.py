"""Never lose a run, never run one twice: a Hypothesis state machine drives users (create,
patch, pause, resume, delete, trigger, cancel) and the system (ticks, dispatches that crash
halfway, deliveries duplicated, reordered and late, workers that die after claiming, runs that
end) over the use cases on the in-memory fakes and a fake clock, and checks the promises after
every step and once everything has settled:

- no run executes twice, and no fire time of a job executes twice (under any run id);
- nothing a change removed ever starts (an occurrence planned before a pause, a new schedule,
  a new priority) unless a worker had claimed it before the change;
- every fire time the job announced last (its ``next_run_at`` after the last change) ends in
  exactly one final status, and no run is left unfinished.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Job, JobPatch, JobState
from chronoq.domain.runs import ACTIVE_STATUSES, Run, RunMessage, RunStatus, Trigger
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes import FakeExecutor, FakeStore
from chronoq.resources import Priority
from chronoq.usecases.ports import Claim
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)

from tests.builders import OWNER, Fakes, job_spec

#: How long a message a worker could not settle stays invisible (the queues' setting).
VISIBILITY = timedelta(seconds=r.QUEUES[0].visibility_timeout_seconds)


class Crash(Exception):
    """A function stopped halfway (its process died)."""


@dataclass
class Ledger:
    """What happened, in the order it happened (a sequence number per store write)."""

    seq: int = 0
    #: run id -> the sequence number of its first claim
    claimed: dict[str, int] = field(default_factory=dict)
    #: (job id, generation) -> the sequence number at which the job left that generation
    left: dict[tuple[str, int], int] = field(default_factory=dict)
    #: run id -> times its target was executed
    executed: Counter[str] = field(default_factory=Counter)
    #: (job id, scheduled instant) -> executions of scheduled runs at that instant
    fire_times: Counter[tuple[str, datetime]] = field(default_factory=Counter)
    #: runs started although a change had removed them first
    removed_but_started: list[str] = field(default_factory=list)
    #: a store write raises Crash when ``seq`` reaches this
    crash_at: int | None = None

    def tick(self) -> int:
        self.seq += 1
        if self.crash_at is not None and self.seq >= self.crash_at:
            self.crash_at = None
            raise Crash(f"crashed at write {self.seq}")
        return self.seq


class RecordingStore(FakeStore):
    """The fake tables, noting claims and changes of generation, and able to crash."""

    def __init__(self, ledger: Ledger) -> None:
        super().__init__()
        self.ledger = ledger

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        seq = self.ledger.tick()
        claim = super().claim_run(job, run, queued_at, now, exclusive)
        if claim == "claimed":
            self.ledger.claimed.setdefault(run.id, seq)
        return claim

    def save_job(self, job: Job, expected_version: int) -> bool:
        seq = self.ledger.tick()
        before = self.get_job(job.id)
        saved = super().save_job(job, expected_version)
        if saved and before is not None and job.generation != before.generation:
            self.ledger.left.setdefault((job.id, before.generation), seq)
        return saved

    def delete_job(self, job_id: str) -> bool:
        seq = self.ledger.tick()
        before = self.get_job(job_id)
        deleted = super().delete_job(job_id)
        if deleted and before is not None:
            self.ledger.left.setdefault((job_id, before.generation), seq)
        return deleted

    def create_run(self, run: Run, now: datetime) -> bool:
        self.ledger.tick()
        return super().create_run(run, now)

    def put_occurrences(
        self, occurrences: Any, shards: int, now: datetime, pack: str | None = None
    ) -> None:
        self.ledger.tick()
        super().put_occurrences(occurrences, shards, now, pack)

    def open_minute(self, shard: int, minute: datetime) -> None:
        self.ledger.tick()
        super().open_minute(shard, minute)

    def close_minute(self, shard: int, minute: datetime) -> None:
        self.ledger.tick()
        super().close_minute(shard, minute)


class StepFunctions(FakeExecutor):
    """Executions that begin at once: MarkRunning (only from QUEUED, as the state machine's
    condition says) and the target called; they end when ``finish_all`` says."""

    def __init__(self, store: RecordingStore, clock: Any) -> None:
        super().__init__()
        self.store = store
        self.clock = clock
        #: the worker dies when it next asks for an execution (after its claim)
        self.crash_next = False

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        if execution_input.fits_express():
            self.start_batch([execution_input])
            return True
        if self.crash_next:
            self.crash_next = False
            raise Crash("the worker died between its claim and StartExecution")
        first = run_id not in self.started
        accepted = super().start(run_id, execution_input)
        if accepted and first:
            self._begin(run_id, execution_input)
        return accepted

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        if self.crash_next:
            self.crash_next = False
            raise Crash("the worker died between its claim and StartExecution")
        super().start_batch(inputs)
        for execution_input in inputs:  # each run's iteration, as the first to get there
            self._begin(execution_input.run_id, execution_input)

    def _begin(self, run_id: str, execution_input: ExecutionInput) -> None:
        """The execution's first state (MarkRunning) and its target called."""
        ledger = self.store.ledger
        run = self.store.get_run(execution_input.job_id, run_id)
        if run is not None and run.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            if run_id not in self.started or self.started[run_id] is execution_input:
                self.finish(run_id)  # NotStarted: cancelled or ended meanwhile
            return
        if run is None:  # a scheduled run is recorded when it starts
            run = Run(
                id=run_id,
                job_id=execution_input.job_id,
                owner=execution_input.owner,
                status=RunStatus.SCHEDULED,
                priority=Priority(execution_input.priority),
                trigger=Trigger(execution_input.trigger),
                scheduled_at=datetime.fromisoformat(execution_input.scheduled_at),
                generation=execution_input.generation,
                notify=execution_input.notify,
            )
            self.store.create_run(run, self.clock())
        self.store.update_run(run.job_id, run_id, status=RunStatus.RUNNING, started_at=self.clock())
        ledger.executed[run_id] += 1
        if run.trigger is Trigger.SCHEDULE:
            ledger.fire_times[(run.job_id, run.scheduled_at)] += 1
            left = ledger.left.get((run.job_id, run.generation))
            if left is not None and ledger.claimed.get(run_id, ledger.seq) > left:
                ledger.removed_but_started.append(run_id)

    def stop(self, run_id: str, reason: str) -> bool:
        return super().stop(run_id, reason)  # the run's status is the canceller's to write

    def finish_all(self) -> None:
        for run_id, execution_input in list(self.started.items()):
            if run_id in self.finished or run_id in self.stopped:
                continue
            run = self.store.get_run(execution_input.job_id, run_id)
            if run is not None and run.status is RunStatus.RUNNING:
                self.store.update_run(
                    run.job_id, run_id, status=RunStatus.SUCCEEDED, finished_at=self.clock()
                )
            for key in execution_input.flows:  # ReleaseFlows
                self.store.release_flow(key, run_id)
            if execution_input.exclusive:
                self.store.release_run(execution_input.job_id, run_id)  # ReleaseJob
            self.finish(run_id)


SCHEDULES = st.sampled_from(["every minute", "every 5 minutes", "hourly", "rate", "at"])


def schedule(kind: str, now: datetime, offset: int) -> dict[str, Any]:
    if kind == "at":
        return {"type": "at", "at": (now + timedelta(seconds=offset)).isoformat()}
    if kind == "rate":
        return {"type": "rate", "every": "2 minutes"}
    expression = {"every minute": "* * * * *", "every 5 minutes": "*/5 * * * *"}.get(
        kind, "7 * * * *"
    )
    return {"type": "cron", "expression": expression}


class Reliability(RuleBasedStateMachine):
    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.ledger = Ledger()
        store = RecordingStore(self.ledger)
        self.fakes = Fakes(store=store)
        self.fakes.executor = StepFunctions(store, self.fakes.clock)
        self.fakes.clock.set(datetime.fromisoformat("2026-11-26T11:58:40+00:00"))
        #: SQS: messages and the instant each becomes visible
        self.queue: list[tuple[RunMessage, datetime]] = []
        #: job id -> the (fire time, generation) its last change announced
        self.announced: dict[str, tuple[datetime | None, int, JobState]] = {}
        self.deleted: set[str] = set()

    @property
    def now(self) -> datetime:
        return self.fakes.clock()

    def _collect(self) -> None:
        """What the use cases sent goes onto the queues, visible after its delay."""
        for sent in self.fakes.queues.sent:
            self.queue.append((sent.message, self.now + timedelta(seconds=sent.delay_seconds)))
        self.fakes.queues.sent = []

    def _announce(self, job: Job) -> None:
        self.announced[job.id] = (job.next_run_at, job.generation, job.state)

    # --- users ----------------------------------------------------------------------------

    @rule(
        target=jobs,
        kind=SCHEDULES,
        offset=st.integers(5, 240),
        concurrency=st.sampled_from(["allow", "forbid", "replace"]),
        priority=st.sampled_from(["high", "normal", "low"]),
    )
    def create(self, kind: str, offset: int, concurrency: str, priority: str) -> str:
        job = self.fakes.jobs.create_job(
            OWNER,
            job_spec(schedule(kind, self.now, offset), concurrency=concurrency, priority=priority),
        )
        self._announce(job)
        self._collect()
        return job.id

    @rule(job_id=jobs, kind=SCHEDULES, offset=st.integers(5, 240))
    def reschedule(self, job_id: str, kind: str, offset: int) -> None:
        self._change(job_id, {"schedule": schedule(kind, self.now, offset)})

    @rule(job_id=jobs, name=st.sampled_from(["a", "b"]), priority=st.sampled_from(["high", "low"]))
    def patch(self, job_id: str, name: str, priority: str) -> None:
        self._change(job_id, {"name": name, "priority": priority})

    def _change(self, job_id: str, changes: dict[str, Any]) -> None:
        try:
            job = self.fakes.jobs.update_job(OWNER, job_id, JobPatch.model_validate(changes))
        except (NotFound, Conflict, InvalidRequest):  # gone, or no future fire time
            return
        self._announce(job)
        self._collect()

    @rule(job_id=jobs)
    def pause(self, job_id: str) -> None:
        try:
            self._announce(self.fakes.jobs.pause_job(OWNER, job_id))
        except (NotFound, Conflict):
            return

    @rule(job_id=jobs)
    def resume(self, job_id: str) -> None:
        try:
            self._announce(self.fakes.jobs.resume_job(OWNER, job_id))
        except NotFound:
            return
        self._collect()

    @rule(job_id=consumes(jobs))
    def delete(self, job_id: str) -> None:
        try:
            self.fakes.jobs.delete_job(OWNER, job_id)
        except NotFound:
            return
        self.deleted.add(job_id)

    @rule(job_id=jobs)
    def trigger(self, job_id: str) -> None:
        try:
            self.fakes.jobs.trigger_job(OWNER, job_id)
        except NotFound:
            return
        self._collect()

    @rule(job_id=jobs, newest=st.booleans())
    def cancel(self, job_id: str, newest: bool) -> None:
        try:
            runs = self.fakes.runs.list_runs(OWNER, job_id, 10)
        except NotFound:
            return
        open_runs = [x for x in runs if x.status in ACTIVE_STATUSES]
        if not open_runs:
            return
        chosen = open_runs[0] if newest else open_runs[-1]
        try:
            self.fakes.runs.cancel_run(OWNER, chosen.id)
        except Conflict:
            return

    # --- the system -----------------------------------------------------------------------

    @rule(seconds=st.integers(1, 75))
    def time_passes(self, seconds: int) -> None:
        self.fakes.clock.advance(seconds)

    @rule(crash_after=st.none() | st.integers(1, 12))
    def dispatch(self, crash_after: int | None) -> None:
        if crash_after is not None:
            self.ledger.crash_at = self.ledger.seq + crash_after
        try:
            self.fakes.dispatcher.dispatch()
        except Crash:
            pass
        finally:
            self.ledger.crash_at = None
            self._collect()

    @rule(
        count=st.integers(1, 8),
        duplicate=st.booleans(),
        reverse=st.booleans(),
        crash=st.sampled_from([None, "after claim", "after start"]),
    )
    def deliver(self, count: int, duplicate: bool, reverse: bool, crash: str | None) -> None:
        """A worker gets a batch: possibly duplicated, reordered, late (whatever has become
        visible), and possibly dies after claiming a run or after starting it, before the
        message is deleted (SQS then delivers it again)."""
        visible = [(m, at) for m, at in self.queue if at <= self.now][:count]
        for item in visible:
            self.queue.remove(item)
        batch = [m for m, _ in visible]
        if duplicate:
            batch = batch + batch
        if reverse:
            batch.reverse()
        assert isinstance(self.fakes.executor, StepFunctions)
        for i, message in enumerate(batch):
            self.fakes.executor.crash_next = i == 0 and crash == "after claim"
            try:
                self.fakes.starter.start_run(message)
            except (Conflict, Crash):  # not settled: SQS delivers it again later
                self.queue.append((message, self.now + VISIBILITY))
                continue
            finally:
                self.fakes.executor.crash_next = False
            if i == 0 and crash == "after start":
                self.queue.append((message, self.now + VISIBILITY))
        self._collect()

    @rule()
    def runs_end(self) -> None:
        assert isinstance(self.fakes.executor, StepFunctions)
        self.fakes.executor.finish_all()

    # --- the promises ---------------------------------------------------------------------

    @invariant()
    def no_run_executes_twice(self) -> None:
        assert all(n == 1 for n in self.ledger.executed.values()), self.ledger.executed
        assert all(n == 1 for n in self.ledger.fire_times.values()), self.ledger.fire_times

    @invariant()
    def nothing_a_change_removed_starts(self) -> None:
        assert self.ledger.removed_but_started == []

    def teardown(self) -> None:
        """Let everything settle (ticks every minute, every message delivered, runs ended),
        then every announced fire time has ended, once, and nothing is left unfinished."""
        start = self.now
        assert isinstance(self.fakes.executor, StepFunctions)
        while self.now < start + timedelta(minutes=9):
            self.dispatch(None)
            for _ in range(50):
                if not any(at <= self.now for _, at in self.queue):
                    break
                self.deliver(100, duplicate=False, reverse=False, crash=None)
            self.fakes.executor.finish_all()
            self.fakes.clock.advance(20)
        self.no_run_executes_twice()
        self.nothing_a_change_removed_starts()

        for run in self.fakes.store.runs.values():
            if run.scheduled_at <= start:
                assert run.status not in ACTIVE_STATUSES, (run.id, run.status)
        for job_id, (fire_time, generation, state) in self.announced.items():
            if job_id in self.deleted or fire_time is None or state is not JobState.ACTIVE:
                continue
            if fire_time > start + timedelta(minutes=4):
                continue
            kept = self.fakes.store.get_run(job_id, ids.run_id(job_id, fire_time, generation))
            assert kept is not None, f"the run {job_id} announced for {fire_time} was lost"
            assert kept.status not in ACTIVE_STATUSES, (kept.id, kept.status)


# The same examples every run (a test suite must not fail by chance); set
# CHRONOQ_PROPERTY_EXPLORE=1 (and CHRONOQ_PROPERTY_EXAMPLES, CHRONOQ_PROPERTY_STEPS) to look for
# new ones.
Reliability.TestCase.settings = settings(
    derandomize=not os.environ.get("CHRONOQ_PROPERTY_EXPLORE"),
    max_examples=int(os.environ.get("CHRONOQ_PROPERTY_EXAMPLES", "60")),
    stateful_step_count=int(os.environ.get("CHRONOQ_PROPERTY_STEPS", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
)
TestReliability = Reliability.TestCase
