"""Cancelling a run that may be executing: shared by the API (cancel) and the worker
(concurrency replace)."""

from __future__ import annotations

from dataclasses import dataclass

from chronoq.domain.runs import RunStatus
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
            self.store.end_run(
                run,
                RunStatus.CANCELLED,
                self.clock(),
                reason,
                [RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING],
            )
        self.store.release_run(job_id, run_id)
