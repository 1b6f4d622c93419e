"""Cancelling a run that may be executing: shared by the API (cancel) and the worker
(concurrency replace)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chronoq.domain.runs import Attempt, Run, RunStatus
from chronoq.usecases.ports import Clock, Executor, JobRunStore


@dataclass
class Canceller:
    store: JobRunStore
    executor: Executor
    clock: Clock

    def cancel(self, job_id: str, run_id: str, reason: str) -> None:
        """Stop the run's execution (and with it the attempt), record it CANCELLED unless it
        already ended, and take it off the job's active runs."""
        self.executor.stop(run_id, reason)
        run = self.store.get_run(job_id, run_id)
        if run is not None:
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
