"""The API's backfills: run a job's schedule over a past range, list them, follow one,
cancel one as a whole (see chronoq.domain.backfills for how its runs are paced).

A backfill's progress is kept on its own item as its runs end (usecases.progress): reading
or listing backfills reads their items only, whatever their runs number. A backfill made
before that (no counters) is read from its runs, as before, until it has ended."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.audit import Action, Caller
from chronoq.domain.backfills import (
    Backfill,
    BackfillRequest,
    BackfillState,
    check_range,
    fire_times,
)
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Concurrency, Job
from chronoq.domain.limits import Limits, check_backfill
from chronoq.domain.parameters import overlay
from chronoq.domain.runs import TERMINAL_STATUSES, Occurrence, Run, RunStatus, Trigger
from chronoq.domain.time import format_instant
from chronoq.usecases.audit import record
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.limits import owner_usage
from chronoq.usecases.pages import Listing, PageTokens
from chronoq.usecases.ports import (
    AuditTrail,
    BackfillStore,
    Clock,
    JobStore,
    RunFilter,
    RunStore,
    UsageStore,
)
from chronoq.usecases.timeindex import TimeIndex, new_run

#: How often a backfill is asked for again when another request of its owner changed the
#: owner's usage meanwhile.
START_ATTEMPTS = 5


class BackfillOperationsStore(BackfillStore, JobStore, RunStore, UsageStore, Protocol):
    """What backfills read and write."""


@dataclass
class BackfillOperations:
    store: BackfillOperationsStore
    index: TimeIndex
    canceller: Canceller
    clock: Clock
    pages: PageTokens
    #: Jobs' audit trails: an entry for each backfill started or cancelled.
    audit: AuditTrail
    #: What each owner's backfills may hold at once.
    limits: Limits = field(default_factory=Limits)

    def create(
        self, owner: str, job_id: str, request: BackfillRequest, by: Caller | None = None
    ) -> Backfill:
        """A backfill of every fire time of the job's schedule in the range, if its owner's
        limits allow it (LimitExceeded); its first ``max_in_flight`` runs made and sent now
        (the others follow as these start)."""
        job = self._job(owner, job_id)
        now = self.clock()
        check_range(request, now)
        fires = fire_times(job.schedule, request.start, request.to, lim.MAX_BACKFILL_RUNS)
        if not fires:
            raise InvalidRequest("from", "the job's schedule has no fire time in this range")
        if len(fires) > lim.MAX_BACKFILL_RUNS:
            raise InvalidRequest(
                "to",
                f"the range holds more than {lim.MAX_BACKFILL_RUNS} fire times:"
                " backfill it in parts",
            )
        # a forbid or replace job allows one active run: its backfill runs one at a time
        exclusive = job.concurrency is not Concurrency.ALLOW
        backfill = Backfill(
            id=ids.new_backfill_id(now),
            job_id=job.id,
            owner=owner,
            start=request.start,
            to=request.to,
            state=BackfillState.RUNNING,
            total=len(fires),
            max_in_flight=1 if exclusive else lim.BACKFILL_MAX_IN_FLIGHT,
            schedule=job.schedule,
            created_at=now,
            start_deadline_seconds=request.start_deadline_seconds,
            cascade=request.cascade,
            ended=0,
            parameters=overlay(job.parameters, request.parameters),
        )
        self._start(backfill)
        first = [self._run(job, backfill, fire, now) for fire in fires[: backfill.max_in_flight]]
        made: list[Run] = []
        try:
            for run in first:
                if self.store.create_run(run, now):
                    made.append(run)
            self.index.enqueue([Occurrence.of(run) for run in made], now)
        except Exception:  # (store or queues unavailable): nothing left that nothing will send
            for run in made:
                self.store.delete_pending_run(run.job_id, run.id)
            self.store.end_backfill(backfill, BackfillState.CANCELLED, now)  # (its usage back)
            raise
        detail = {
            "backfill_id": backfill.id,
            "from": format_instant(backfill.start),
            "to": format_instant(backfill.to),
            "runs": backfill.total,
        }
        record(self.audit, now, owner, job.id, Action.BACKFILL, by, detail=detail)
        return backfill

    def _start(self, backfill: Backfill) -> None:
        """Keep the backfill, entered in its owner's usage, unless a limit refuses it
        (LimitExceeded): the usage read, checked, and written at the version read."""
        for _ in range(START_ATTEMPTS):
            usage = owner_usage(self.store, backfill.owner)
            check_backfill(usage, self.limits, backfill.job_id, backfill.total)
            if self.store.start_backfill(backfill, usage):
                return
        raise Conflict("your other requests kept changing your backfills meanwhile: try again")

    def page(
        self,
        owner: str,
        job_id: str,
        limit: int = r.DEFAULT_PAGE_LIMIT,
        next_token: str | None = None,
    ) -> Listing[Backfill]:
        """A page of the job's backfills, newest first, each with its progress as counted:
        one query of the page's items."""
        self._job(owner, job_id)
        listing = f"backfills:{job_id}"
        after = self.pages.open(owner, listing, next_token)
        page = self.store.page_backfills(job_id, owner, limit, after)
        page = replace(page, items=[self._uncounted(b, settle_only=True) for b in page.items])
        return self.pages.listing(owner, listing, page)

    def get(self, owner: str, job_id: str, backfill_id: str) -> dict[str, Any]:
        """A backfill, with how many of its runs have ended, and in each status."""
        self._job(owner, job_id)
        return self._uncounted(self._backfill(owner, job_id, backfill_id)).view()

    def cancel(
        self, owner: str, job_id: str, backfill_id: str, by: Caller | None = None
    ) -> dict[str, Any]:
        """No further run of the backfill is made; its runs that have not ended are
        cancelled (a running one as POST /runs/{id}/cancel would). Their ends are counted
        as they are heard of."""
        job = self._job(owner, job_id)
        backfill = self._backfill(owner, job_id, backfill_id)
        now = self.clock()
        if not self.store.end_backfill(backfill, BackfillState.CANCELLED, now):
            state = self._uncounted(self._backfill(owner, job_id, backfill_id)).state
            raise Conflict(f"backfill {backfill_id} is already {state.value}")
        detail = {"backfill_id": backfill_id}
        record(self.audit, now, owner, job_id, Action.CANCEL_BACKFILL, by, detail=detail)
        reason = f"its backfill {backfill_id} was cancelled by {owner}"
        for run in self._runs(backfill):
            if run.status is RunStatus.SCHEDULED and self.store.end_run(
                run, RunStatus.CANCELLED, now, reason, [RunStatus.SCHEDULED]
            ):
                continue
            if run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING):
                self.canceller.cancel(run.job_id, run.id, reason, job)
        return self.get(owner, job_id, backfill_id)

    # --- helpers ----------------------------------------------------------------------------

    def _job(self, owner: str, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")
        return job

    def _backfill(self, owner: str, job_id: str, backfill_id: str) -> Backfill:
        backfill = self.store.get_backfill(job_id, backfill_id)
        if backfill is None or backfill.owner != owner:
            raise NotFound(f"backfill {backfill_id} not found")
        return backfill

    @staticmethod
    def _run(job: Job, backfill: Backfill, fire: datetime, now: datetime) -> Run:
        run = new_run(job, ids.backfill_run_id(job.id, fire, backfill.id), fire, Trigger.BACKFILL)
        return run.model_copy(
            update={
                "queued_at": now,
                "backfill_id": backfill.id,
                "start_deadline_seconds": backfill.start_deadline_seconds,
                "cascade": backfill.cascade,
                "parameters": backfill.parameters,
            }
        )

    def _runs(self, backfill: Backfill) -> Iterator[Run]:
        """Every run of the backfill made so far (its fire times' range of the job's runs)."""
        where = RunFilter(since=backfill.start, until=backfill.to, backfill_id=backfill.id)
        after = None
        while True:
            page = self.store.page_runs(
                backfill.job_id, backfill.owner, r.MAX_PAGE_LIMIT, after, where
            )
            yield from page.items
            if page.after is None:
                return
            after = page.after

    def _uncounted(self, backfill: Backfill, settle_only: bool = False) -> Backfill:
        """A backfill made before its runs' ends were counted, as of now, from its runs
        (``settle_only``: only one still RUNNING, to settle its state): its counts, and
        COMPLETED once every run of it has ended (recorded so the first time it is seen so).
        Any other backfill as it is."""
        if backfill.counted or (settle_only and backfill.state is not BackfillState.RUNNING):
            return backfill
        runs = list(self._runs(backfill))
        ended = Counter(run.status.value for run in runs if run.status in TERMINAL_STATUSES)
        seen = backfill.model_copy(
            update={"ended": ended.total(), "runs": dict(sorted(ended.items()))}
        )
        if backfill.state is not BackfillState.RUNNING or ended.total() < backfill.total:
            return seen
        now = self.clock()
        if not self.store.end_backfill(backfill, BackfillState.COMPLETED, now):
            return seen
        return seen.model_copy(update={"state": BackfillState.COMPLETED, "finished_at": now})
