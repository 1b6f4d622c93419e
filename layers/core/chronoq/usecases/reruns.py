"""The API's re-runs: a run that ended, run again; or every run of a range that ended so."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Job
from chronoq.domain.reruns import RerunRequest, check_range
from chronoq.domain.runs import TERMINAL_STATUSES, Occurrence, Run, Trigger
from chronoq.usecases.ports import Clock, RunFilter, Store
from chronoq.usecases.timeindex import TimeIndex, new_run


@dataclass
class RerunOperations:
    store: Store
    index: TimeIndex
    clock: Clock

    def rerun_run(self, owner: str, run_id: str) -> Run:
        """A new run of the run's job and fire time (``trigger: "rerun"``, ``rerun_of`` the
        run), sent now; the run must have ended and its job must still exist."""
        try:
            job_id = ids.job_id_of_run(run_id)
        except ValueError:
            raise NotFound(f"run {run_id} not found") from None
        original = self.store.get_run(job_id, run_id)
        if original is None or original.owner != owner:
            raise NotFound(f"run {run_id} not found")
        if original.status not in TERMINAL_STATUSES:
            raise Conflict(
                f"run {run_id} is {original.status.value}: only a run that has ended can be re-run"
            )
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} of run {run_id} not found: it was deleted")
        (run,) = self._send(job, [original])
        return run

    def rerun_job(self, owner: str, job_id: str, request: RerunRequest) -> list[Run]:
        """A re-run of every run of the job scheduled in the range that ended with one of the
        statuses (at most MAX_RERUN_RUNS), sent now; none if none did."""
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")
        check_range(request)
        where = RunFilter(
            statuses=frozenset(request.statuses), since=request.start, until=request.to
        )
        found: list[Run] = []
        after = None
        while True:
            page = self.store.page_runs(job_id, owner, r.MAX_PAGE_LIMIT, after, where)
            found += page.items
            if len(found) > r.MAX_RERUN_RUNS:
                raise InvalidRequest(
                    "to",
                    f"more than {r.MAX_RERUN_RUNS} runs of the range ended so: re-run a "
                    "shorter range at a time",
                )
            if page.after is None:
                break
            after = page.after
        return self._send(
            job, sorted(found, key=lambda run: run.id), request.start_deadline_seconds
        )

    def _send(self, job: Job, originals: list[Run], deadline: int | None = None) -> list[Run]:
        """Record a re-run of each run and send them; none is left recorded if they cannot
        be sent. ``deadline``: their start deadline (None: the default)."""
        now = self.clock()
        runs = [
            _rerun(job, original, now).model_copy(update={"start_deadline_seconds": deadline})
            for original in originals
        ]
        for run in runs:
            self.store.create_run(run, now)
        try:
            self.index.enqueue([Occurrence.of(run) for run in runs], now)
        except Exception:  # (queues unavailable): no run is left that nothing will send
            for run in runs:
                self.store.delete_pending_run(run.job_id, run.id)
            raise
        return runs


def _rerun(job: Job, original: Run, now: datetime) -> Run:
    run = new_run(
        job, ids.rerun_run_id(job.id, original.scheduled_at), original.scheduled_at, Trigger.RERUN
    )
    return run.model_copy(update={"queued_at": now, "rerun_of": original.id})
