"""The API's run operations: history, one run, its output and logs, cancelling it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.runs import Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.pages import Listing, PageTokens
from chronoq.usecases.ports import Artifacts, Clock, JobStore, RunFilter, RunStore


class RunOperationsStore(JobStore, RunStore, Protocol):
    """What the API's run operations read."""


@dataclass
class RunOperations:
    store: RunOperationsStore
    artifacts: Artifacts
    canceller: Canceller
    clock: Clock
    pages: PageTokens

    def _job_of(self, owner: str, job_id: str) -> None:
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")

    def list_runs(self, owner: str, job_id: str, limit: int = 50) -> list[Run]:
        self._job_of(owner, job_id)
        return self.store.list_runs(job_id, limit)

    def page_job_runs(
        self,
        owner: str,
        job_id: str,
        limit: int = r.DEFAULT_PAGE_LIMIT,
        next_token: str | None = None,
        where: RunFilter | None = None,
    ) -> Listing[Run]:
        """A page of the runs of one of the owner's jobs, newest first (404 for a job that is
        not theirs, or gone)."""
        self._job_of(owner, job_id)
        return self.page_runs(owner, job_id, limit, next_token, where)

    def page_runs(
        self,
        owner: str,
        job_id: str,
        limit: int = r.DEFAULT_PAGE_LIMIT,
        next_token: str | None = None,
        where: RunFilter | None = None,
    ) -> Listing[Run]:
        """A page of the owner's runs of ``job_id``, newest first, whether the job still
        exists or not (its runs are kept until they expire). Runs of another owner's job, or
        of no job, are none."""
        where = where or RunFilter()
        listing = "runs:" + "&".join(
            [
                job_id,
                ",".join(sorted(where.statuses or ())),
                format_instant(where.since) if where.since else "",
                format_instant(where.until) if where.until else "",
                *([where.backfill_id] if where.backfill_id else []),
            ]
        )
        after = self.pages.open(owner, listing, next_token)
        page = self.store.page_runs(job_id, owner, limit, after, where)
        return self.pages.listing(owner, listing, page)

    def get_run(self, owner: str, run_id: str) -> Run:
        try:
            job_id = ids.job_id_of_run(run_id)
        except ValueError:
            raise NotFound(f"run {run_id} not found") from None
        run = self.store.get_run(job_id, run_id)
        if run is None or run.owner != owner:
            raise NotFound(f"run {run_id} not found")
        return run

    def run_output(self, owner: str, run_id: str) -> str:
        """The output of a succeeded run (JSON text), wherever it is kept."""
        run = self.get_run(owner, run_id)
        output = self.artifacts.read_output(run)
        if output is None:
            raise NotFound(f"run {run_id} has no output (status {run.status.value})")
        return output

    def run_logs(self, owner: str, run_id: str) -> list[str]:
        """Every log line of a run, attempt by attempt."""
        run = self.get_run(owner, run_id)
        return self.artifacts.read_logs(run.job_id, run.id)

    def cancel_run(self, owner: str, run_id: str) -> Run:
        """Cancel a run: a scheduled one never starts, a queued or running one is stopped
        (its execution, and with it the attempt) and recorded CANCELLED."""
        run = self.get_run(owner, run_id)
        reason = f"cancelled by {owner}"
        if run.status is RunStatus.SCHEDULED and self.store.end_run(
            run, RunStatus.CANCELLED, self.clock(), reason, [RunStatus.SCHEDULED]
        ):
            return self.get_run(owner, run_id)
        if run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING):
            self.canceller.cancel(run.job_id, run.id, reason)
            cancelled = self.get_run(owner, run_id)
            if cancelled.status is RunStatus.CANCELLED:
                return cancelled
            run = cancelled
        raise Conflict(f"run {run_id} is already {run.status.value}")


def run_filter(
    status: str | None,
    since: datetime | None = None,
    until: datetime | None = None,
    backfill_id: str | None = None,
) -> RunFilter:
    """The filter of a runs listing from its query: ``status`` is one status or several,
    comma-separated; ``backfill_id``: only that backfill's runs."""
    statuses = None
    if status is not None:
        try:
            statuses = frozenset(RunStatus(s.strip().upper()) for s in status.split(","))
        except ValueError:
            known = ", ".join(s.value for s in RunStatus)
            raise InvalidRequest("status", f"must be statuses among {known}") from None
    return RunFilter(statuses=statuses, since=since, until=until, backfill_id=backfill_id)
