"""The run state machine's writes on the fake tables, each decided by the condition the ASL
file gives its state (see chronoq.fakes.asl): for tests that play the state machine's part
(an execution's first state, its outcome, taking the run off its job's active runs)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from chronoq.aws import codecs
from chronoq.domain.runs import Priority, Run, RunStatus, Trigger
from chronoq.domain.time import format_instant
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes.adapters import FakeExecutor
from chronoq.fakes.asl import gate
from chronoq.fakes.store import FakeStore
from chronoq.usecases.wake import Ended, SlotWaker

#: The state that records each outcome.
OUTCOME_STATES = {
    RunStatus.SUCCEEDED: "MarkSucceeded",
    RunStatus.FAILED: "MarkFailed",
    RunStatus.TIMED_OUT: "MarkTimedOut",
}


def run_item(run: Run) -> dict[str, Any]:
    """The attributes of a run's item, as a condition reads them."""
    item = codecs.new_run_item(run, run.scheduled_at)
    item["started_at"] = format_instant(run.started_at) if run.started_at else None
    item["finished_at"] = format_instant(run.finished_at) if run.finished_at else None
    return item


def _allows(
    state: str, item: dict[str, Any] | None, execution: ExecutionInput, now: datetime
) -> bool:
    condition = gate(state)
    if condition is None:  # the file writes it unconditionally
        return True
    return condition.allows(item, execution.document(), format_instant(now))


def mark_running(store: FakeStore, execution: ExecutionInput, now: datetime) -> bool:
    """State MarkRunning: record the run RUNNING from the execution's input (creating its
    record if it has none), if the file's condition lets it. False: the execution ends
    NotStarted (another execution of the run got there first, or the run was cancelled)."""
    with store._lock:
        kept = store.get_run(execution.job_id, execution.run_id)
        if not _allows("MarkRunning", None if kept is None else run_item(kept), execution, now):
            return False
        if kept is None:  # (if_not_exists: what the input carries)
            kept = Run(
                id=execution.run_id,
                job_id=execution.job_id,
                owner=execution.owner,
                status=RunStatus.SCHEDULED,
                priority=Priority(execution.priority),
                trigger=Trigger(execution.trigger),
                generation=execution.generation,
                scheduled_at=datetime.fromisoformat(execution.scheduled_at),
                queued_at=datetime.fromisoformat(execution.queued_at),
                notify=execution.notify,
            )
        recorded = kept.parameters  # (if_not_exists: the record's, else the input's)
        if recorded is None and execution.parameters:
            recorded = json.loads(execution.parameters)
        store.runs[(kept.job_id, kept.id)] = kept.model_copy(
            update={
                "status": RunStatus.RUNNING,
                "started_at": now,
                "wait_reason": None,
                "parameters": recorded,
            }
        )
        store.parked.pop((kept.job_id, kept.id), None)  # (REMOVE waits_on, wait_order, wait_reason)
        return True


def record_outcome(
    store: FakeStore, execution: ExecutionInput, status: RunStatus, now: datetime, **changes: Any
) -> bool:
    """States MarkSucceeded, MarkFailed, MarkTimedOut: the run's outcome, if the file's
    condition lets it (False: it was cancelled meanwhile, nothing is recorded)."""
    with store._lock:
        kept = store.get_run(execution.job_id, execution.run_id)
        item = None if kept is None else run_item(kept)
        if not _allows(OUTCOME_STATES[status], item, execution, now):
            return False
        if kept is None:  # (an update of no item creates it, keys and all)
            return False
        store.runs[(kept.job_id, kept.id)] = kept.model_copy(
            update={"status": status, "finished_at": now, **changes}
        )
        return True


def release_job(store: FakeStore, execution: ExecutionInput, now: datetime) -> bool:
    """State ReleaseJob (for a job that keeps its active runs): the run taken off them, if the
    file's condition lets it."""
    if not execution.exclusive:
        return False
    with store._lock:
        job = store.get_job(execution.job_id)
        item = None if job is None else codecs.job_item(job)
        if not _allows("ReleaseJob", item, execution, now) or job is None:
            return False
        store.release_run(job.id, execution.run_id)
        return True


class ExecutingFakeExecutor(FakeExecutor):
    """Step Functions with the run state machine's writes: every execution started (STANDARD
    once per name, EXPRESS each time) goes through MarkRunning at once, as the ASL file's
    condition decides it, and, past it, counts as an execution of the run's target
    (``executed``); ``finish_all`` ends the executions under way (the outcome, then
    ReleaseJob, as the file's conditions decide them)."""

    def __init__(self, store: FakeStore, clock: Callable[[], datetime]) -> None:
        super().__init__()
        self.store = store
        self.clock = clock
        #: run id -> executions that got past MarkRunning (its target called)
        self.executed: Counter[str] = Counter()
        #: run ids whose execution got past MarkRunning
        self.past_first_state: set[str] = set()
        #: What the notifier does as it hears of a run's end that gave flow slots back
        #: (None: nobody wakes the runs parked on them).
        self.waker: SlotWaker | None = None

    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        if execution_input.fits_express():
            self.start_batch([execution_input])
            return True
        first = run_id not in self.started
        accepted = super().start(run_id, execution_input)
        if accepted and first:
            self.begin(run_id, execution_input)
        return accepted

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        super().start_batch(inputs)
        for execution_input in inputs:  # each run's iteration
            self.begin(execution_input.run_id, execution_input)

    def begin(self, run_id: str, execution_input: ExecutionInput) -> bool:
        """The execution's first state; past it, the target called (True)."""
        if not mark_running(self.store, execution_input, self.clock()):
            if self.started.get(run_id) is execution_input:
                self.finish(run_id)  # NotStarted: cancelled or ended meanwhile
            return False
        self.past_first_state.add(run_id)
        self.executed[run_id] += 1
        self.executing(self.store.runs[(execution_input.job_id, run_id)])
        return True

    def executing(self, run: Run) -> None:
        """Called as a run's target is called (for subclasses that keep a ledger)."""

    def finish_all(self, status: RunStatus = RunStatus.SUCCEEDED) -> None:
        """Every execution under way ends: its outcome ``status``, then (if it got past
        MarkRunning) ReleaseFlows and, for a job that keeps its active runs, ReleaseJob."""
        for run_id, execution_input in list(self.started.items()):
            if run_id in self.finished or run_id in self.stopped:
                continue
            now = self.clock()
            record_outcome(self.store, execution_input, status, now)
            if run_id in self.past_first_state:  # (NotStarted ends before these)
                for key in execution_input.flows:  # ReleaseFlows: its slot in each flow
                    self.store.release_flow(key, run_id)
                release_job(self.store, execution_input, now)
                if execution_input.flows and self.waker is not None:  # the notifier's part
                    self.waker.runs_ended([Ended.of(run_id, execution_input.slots)])
            self.finish(run_id)
