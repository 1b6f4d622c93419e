"""Silence (chronoq.domain.silence): what the API, the dispatcher and the notifier do for a job
with ``expect``. A job without it costs none of this: no read, no write, on any path.

- The API begins a wait when such a job is made, ``expect`` is set, or the job resumes (its
  expectation's ``since`` is now, and its deadline is written to the time index); a change of
  ``expect`` moves the deadline (the wait kept); a pause ends the wait and any silence, without
  a word; ``expect`` removed, or the job deleted, forgets it. Any other change of the job leaves
  its deadline alone.
- The notifier, hearing of a success (the run's ``slots`` name the expectation), moves the
  wait on and writes the next deadline; a silent job's success ends its silence, and its
  RECOVERED record is written with that change, in one transaction.
- The dispatcher, finding a deadline in the minute it reads, reads the expectation: still
  waiting for that deadline (no success since, no change), and the job ACTIVE, it marks the job
  silent and writes its SILENT record, in one transaction whose condition lets it happen once.

The notifier hears of the records through the runs table's stream (usecases.notify tells the
owner). A record is written only with the change it tells of, so each silence is told once,
and its end once, however often a minute is dispatched or a stream batch delivered again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Job, JobState
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent, SilenceStatus
from chronoq.usecases.ports import Clock, ExpectStore, JobStore

#: Tries of a success's write that loses to another writer of the expectation (a silence
#: marked, a change) before the stream batch is handed back (and delivered again).
ATTEMPTS = 3


class SilenceStore(ExpectStore, JobStore, Protocol):
    """What silence reads and writes: expectations, their deadlines and records, and jobs."""


@dataclass
class Silence:
    store: SilenceStore
    shards: int
    clock: Clock

    # --- the API's side -------------------------------------------------------------------

    def started(self, job: Job, now: datetime) -> Expectation:
        """``job`` (with ``expect``) begins a wait now: made, ``expect`` set, or resumed. Its
        deadline is written if it is ACTIVE (a paused job's, when it resumes)."""
        assert job.expect is not None
        kept = self.store.start_expectation(job.id, job.expect.success_within_seconds, now)
        if job.state is JobState.ACTIVE:
            self._deadline(kept, now)
        return kept

    def changed(self, before: Job, after: Job, now: datetime) -> Expectation | None:
        """A change of a job: its expectation follows ``expect``. Set, a wait begins;
        removed, it is forgotten; another time, its deadline moves (``since`` plus the new
        time: the wait, the last success and a silence kept). Unchanged, nothing. The
        expectation as written (None: none written)."""
        if before.expect == after.expect:
            return None
        if after.expect is None:
            self.store.end_expectation(after.id)
            return None
        kept = None
        if before.expect is not None:
            kept = self.store.change_expectation(after.id, after.expect.success_within_seconds)
        if kept is None:  # (it had none)
            return self.started(after, now)
        if after.state is JobState.ACTIVE and kept.silent_since is None:
            self._deadline(kept, now)
        return kept

    def paused(self, job: Job, now: datetime) -> Expectation | None:
        """A paused job is never silent: its wait ends (its deadline let go when it comes),
        and a silence with it, without a word."""
        if job.expect is None:
            return None
        return self.store.pause_expectation(job.id, now)

    def resumed(self, job: Job, now: datetime) -> Expectation | None:
        """A job resumed waits afresh, from now."""
        if job.expect is None or job.state is not JobState.ACTIVE:
            return None
        return self.started(job, now)

    def shown(self, job: Job, kept: Expectation | None = None) -> Job:
        """The job with its last success and silence: ``kept``, as just written, or read
        (one read, only for a job with ``expect``)."""
        if job.expect is None:
            return job
        return _with(job, kept or self.store.get_expectation(job.id))

    def all_shown(self, jobs: list[Job]) -> list[Job]:
        """The jobs with their last successes and silences (one batch read for those with
        ``expect``; none for a page without)."""
        expecting = [job.id for job in jobs if job.expect is not None]
        if not expecting:
            return jobs
        kept = self.store.get_expectations(expecting)
        return [_with(job, kept.get(job.id)) if job.expect else job for job in jobs]

    # --- the notifier's side --------------------------------------------------------------

    def succeeded(self, job_id: str, run_id: str, at: datetime) -> str:
        """A run of the job SUCCEEDED at ``at``: the wait moves on to ``at`` and its next
        deadline is written; a silence ends (RECOVERED). Heard again (a stream batch delivered
        again), the deadline is written again and nothing else. What it did: ``moved``,
        ``recovered``, ``again``, or ``ignored`` (no expectation, or a success older than the
        wait)."""
        now = self.clock()
        for _ in range(ATTEMPTS):
            moved = self.store.record_success(job_id, at)
            if moved is not None:
                self._deadline(moved, now)
                return "moved"
            kept = self.store.get_expectation(job_id)
            if kept is None:
                return "ignored"  # (expect removed, or the job deleted)
            if not _millis(kept.since) < _millis(at):
                if kept.last_success_at is not None and _millis(kept.last_success_at) == _millis(
                    at
                ):
                    self._deadline(kept, now)  # (its first hearing may have died before)
                    return "again"
                return "ignored"  # (older than the wait: it began after this success)
            if kept.silent_since is None:
                continue  # changed meanwhile: look again
            event = SilenceEvent(
                job_id=job_id,
                owner=kept.owner,
                status=SilenceStatus.RECOVERED,
                within=kept.within,
                silent_since=kept.silent_since,
                last_success_at=kept.last_success_at,
                recovered_at=at,
                run_id=run_id,
            )
            if self.store.end_silence(kept, event):
                self._deadline(kept.model_copy(update={"since": at}), now)
                return "recovered"
        raise Conflict(f"the expectation of job {job_id} kept changing: heard again later")

    # --- the dispatcher's side ------------------------------------------------------------

    def due(self, deadlines: Iterable[Deadline], now: datetime) -> int:
        """Deadlines the dispatcher found in a minute it reads (each passed, by where it is
        kept): a job whose expectation still waits for its deadline, ACTIVE, goes silent
        (once: the transaction's condition). One batch read of the expectations; for those
        that still wait, one of their jobs. How many went silent."""
        deadlines = list(deadlines)
        kept = self.store.get_expectations(d.job_id for d in deadlines)
        waiting = [
            (d, e) for d in deadlines if (e := kept.get(d.job_id)) is not None and e.waits_for(d.at)
        ]
        if not waiting:
            return 0
        jobs = self.store.get_jobs((d.job_id for d, _ in waiting), consistent=True)
        silent = 0
        for deadline, expectation in waiting:
            job = jobs.get(deadline.job_id)
            if job is None or job.expect is None or job.as_of(now).state is not JobState.ACTIVE:
                continue  # deleted, expect removed, paused or finished: it goes away
            if now < deadline.at:  # (not passed yet: found early) kept for a later minute
                self.store.put_deadlines([deadline], self.shards, now)
                continue
            event = SilenceEvent(
                job_id=job.id,
                owner=job.owner,
                status=SilenceStatus.SILENT,
                within=expectation.within,
                silent_since=now,
                last_success_at=expectation.last_success_at,
            )
            silent += self.store.mark_silent(expectation, event)
        return silent

    def _deadline(self, expectation: Expectation, now: datetime) -> None:
        self.store.put_deadlines(
            [Deadline(job_id=expectation.job_id, at=expectation.deadline)], self.shards, now
        )


def _with(job: Job, expectation: Expectation | None) -> Job:
    if expectation is None:
        return job
    return job.model_copy(
        update={
            "last_success_at": expectation.last_success_at,
            "silent_since": expectation.silent_since,
        }
    )


def _millis(value: datetime) -> int:
    return int(value.timestamp() * 1000)
