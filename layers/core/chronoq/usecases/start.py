"""The worker: start a batch's runs, each at its second, once, unless it must not start."""

from __future__ import annotations

import contextvars
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Literal, TypeVar

from chronoq import resources as r
from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Concurrency, Job
from chronoq.domain.runs import Run, RunMessage, RunStatus
from chronoq.domain.time import utc_second
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
        """Start one run at its second (see ``start_runs``); raises what must send its
        message back to SQS."""
        (result,) = self.start_runs([message])
        if isinstance(result, Exception):
            raise result
        return result

    def start_runs(self, messages: list[RunMessage]) -> list[Outcome | Exception]:
        """Start a batch's runs, each at its scheduled second, unless it must not start.
        Runs reach the worker in the second before they are due. The runs due in the same
        second are decided together (concurrently); those that fit EXPRESS start at once, in
        one execution, which waits for their second (state OnItsSecond: an EXPRESS execution
        waits at half the price of this function); for the others this function waits, then
        starts them. Answers, for each message, what happened, or the error that sends it
        back to SQS (delivered again after the queue's visibility timeout).

        A run already claimed (QUEUED) still starts whatever changed in its job since: the
        claim was the decision."""
        results: list[Outcome | Exception] = ["gone"] * len(messages)
        by_second: dict[datetime, list[int]] = defaultdict(list)
        for i, message in enumerate(messages):
            by_second[utc_second(message.scheduled_at)].append(i)
        for second in sorted(by_second):
            indexes = by_second[second]
            group = [messages[i] for i in indexes]
            # (one consistent read for the jobs of the group; a job that changes under a run
            # is read again on its own)
            try:
                jobs: Mapping[str, Job] | Exception = self.store.get_jobs(
                    {m.job_id for m in group}, consistent=True
                )
            except Exception as error:  # every message of the group goes back to SQS
                jobs = error
            decisions = _concurrently(partial(self._decide, jobs=jobs), group)
            together: list[tuple[int, ExecutionInput]] = []
            alone: list[tuple[int, ExecutionInput]] = []
            for i, decision in zip(indexes, decisions, strict=True):
                if not isinstance(decision, ExecutionInput):
                    results[i] = decision
                else:
                    (together if decision.fits_express() else alone).append((i, decision))
            if together:
                try:
                    self.executor.start_batch([d for _, d in together])
                    outcome: Outcome | Exception = "started"
                except Exception as error:  # each message goes back to SQS
                    outcome = error
                for i, _ in together:
                    results[i] = outcome
            if alone:
                early = (second - self.clock()).total_seconds()
                if early > 0:
                    self.sleep(min(early, max(r.DISPATCH_LEAD_SECONDS.values()) + 1))
                for i, decision in alone:
                    results[i] = self._start_one(decision)
        return results

    def _start_one(self, execution_input: ExecutionInput) -> Outcome | Exception:
        try:
            started = self.executor.start(execution_input.run_id, execution_input)
        except Exception as error:  # the message goes back to SQS
            return error
        return "started" if started else "duplicate"

    def _decide(
        self, message: RunMessage, jobs: Mapping[str, Job] | Exception
    ) -> Outcome | ExecutionInput | Exception:
        """What to do with one message (``jobs``: its group's jobs, as read together): the
        execution to start, what became of it instead, or the error that sends it back."""
        if isinstance(jobs, Exception):
            return jobs
        try:
            for attempt in range(CLAIM_ATTEMPTS):
                job = (
                    jobs.get(message.job_id) if attempt == 0 else self.store.get_job(message.job_id)
                )
                decision = self._try_start(message, job)
                if decision != "job_changed":
                    return decision
            raise Conflict(
                f"job {message.job_id} kept changing; run {message.run_id} retried later"
            )
        except Exception as error:  # the message goes back to SQS
            return error

    def _try_start(
        self, message: RunMessage, job: Job | None
    ) -> Outcome | ExecutionInput | Literal["job_changed"]:
        now = self.clock()
        not_started = [RunStatus.SCHEDULED, RunStatus.QUEUED]
        # The run's record is read only where it decides something: for a job that keeps its
        # active runs (the run may be claimed), and for a run that will not start. An `allow`
        # run starts without it: the state machine's first write settles duplicates.
        exclusive = job is not None and job.concurrency is not Concurrency.ALLOW
        kept = (
            self.store.get_run(message.job_id, message.run_id) if job is None or exclusive else None
        )
        if kept is not None and kept.status not in not_started:
            return "duplicate"
        if job is None:  # deleted: a run that had not started never will
            if kept is not None:
                self.store.end_run(
                    kept, RunStatus.CANCELLED, now, "its job was deleted", not_started
                )
            return "gone"
        # A scheduled run has no record until it starts (the state machine writes it).
        run = kept or new_run(
            job, message.run_id, message.scheduled_at, message.trigger
        ).model_copy(update={"generation": message.generation})
        claimed = run.status is RunStatus.QUEUED  # by a worker that may have died meanwhile
        if not claimed and not job.is_current(run):
            if kept is not None:
                self.store.delete_pending_run(run.job_id, run.id)
            return "superseded"
        if job.is_late(run.scheduled_at, now):
            if not exclusive:
                kept = self.store.get_run(message.job_id, message.run_id)
                if kept is not None and kept.status not in not_started:
                    return "duplicate"
            self._end(kept, run, RunStatus.MISSED, job.missed_reason())
            if claimed:
                self.store.release_run(job.id, run.id)
            return "missed"
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
        return ExecutionInput.of(
            job,
            run.id,
            run.scheduled_at,
            generation=run.generation,
            trigger=run.trigger,
            queued_at=run.queued_at or message.queued_at,
        )

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


T = TypeVar("T")
R = TypeVar("R")


def _concurrently(work: Callable[[T], R], items: list[T]) -> list[R]:
    """``work`` on each item, in threads (each in a copy of this context), in order."""
    if len(items) == 1:
        return [work(items[0])]
    contexts = [contextvars.copy_context() for _ in items]
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(
            pool.map(lambda pair: pair[0].run(work, pair[1]), zip(contexts, items, strict=True))
        )
