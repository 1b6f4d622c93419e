"""Never lose a run, never run one twice: a Hypothesis state machine drives users (create,
patch, pause, resume, delete, trigger, cancel) and the system (ticks, dispatches that crash
halfway, deliveries duplicated, reordered and late, workers that die after claiming, runs that
end) over the use cases on the in-memory fakes and a fake clock, and checks the promises after
every step and once everything has settled:

- no run executes twice, and no fire time of a job executes twice (under any run id);
- nothing a change removed ever starts (an occurrence planned before a pause, a new schedule,
  a new priority) unless a worker had claimed it before the change;
- the run the job announced last (its ``next_run_at`` after the last change) executed exactly
  once, unless the user cancelled that run or deleted its job (or, as its job asks, it was
  skipped behind a run still active, replaced by a newer one, or missed its start deadline
  while the system stood still longer than that), and no run is left unfinished.

The run state machine's conditional writes (MarkRunning, the outcome, ReleaseJob) are decided
by the conditions of the ASL file itself (chronoq.fakes.asl); a dispatcher tick may die
between any two of its steps (every store call and every send).

Why this module is long: it is one Hypothesis state machine: its rules (every user action and
every step of the system, with the ways each fails) and the promises checked after each step
share the ledger and the recording fakes defined beside them.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Concurrency, Job, JobPatch, JobState
from chronoq.domain.runs import (
    ACTIVE_STATUSES,
    Attempt,
    Priority,
    Run,
    RunMessage,
    RunStatus,
    Trigger,
)
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes import FakeQueues, FakeStore
from chronoq.fakes.statemachine import ExecutingFakeExecutor
from chronoq.usecases.ports import Claim
from hypothesis import HealthCheck, Phase, settings
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
#: How far ahead a tick enqueues: a minute is enqueued once the clock is this far from it.
DISPATCH_AHEAD = timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS)
#: A start deadline the model's clock never outruns (its stories last well under an hour).
LONG_DEADLINE = 3 * 3600


class Crash(Exception):
    """A function stopped halfway (its process died)."""


@dataclass
class Ledger:
    """What happened, in the order it happened (a sequence number per step: every store call
    and every send)."""

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
    #: run id recorded SKIPPED -> the status, then, of the run its reason names as active
    blocked_by: dict[str, RunStatus | None] = field(default_factory=dict)
    #: a step raises Crash when ``seq`` reaches this
    crash_at: int | None = None

    def tick(self) -> int:
        self.seq += 1
        if self.crash_at is not None and self.seq >= self.crash_at:
            self.crash_at = None
            raise Crash(f"crashed at step {self.seq}")
        return self.seq


#: The store calls at which a function may die (besides those RecordingStore overrides).
STEPS = (
    "get_job",
    "get_jobs",
    "get_run",
    "create_run",
    "delete_pending_run",
    "release_run",
    "put_occurrences",
    "schedule_page",
    "dispatch_marks",
    "advance_within",
    "opened_through",
    "open_minute",
    "close_minute",
    "reopen_minute",
)


class RecordingStore(FakeStore):
    """The fake tables, noting claims, changes of generation and skips; each call a step at
    which the caller may die."""

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
        before = self.jobs.get(job.id)
        saved = super().save_job(job, expected_version)
        if saved and before is not None and job.generation != before.generation:
            self.ledger.left.setdefault((job.id, before.generation), seq)
        return saved

    def delete_job(self, job_id: str) -> bool:
        seq = self.ledger.tick()
        before = self.jobs.get(job_id)
        deleted = super().delete_job(job_id)
        if deleted and before is not None:
            self.ledger.left.setdefault((job_id, before.generation), seq)
        return deleted

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        self.ledger.tick()
        ended = super().end_run(run, status, now, reason, only_from, attempt)
        named = re.search(r"run (\S+) is still active", reason)
        if ended and status is RunStatus.SKIPPED and named:
            blocker = self.runs.get((run.job_id, named.group(1)))
            self.ledger.blocked_by[run.id] = None if blocker is None else blocker.status
        return ended


def _step(name: str) -> Any:
    def call(self: RecordingStore, *args: Any, **kwargs: Any) -> Any:
        self.ledger.tick()
        return getattr(FakeStore, name)(self, *args, **kwargs)

    call.__name__ = name
    return call


for _name in STEPS:
    setattr(RecordingStore, _name, _step(_name))


class RecordingQueues(FakeQueues):
    """SQS; a sender may die just before a send, or just after it (the messages are sent)."""

    def __init__(self, ledger: Ledger) -> None:
        super().__init__()
        self.ledger = ledger

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        self.ledger.tick()
        sent = super().send(messages, now)
        self.ledger.tick()
        return sent


class StepFunctions(ExecutingFakeExecutor):
    """Executions that begin at once: MarkRunning, as the ASL file's condition decides it,
    and the target called; they end when ``finish_all`` says (the outcome and ReleaseJob, as
    the file's conditions decide them). A worker may die as it asks for one."""

    def __init__(self, store: RecordingStore, clock: Any) -> None:
        super().__init__(store, clock)
        self.ledger = store.ledger
        #: the worker dies when it next asks for an execution (after its claim)
        self.crash_next = False

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        if self.crash_next and not execution_input.fits_express():
            self.crash_next = False
            raise Crash("the worker died between its claim and StartExecution")
        return super().start(run_id, execution_input)

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        if self.crash_next:
            self.crash_next = False
            raise Crash("the worker died between its claim and StartExecution")
        super().start_batch(inputs)

    def executing(self, run: Run) -> None:
        ledger = self.ledger
        ledger.executed[run.id] += 1
        if run.trigger is Trigger.SCHEDULE:
            ledger.fire_times[(run.job_id, run.scheduled_at)] += 1
            left = ledger.left.get((run.job_id, run.generation))
            if left is not None and ledger.claimed.get(run.id, ledger.seq) > left:
                ledger.removed_but_started.append(run.id)


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
        self.fakes = Fakes(store=store, queues=RecordingQueues(self.ledger))
        self.fakes.executor = StepFunctions(store, self.fakes.clock)
        self.fakes.executor.waker = self.fakes.waker
        self.fakes.clock.set(datetime.fromisoformat("2026-11-26T11:58:40+00:00"))
        #: SQS: messages and the instant each becomes visible
        self.queue: list[tuple[RunMessage, datetime]] = []
        #: job id -> the (fire time, generation) its last change announced
        self.announced: dict[str, tuple[datetime | None, int, JobState]] = {}
        self.deleted: set[str] = set()
        #: (run id, generation) of every run the user cancelled
        self.cancelled: set[tuple[str, int]] = set()
        #: when the last settling (``teardown``) began
        self.settled_from = self.now

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
        deadline=st.sampled_from([LONG_DEADLINE, 60]),
    )
    def create(
        self, kind: str, offset: int, concurrency: str, priority: str, deadline: int = LONG_DEADLINE
    ) -> str:
        job = self.fakes.jobs.create_job(
            OWNER,
            job_spec(
                schedule(kind, self.now, offset),
                concurrency=concurrency,
                priority=priority,
                start_deadline_seconds=deadline,
            ),
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
        self.cancelled.add((chosen.id, chosen.generation))

    # --- the system -----------------------------------------------------------------------

    @rule(seconds=st.integers(1, 75))
    def time_passes(self, seconds: int) -> None:
        self.fakes.clock.advance(seconds)

    @rule(crash_after=st.none() | st.integers(1, 40))
    def dispatch(self, crash_after: int | None) -> None:
        """A tick, which may die at any of its steps (its shards in turn: where it dies is
        the same every time)."""
        if crash_after is not None:
            self.ledger.crash_at = self.ledger.seq + crash_after
        try:
            for shard in range(self.fakes.shards):
                self.fakes.dispatcher.dispatch([shard])
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

    def settle(self, until: datetime, settled: Callable[[], bool] | None = None) -> None:
        """Let the system run up to ``until`` (or until ``settled`` says it has), skipping the
        time in which nothing can happen: at each moment something can (the dispatcher may
        enqueue a new minute, a message becomes visible), a tick if a shard has a minute to
        enqueue, every visible message delivered, then the runs under way end; the clock then
        jumps to the next such moment."""
        executor = self.fakes.executor
        assert isinstance(executor, StepFunctions)
        while self.now < until:
            if self._minute_to_enqueue():
                self.dispatch(None)
            for _ in range(50):
                if not any(at <= self.now for _, at in self.queue):
                    break
                self.deliver(100, duplicate=False, reverse=False, crash=None)
                self.delivered()
            executor.finish_all()
            if settled is not None and settled():
                return
            self.fakes.clock.set(min(until, self._next_moment()))

    def _minute_to_enqueue(self) -> bool:
        """Would a tick now enqueue anything: is a minute it may enqueue not yet closed in
        some shard (new, or left open by a tick that died)? (Otherwise a tick only reads
        the shards' marks.)"""
        last = ids.minute_of(self.now + DISPATCH_AHEAD)
        closed = self.fakes.store.checkpoints(self.fakes.shards).values()
        return any(minute is None or minute < last for minute in closed)

    def _next_moment(self) -> datetime:
        """The next moment anything can happen: a message becomes visible, or the dispatcher
        may enqueue a new minute (or, if a tick left a minute to enqueue, a tick again)."""
        now = self.now
        moments = [at for _, at in self.queue if at > now]
        if any(at <= now for _, at in self.queue):  # more than one settling round delivers
            moments.append(now + timedelta(seconds=1))
        if self._minute_to_enqueue():
            moments.append(now + timedelta(seconds=20))
        else:
            last = ids.minute_of(now + DISPATCH_AHEAD)
            moments.append(last + timedelta(minutes=1) - DISPATCH_AHEAD)
        return min(moments)

    def delivered(self) -> None:
        """Called after each delivery while settling (for promises checked meanwhile)."""

    def teardown(self) -> None:
        """Let everything settle for 9 minutes (ticks every minute, every message delivered,
        runs ended), then every run a job announced last has executed exactly once (see
        ``excused``), and nothing is left unfinished."""
        start = self.settled_from = self.now
        self.settle(start + timedelta(minutes=9))
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
            run_id = ids.run_id(job_id, fire_time, generation)
            kept = self.fakes.store.get_run(job_id, run_id)
            if self.excused(run_id, generation, kept):
                continue
            executed = self.ledger.executed[run_id]
            status = kept.status if kept else "no record"
            assert executed == 1, (
                f"the run {run_id} that next_run_at announced executed {executed} times"
                f" (its record: {status})"
            )

    def excused(self, run_id: str, generation: int, kept: Run | None) -> bool:
        """May the announced run have not executed? Only if the user cancelled it; or, as its
        job asks, it was skipped (forbid) while the run its reason names was still active,
        cancelled by a newer run that executed (replace), or missed its start deadline (a
        short one, which the model's clock outran)."""
        if (run_id, generation) in self.cancelled:
            return True
        if kept is None:
            return False
        job = self.fakes.store.jobs[kept.job_id]
        if kept.status is RunStatus.SKIPPED:
            return job.concurrency is Concurrency.FORBID and self.ledger.blocked_by.get(run_id) in (
                RunStatus.QUEUED,
                RunStatus.RUNNING,
            )
        if kept.status is RunStatus.CANCELLED:
            replaced = re.fullmatch(
                r"concurrency replace: replaced by run (\S+)", kept.reason or ""
            )
            return (
                job.concurrency is Concurrency.REPLACE
                and replaced is not None
                and self.ledger.executed[replaced.group(1)] == 1
            )
        if kept.status is RunStatus.MISSED:
            assert kept.finished_at is not None
            late = (kept.finished_at - kept.scheduled_at).total_seconds()
            return job.start_deadline_seconds < LONG_DEADLINE and late > job.start_deadline_seconds
        return False


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
    # (make mutants only asks whether it fails, not for the shortest story)
    phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("CHRONOQ_NO_SHRINK")],
)
TestReliability = Reliability.TestCase


def test_given_a_forbid_run_claimed_by_a_worker_that_died_when_the_user_cancels_it_and_then_patches_the_job_then_the_run_announced_after_executes_once() -> (
    None
):
    story = Reliability()
    job_id = cast(str, story.create("every minute", 5, "forbid", "normal"))  # next: 11:59:00
    story.dispatch(None)  # its minute sent, to arrive a second before it is due
    story.time_passes(19)
    story.deliver(1, duplicate=False, reverse=False, crash="after claim")  # claimed, then died
    (claimed,) = story.fakes.runs.list_runs(OWNER, job_id, 10)
    assert claimed.status is RunStatus.QUEUED

    story.cancel(job_id, newest=True)
    story.patch(job_id, "b", "high")  # a new generation, announcing the same instant

    assert story.announced[job_id][0] == claimed.scheduled_at
    story.teardown()  # the announced run executed once
    story.no_run_executes_twice()
