"""Cancelling a run that may be executing: shared by the API (cancel) and the worker
(concurrency replace)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from chronoq.domain.jobs import Job
from chronoq.domain.runs import Attempt, Run, RunStatus
from chronoq.usecases.flow import held_slots
from chronoq.usecases.ports import Clock, Executor, FlowStore, JobStore, RunStore
from chronoq.usecases.wake import Ended, SlotWaker


class CancellerStore(FlowStore, JobStore, RunStore, Protocol):
    """What a cancellation reads and writes."""


@dataclass
class Canceller:
    store: CancellerStore
    executor: Executor
    clock: Clock
    #: Wakes the runs parked on the flows whose slots a run that never started gives back.
    waker: SlotWaker | None = None

    def cancel(self, job_id: str, run_id: str, reason: str, job: Job | None = None) -> None:
        """Stop the run's execution (and with it the attempt), record it CANCELLED unless it
        already ended, and take it off the job's active runs (and give back its flow slots:
        a stopped execution takes no last step). ``job``: the run's job, as the caller read it
        (else it is read, if the run may hold flow slots)."""
        stopped = self.executor.stop(run_id, reason)
        run = self.store.get_run(job_id, run_id)
        if run is not None:
            # an execution stopped, or none to come, takes no last step: its flow slots are
            # given back here (a running EXPRESS execution gives them back at its end)
            if stopped or run.status is not RunStatus.RUNNING:
                if job is None:
                    job = self.store.get_job(job_id)
                slots = held_slots(job, run.owner, run_id)
                for key in slots:
                    self.store.release_flow(key, run_id)
                if slots and run.status is not RunStatus.RUNNING and self.waker is not None:
                    # (a run that started wakes them as it ends: the stream's record)
                    self.waker.runs_ended([Ended(run_id, tuple(slots))])
            now = self.clock()
            self.store.end_run(
                run,
                RunStatus.CANCELLED,
                now,
                reason,
                [RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING],
                attempt=_attempt_ended(run, now, reason),
            )
        self.store.release_run(job_id, run_id)


def _attempt_ended(run: Run, now: datetime, reason: str) -> Attempt | None:
    """The attempt a cancellation ends: the one under way when the run is RUNNING (the state
    machine, stopped, records no more). Its log lines the runner keeps as ever."""
    if run.status is not RunStatus.RUNNING:
        return None
    started = run.attempts[-1].finished_at if run.attempts else (run.started_at or now)
    return Attempt(
        attempt=len(run.attempts) + 1,
        started_at=started,
        finished_at=now,
        outcome="Cancelled",
        error=reason,
    )
