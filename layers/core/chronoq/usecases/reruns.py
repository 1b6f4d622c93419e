"""The API's re-runs: a run that ended, run again; or every run of a range that ended so.

Each re-run's run is counted in its owner's usage until it ends (see domain.limits and
usecases.progress): a re-run past the owner's queued fire times is refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.audit import Action, Caller
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Limits, check_reruns
from chronoq.domain.parameters import overlay
from chronoq.domain.reruns import RerunRequest, check_range
from chronoq.domain.runs import TERMINAL_STATUSES, Occurrence, Run, Trigger
from chronoq.domain.time import format_instant
from chronoq.usecases.audit import record
from chronoq.usecases.limits import OwnerUsageStore, owner_usage
from chronoq.usecases.ports import AuditTrail, Clock, JobStore, RunFilter, RunStore
from chronoq.usecases.timeindex import TimeIndex, new_run

#: How often a re-run is asked for again when another request of its owner changed the
#: owner's usage meanwhile.
RESERVE_ATTEMPTS = 5


class RerunOperationsStore(OwnerUsageStore, JobStore, RunStore, Protocol):
    """What re-runs read and write."""


@dataclass
class RerunOperations:
    store: RerunOperationsStore
    index: TimeIndex
    clock: Clock
    #: Jobs' audit trails: an entry for each request that re-ran runs.
    audit: AuditTrail
    #: What each owner's re-runs (and backfills) may hold at once.
    limits: Limits = field(default_factory=Limits)

    def rerun_run(
        self,
        owner: str,
        run_id: str,
        by: Caller | None = None,
        parameters: dict[str, Any] | None = None,
        cascade: bool = False,
    ) -> Run:
        """A new run of the run's job and fire time (``trigger: "rerun"``, ``rerun_of`` the
        run), sent now; the run must have ended and its job must still exist. Its parameters:
        the job's defaults, overlaid by the run's, overlaid by ``parameters``."""
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
        (run,) = self._send(job, [original], at_fault=None, parameters=parameters, cascade=cascade)
        detail = {"run_id": run.id, "rerun_of": original.id}
        record(self.audit, self.clock(), owner, job_id, Action.RERUN, by, detail=detail)
        return run

    def rerun_job(
        self, owner: str, job_id: str, request: RerunRequest, by: Caller | None = None
    ) -> list[Run]:
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
            if len(found) > lim.MAX_RERUN_RUNS:
                raise InvalidRequest(
                    "to",
                    f"more than {lim.MAX_RERUN_RUNS} runs of the range ended so: re-run a "
                    "shorter range at a time",
                )
            if page.after is None:
                break
            after = page.after
        made = self._send(
            job,
            sorted(found, key=lambda run: run.id),
            request.start_deadline_seconds,
            "to",
            parameters=request.parameters,
            cascade=request.cascade,
        )
        if made:
            detail = {
                "from": format_instant(request.start),
                "to": format_instant(request.to),
                "statuses": sorted(s.value for s in request.statuses),
                "runs": len(made),
            }
            record(self.audit, self.clock(), owner, job_id, Action.RERUN, by, detail=detail)
        return made

    def _send(
        self,
        job: Job,
        originals: list[Run],
        deadline: int | None = None,
        at_fault: str | None = "to",
        parameters: dict[str, Any] | None = None,
        cascade: bool = False,
    ) -> list[Run]:
        """Record a re-run of each run and send them, once the owner's usage holds them
        (LimitExceeded if it cannot: ``at_fault``, what to change); none is left recorded if
        they cannot be sent. ``deadline``: their start deadline (None: the default)."""
        if not originals:
            return []
        given = {o.id: overlay(job.parameters, o.parameters, parameters) for o in originals}
        self._reserve(job.owner, len(originals), at_fault)
        now = self.clock()
        runs = [
            _rerun(job, original, now).model_copy(
                update={
                    "start_deadline_seconds": deadline,
                    "parameters": given[original.id],
                    "cascade": cascade,
                }
            )
            for original in originals
        ]
        made: list[Run] = []
        try:
            for run in runs:
                if self.store.create_run(run, now):
                    made.append(run)
            self.index.enqueue([Occurrence.of(run) for run in made], now)
        except Exception:  # (store or queues unavailable): nothing left that nothing will send
            forgotten = sum(self.store.delete_pending_run(run.job_id, run.id) for run in made)
            self.store.release_reruns(job.owner, forgotten + len(runs) - len(made))
            raise
        if len(made) < len(runs):  # (ids are random: not expected)
            self.store.release_reruns(job.owner, len(runs) - len(made))
        return made

    def _reserve(self, owner: str, runs: int, at_fault: str | None) -> None:
        """Count ``runs`` re-runs in the owner's usage, unless a limit refuses them."""
        for _ in range(RESERVE_ATTEMPTS):
            usage = owner_usage(self.store, owner)
            check_reruns(usage, self.limits, runs, at_fault)
            if self.store.reserve_reruns(owner, runs, usage):
                return
        raise Conflict("your other requests kept changing your re-runs meanwhile: try again")


def _rerun(job: Job, original: Run, now: datetime) -> Run:
    run = new_run(
        job, ids.rerun_run_id(job.id, original.scheduled_at), original.scheduled_at, Trigger.RERUN
    )
    return run.model_copy(update={"queued_at": now, "rerun_of": original.id})
