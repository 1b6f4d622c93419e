"""The worker: start one queued run at its second, once, unless it must not start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chronoq import resources as r
from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Concurrency, Job
from chronoq.domain.runs import Run, RunMessage, RunStatus, Trigger
from chronoq.execution.contract import ExecutionInput
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.ports import Clock, Executor, JobRunStore, Sleep
from chronoq.usecases.timeindex import end_unstarted, new_run

#: How often the worker re-reads a job that changed under it before giving the run back.
CLAIM_ATTEMPTS = 3


class ClaimHeld(Conflict):
    """Another worker claimed the run moments ago and is starting it: the message is retried
    later (when the claim has either become a running run or lapsed)."""


#: What became of a message.
Outcome = Literal["started", "duplicate", "gone", "superseded", "missed", "skipped", "taken"]


@dataclass
class RunStarter:
    store: JobRunStore
    executor: Executor
    canceller: Canceller
    clock: Clock
    sleep: Sleep

    def start_run(self, message: RunMessage) -> Outcome:
        """Start one queued run at its scheduled second, unless it must not start. Runs
        reach the worker up to DISPATCH_LEAD_SECONDS early, by design: the wait here is what
        makes a run start on its second, and it is taken in queue order, so a burst of runs
        due together starts in priority order. Returns what happened.

        A run already claimed (QUEUED) still starts whatever changed in its job since: the
        claim was the decision. A message that cannot be settled now raises, and SQS
        delivers it again after the queue's visibility timeout."""
        early = (message.scheduled_at - self.clock()).total_seconds()
        if early > 0:
            self.sleep(min(early, max(r.DISPATCH_LEAD_SECONDS.values()) + 1))
        for _ in range(CLAIM_ATTEMPTS):
            outcome = self._try_start(message)
            if outcome != "job_changed":
                return outcome
        raise Conflict(f"job {message.job_id} kept changing; run {message.run_id} retried later")

    def _try_start(self, message: RunMessage) -> Outcome | Literal["job_changed"]:
        job = self.store.get_job(message.job_id)
        kept = self.store.get_run(message.job_id, message.run_id)
        if kept is not None and kept.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            return "duplicate"
        now = self.clock()
        not_started = [RunStatus.SCHEDULED, RunStatus.QUEUED]
        if job is None:  # deleted: a run that had not started never will
            if kept is not None:
                self.store.end_run(
                    kept, RunStatus.CANCELLED, now, "its job was deleted", not_started
                )
            return "gone"
        # A scheduled run has no record until it starts (the state machine writes it).
        run = kept or new_run(
            job, message.run_id, message.scheduled_at, Trigger.SCHEDULE
        ).model_copy(update={"generation": message.generation})
        claimed = run.status is RunStatus.QUEUED  # by a worker that may have died meanwhile
        if not claimed and not job.is_current(run):
            if kept is not None:
                self.store.delete_pending_run(run.job_id, run.id)
            return "superseded"
        if job.is_late(run.scheduled_at, now):
            self._end(kept, run, RunStatus.MISSED, job.missed_reason())
            if claimed:
                self.store.release_run(job.id, run.id)
            return "missed"
        exclusive = job.concurrency is not Concurrency.ALLOW
        if exclusive and not claimed:
            active = self._still_active(job, run)
            if active and job.concurrency is Concurrency.FORBID:
                reason = f"concurrency forbid: run {sorted(active)[0]} is still active"
                self._end(kept, run, RunStatus.SKIPPED, reason)
                return "skipped"
            if active and job.concurrency is Concurrency.REPLACE:
                reason = f"concurrency replace: replaced by run {run.id}"
                for other in sorted(active):
                    self.canceller.cancel(job.id, other, reason)
                return "job_changed"  # read the job again: its active runs are gone now
        if exclusive:
            # The job keeps its active runs: claim the run in them first.
            claim = self.store.claim_run(job, run, message.queued_at, now, exclusive=True)
            if claim == "held":
                raise ClaimHeld(f"run {run.id} is being started by another worker; ask again later")
            if claim != "claimed":
                return claim
        execution_input = ExecutionInput.of(
            job,
            run.id,
            run.scheduled_at,
            generation=run.generation,
            trigger=run.trigger,
            queued_at=run.queued_at or message.queued_at,
        )
        started = self.executor.start(run.id, execution_input)
        return "started" if started else "duplicate"

    def _end(self, kept: Run | None, run: Run, status: RunStatus, reason: str) -> None:
        end_unstarted(self.store, kept, run, status, reason, self.clock())

    def _still_active(self, job: Job, run: Run) -> set[str]:
        """The job's other active runs, after forgetting those that have in fact ended, and
        ending those that never will: claimed, never started, and past their start deadline
        (their worker died and SQS gave up on their message)."""
        active = set()
        now = self.clock()
        for other in job.active_runs - {run.id}:
            found = self.store.get_run(job.id, other)
            if (
                found is not None
                and found.status is RunStatus.QUEUED
                and job.is_late(found.scheduled_at, now)
            ):
                self.store.end_run(
                    found, RunStatus.MISSED, now, job.missed_reason(), [RunStatus.QUEUED]
                )
                found = self.store.get_run(job.id, other)
            if found is None or found.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
                self.store.release_run(job.id, other)
            else:
                active.add(other)
        return active
