"""The API's job operations: create, read, list, change, pause, resume, delete, trigger.

Why this module is long: JobOperations is every job operation of the API (create, read, list,
change, pause, resume, delete, trigger), which share the job's optimistic writes, its name
item, its audit entry and its time-index writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from chronoq import resources as r
from chronoq.domain import ids, windows
from chronoq.domain import limits as lim
from chronoq.domain.access import ANY_TARGET, TargetPolicy
from chronoq.domain.audit import Action, Caller
from chronoq.domain.base import STORED
from chronoq.domain.calendars import CalendarMeta
from chronoq.domain.errors import Conflict, InvalidRequest, NameTaken, NotFound, QuotaExceeded
from chronoq.domain.jobs import Job, JobPatch, JobSpec, JobState, OnComplete
from chronoq.domain.labels import Selector, matches
from chronoq.domain.limits import Limits, check_trigger
from chronoq.domain.network import OPEN, NetworkPolicy
from chronoq.domain.parameters import overlay
from chronoq.domain.runs import Occurrence, Run, Trigger
from chronoq.domain.schedules import AfterSchedule, AtSchedule, anchored, first_fire, next_fire
from chronoq.domain.secrets import EXPRESSION
from chronoq.domain.targets import HttpTarget, PythonTarget, split_location
from chronoq.domain.time import utc_second
from chronoq.usecases import calendars, secrets
from chronoq.usecases.after import Pipelines, upstreams_of
from chronoq.usecases.audit import record, spec_change, state_change
from chronoq.usecases.limits import (
    OwnerLimitsStore,
    OwnerUsageStore,
    end_backfills_of,
    owner_limits,
)
from chronoq.usecases.pages import Listing, PageTokens
from chronoq.usecases.ports import (
    AfterStore,
    AuditTrail,
    CalendarStore,
    Clock,
    ExpectStore,
    JobStore,
    Page,
    Position,
    RunStore,
    SecretStore,
)
from chronoq.usecases.silence import Silence
from chronoq.usecases.timeindex import TimeIndex, new_run

#: Is this ``module:function`` a registered Python task? (see chronoq.tasks)
TaskCheck = Callable[[str], bool]


class JobRemovalStore(OwnerUsageStore, CalendarStore, ExpectStore, JobStore, SecretStore, Protocol):
    """What a job's removal gives back (``remove_job``): its item, count, name, secrets,
    calendar, expectation and backfills."""


class JobOperationsStore(JobRemovalStore, OwnerLimitsStore, AfterStore, RunStore, Protocol):
    """What the API's job operations read and write."""


@dataclass
class JobOperations:
    store: JobOperationsStore
    index: TimeIndex
    clock: Clock
    #: Buckets a job's output_location may name (the runner may write there); None: any.
    output_buckets: frozenset[str] | None
    is_task: TaskCheck
    pages: PageTokens
    #: Jobs' audit trails: one entry per change made (``by``: the caller of the request).
    audit: AuditTrail
    #: Which addresses http targets and webhooks may name (the SSRF guard).
    network: NetworkPolicy = OPEN
    #: Jobs one owner may have.
    max_jobs_per_owner: int = lim.DEFAULT_MAX_JOBS_PER_OWNER
    #: What service targets may reach, which images containers may run and how large.
    targets: TargetPolicy = ANY_TARGET
    #: What each owner may hold at once (here: a job's triggers not started yet).
    limits: Limits = field(default_factory=Limits)

    @property
    def pipelines(self) -> Pipelines:
        """Completion triggers (a job with an ``after`` schedule; see usecases.after)."""
        return Pipelines(self.store, self.index, self.clock)

    @property
    def silence(self) -> Silence:
        """Jobs' expectations of success (a job with ``expect``; see usecases.silence)."""
        return Silence(self.store, self.index.shards, self.clock)

    def create_job(self, owner: str, spec: JobSpec, by: Caller | None = None) -> Job:
        self._check(spec)
        now = self.clock()
        spec = spec.model_copy(update={"schedule": anchored(spec.schedule, now)})
        # business calendars: the job carries a copy of its calendar's rules
        spec = spec.model_copy(
            update={"schedule": calendars.resolve(self.store, owner, spec.schedule)}
        )
        # --- completion triggers: an after job's upstreams, as ids; it has no fire time
        if isinstance(spec.schedule, AfterSchedule):
            resolved = self.pipelines.resolved(owner, spec.schedule, None, spec.max_runs)
            spec = spec.model_copy(update={"schedule": resolved})
        first = None if isinstance(spec.schedule, AfterSchedule) else _first_fire(spec, now)
        if not self.store.count_job(owner, +1, self.max_jobs_per_owner):
            raise QuotaExceeded(
                f"owner {owner} has {self.max_jobs_per_owner} jobs, the most this deployment"
                " allows (max_jobs_per_owner): delete some first"
            )
        job = Job.model_validate(
            {
                **spec.model_dump(),
                "id": ids.new_job_id(),
                "owner": owner,
                "state": JobState.ACTIVE,
                "next_run_at": first,
                "version": 1,
                "created_at": now,
                "updated_at": now,
            }
        ).with_final_run()
        try:
            self._claim_name(job, job.name, now)
        except Exception:
            self.store.count_job(owner, -1)
            raise
        names = spec.secret_names()
        calendar = calendars.calendar_of(spec.schedule)
        try:
            secrets.use(self.store, owner, job.id, spec, names)
            if calendar is not None and not self.store.use_calendar(owner, job.id, calendar):
                raise calendars.unknown(calendar)  # (deleted meanwhile)
            self.store.put_new_job(job)
        except Exception:
            if calendar is not None:
                self.store.unuse_calendar(owner, job.id, calendar)
            self.store.unuse_secrets(owner, job.id, names)
            self.store.release_name(owner, job.name, job.id)
            self.store.count_job(owner, -1)
            raise
        try:
            if first is not None:
                self.index.schedule([(job, first)], now)
            if job.expect is not None:  # its wait for a success begins
                self.silence.started(job, now)
            if upstreams_of(job):  # (a new job closes no cycle: nothing can name it yet)
                self.pipelines.link(owner, job.id, upstreams_of(job))
                self.pipelines.settle(job.id, (), upstreams_of(job))
        except Exception:  # (queues unavailable): nothing half-made is left behind
            remove_job(self.store, job, now)  # (its schedule item, if written, is dropped unsent)
            raise
        record(self.audit, now, owner, job.id, Action.CREATE, by, spec_change(None, job))
        return self._calendar_caught_up(job)

    def get_job(self, owner: str, job_id: str) -> Job:
        """The job as of now (its next_run_at brought up to date; a job with ``expect``, its
        last success and silence)."""
        job = self.silence.shown(self._stored(owner, job_id).as_of(self.clock()))
        return self.pipelines.shown(job)

    def _stored(self, owner: str, job_id: str) -> Job:
        """The job as stored: what a change starts from."""
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")
        return job

    def list_jobs(self, owner: str) -> list[Job]:
        now = self.clock()
        return sorted(
            (job.as_of(now) for job in self.store.list_jobs(owner)),
            key=lambda j: (j.created_at, j.id),
        )

    def page_jobs(
        self,
        owner: str,
        limit: int = r.DEFAULT_PAGE_LIMIT,
        next_token: str | None = None,
        state: JobState | None = None,
        labels: tuple[Selector, ...] = (),
        silent: bool = False,
    ) -> Listing[Job]:
        """A page of the owner's jobs, in order of creation, as of now; ``state``: only the
        jobs in that state now (a one-time job whose run has fired is COMPLETED);
        ``labels``: only the jobs carrying every one of these labels; ``silent``: only the
        silent ones, longest silent first (from the silent index, never a scan). A job with
        ``expect`` shows its last success and silence."""
        listing = f"jobs?state={state.value if state else ''}"
        if labels:
            listing += "".join(f"&label={key}={value}" for key, value in labels)
        if silent:
            listing += "&silent=true"
        after = self.pages.open(owner, listing, next_token)
        now = self.clock()
        keep = None
        if state is not None or labels:

            def keep(job: Job) -> bool:
                return matches(job.labels, labels) and (
                    state is None or job.as_of(now).state is state
                )

        if silent:  # (each shown with the expectation the index holds)
            page = self._silent_page(owner, limit, after, keep)
            shown = [job.as_of(now) for job in page.items]
        else:
            page = self.store.page_jobs(owner, limit, after, keep)
            shown = self.silence.all_shown([job.as_of(now) for job in page.items])
        return self.pages.listing(owner, listing, replace(page, items=shown))

    def _silent_page(
        self, owner: str, limit: int, after: Position | None, keep: Callable[[Job], bool] | None
    ) -> Page[Job]:
        """A page of the owner's silent jobs: their expectations from the silent index (the
        owner's only), their jobs by key (one batch read), those ``keep`` keeps, each shown
        with its expectation."""
        silences = self.store.silent_jobs(owner, limit, after)
        jobs = self.store.get_jobs(e.job_id for e in silences.items) if silences.items else {}
        found = [
            self.silence.shown(job, e)
            for e in silences.items
            if (job := jobs.get(e.job_id)) is not None
            and job.owner == owner
            and (keep is None or keep(job))
        ]
        return Page(found, silences.after)

    def update_job(self, owner: str, job_id: str, patch: JobPatch, by: Caller | None = None) -> Job:
        """Change a job. A new schedule or priority replaces the pending occurrence by the
        new schedule's next fire time (a run already claimed still runs); other changes
        apply to every run that has not started yet."""
        job = self._stored(owner, job_id)
        if patch.version is not None and patch.version != job.version:
            raise Conflict(f"job {job_id} is at version {job.version}, not {patch.version}")
        now = self.clock()
        changes = patch.changes()
        spec = JobSpec.model_validate({**job.spec().model_dump(), **changes})
        self._check(spec)
        if "schedule" in changes:  # (a copy of its calendar's rules, as of now)
            spec = spec.model_copy(
                update={"schedule": calendars.resolve(self.store, owner, spec.schedule)}
            )
        # --- completion triggers: a new schedule's upstreams, as ids, linked in the owner's
        # graph (refused if that closes a cycle) before the job is written; linked back if it
        # is not. Other changes leave them alone (an upstream deleted since stays named).
        following = followed = upstreams_of(job)
        if isinstance(spec.schedule, AfterSchedule) and spec.max_runs is not None:
            raise InvalidRequest("max_runs", "an after job has no scheduled runs to count")
        if "schedule" in changes:
            following = frozenset()
            if isinstance(spec.schedule, AfterSchedule):
                resolved = self.pipelines.resolved(owner, spec.schedule, job.id)
                spec = spec.model_copy(update={"schedule": resolved})
                changes = {**changes, "schedule": resolved.model_dump()}
                following = frozenset(resolved.jobs)
            if following or followed:
                followed = self.pipelines.link(owner, job.id, following)
        renamed = spec.name != job.name
        if renamed:
            self._claim_name(job, spec.name, now)
        before, after = job.secret_names(), spec.secret_names()
        was, becomes = calendars.calendar_of(job.schedule), calendars.calendar_of(spec.schedule)
        try:
            secrets.use(self.store, owner, job.id, spec, after - before)
            if becomes not in (None, was) and not self.store.use_calendar(owner, job.id, becomes):
                raise calendars.unknown(becomes)  # (deleted meanwhile)
            changed = self._change(job, spec, changes, now)
        except Exception:
            if following != followed:
                self.pipelines.link(owner, job.id, followed)
            if becomes not in (None, was):
                self.store.unuse_calendar(owner, job.id, becomes)
            self.store.unuse_secrets(owner, job.id, after - before)
            if renamed:
                self.store.release_name(owner, spec.name, job.id)
            raise
        if was not in (None, becomes):
            self.store.unuse_calendar(owner, job.id, was)
        self.store.unuse_secrets(owner, job.id, before - after)
        if following != followed or following != upstreams_of(job):
            self.pipelines.settle(job.id, followed | upstreams_of(job), following)
        if renamed:
            self.store.release_name(owner, job.name, job.id)
        record(self.audit, now, owner, job.id, Action.CHANGE, by, spec_change(job, changed))
        kept = self.silence.changed(job, changed, now)  # (nothing unless ``expect`` changed)
        if "schedule" in changes:
            changed = self._calendar_caught_up(changed)
        return self.silence.shown(self._settle(changed, now), kept)

    def _calendar_caught_up(self, job: Job) -> Job:
        """A job just saved with a copy of its calendar: planned again on the calendar's
        latest version if it changed meanwhile (a change whose re-planning looked for the
        job's item before it was saved would have missed it; one after this read finds it
        in the calendar's index). One read of the owner's calendars."""
        name = calendars.calendar_of(job.schedule)
        use = getattr(job.schedule, "calendar", None)
        if name is None or use is None:
            return job
        meta = self.store.get_calendars(job.owner, consistent=True).get(name)
        if meta is None or (use.version or 0) >= meta.version:
            return job
        try:
            return self.recalendar(self._stored(job.owner, job.id), meta)
        except (Conflict, NotFound):  # (changed or deleted meanwhile: that change re-plans it)
            return job

    def _change(self, job: Job, spec: JobSpec, changes: dict[str, Any], now: datetime) -> Job:
        if "schedule" not in changes and (spec.priority, spec.max_runs) == (
            job.priority,
            job.max_runs,
        ):
            updated = Job.model_validate(
                {
                    **job.model_dump(),
                    **spec.model_dump(),
                    "version": job.version + 1,
                    "updated_at": now,
                }
            )
            return self._save(job, updated)
        spec = spec.model_copy(update={"schedule": anchored(spec.schedule, now)})
        state = JobState.PAUSED if job.state is JobState.PAUSED else JobState.ACTIVE
        first = (
            _first_fire(spec, now)
            if state is JobState.ACTIVE and not isinstance(spec.schedule, AfterSchedule)
            else None
        )
        # limited runs: those counted so far stay counted (from when max_runs was first set)
        counted = job.runs_reached(now) if spec.max_runs is not None else 0
        if spec.max_runs is not None and counted >= spec.max_runs:
            raise InvalidRequest(
                "max_runs",
                f"the job has had {counted} scheduled runs since max_runs was set: give more"
                " (or pause or delete the job)",
            )
        updated = _next_generation(
            job, now, **spec.model_dump(), state=state, next_run_at=first, runs_before=counted
        )
        return self._replace_occurrences(job, updated, now)

    def recalendar(self, job: Job, meta: CalendarMeta) -> Job:
        """Re-plan ``job`` (as read) on its calendar's new rules (``meta``), as a change of
        its schedule is: a new generation whose first occurrence is the new rules' next fire
        time; a run already claimed still runs, the old pending occurrence never does.
        Raises Conflict if the job changed since it was read."""
        now = self.clock()
        spec = job.spec()
        spec = spec.model_copy(update={"schedule": calendars.with_rules(spec.schedule, meta)})
        changed = self._change(job, spec, {"schedule": spec.schedule}, now)
        record(self.audit, now, job.owner, job.id, Action.CHANGE, None, spec_change(job, changed))
        return self._settle(changed, now)

    def pause_job(self, owner: str, job_id: str, by: Caller | None = None) -> Job:
        """No scheduled run of a paused job starts; its pending occurrence is dropped."""
        job = self._stored(owner, job_id)
        if job.state is JobState.PAUSED:
            return job
        now = self.clock()
        if job.as_of(now).state is JobState.COMPLETED:
            raise Conflict(f"job {job_id} is COMPLETED: it has no runs left to pause")
        counted = job.runs_reached(now)  # (limited runs: fire times while paused do not count)
        paused = _next_generation(
            job, now, state=JobState.PAUSED, next_run_at=None, runs_before=counted
        )
        stored = self._replace_occurrences(job, paused, now)
        record(self.audit, now, owner, job.id, Action.PAUSE, by, state_change(job, stored, now))
        return self.silence.shown(stored, self.silence.paused(stored, now))

    def resume_job(self, owner: str, job_id: str, by: Caller | None = None) -> Job:
        """Schedule the next future fire time; occurrences missed while paused never run."""
        job = self._stored(owner, job_id)
        if job.state is not JobState.PAUSED:
            return job
        now = self.clock()
        following = next_fire(job.schedule, now)
        state = (
            JobState.ACTIVE
            if following or isinstance(job.schedule, AfterSchedule)  # (it follows its upstreams)
            else JobState.COMPLETED
        )
        resumed = _next_generation(job, now, state=state, next_run_at=following)
        stored = self._replace_occurrences(job, resumed, now)
        record(self.audit, now, owner, job.id, Action.RESUME, by, state_change(job, stored, now))
        kept = self.silence.resumed(stored, now)
        return self.silence.shown(self._settle(stored, now), kept)

    def delete_job(self, owner: str, job_id: str, by: Caller | None = None) -> None:
        """No further run starts; a run already executing finishes."""
        job = self._stored(owner, job_id)
        now = self.clock()
        if not remove_job(self.store, job, now):
            raise NotFound(f"job {job_id} not found")
        self.pipelines.unlink(job)  # (an after job leaves its owner's graph)
        record(self.audit, now, owner, job.id, Action.DELETE, by, state_change(job, None, now))
        # (its planned occurrence has no run record: the worker drops it, the job being gone)

    def _claim_name(self, job: Job, name: str, now: datetime) -> None:
        """Names are unique per owner: take ``name`` for ``job``, or refuse (409)."""
        holder = self.store.claim_name(job.owner, name, job.id, now)
        if holder is not None:
            raise NameTaken(
                f"a job named {name!r} exists ({holder}): job names are unique per owner;"
                " change that job, or give another name"
            )

    def _settle(self, job: Job, now: datetime) -> Job:
        """A change that leaves a job to delete on completion COMPLETED (resumed after its
        last fire time, say) deletes it at once: no run of it is left to end (the job as it
        was last is answered)."""
        if job.on_complete is OnComplete.DELETE and job.as_of(now).state is JobState.COMPLETED:
            remove_job(self.store, job, now)
        return job

    def trigger_job(
        self,
        owner: str,
        job_id: str,
        by: Caller | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> Run:
        """One run now, outside the schedule (also for a paused or completed job), with the
        job's default parameters overlaid by ``parameters`` (kept on its record)."""
        job = self._stored(owner, job_id)
        given = overlay(job.parameters, parameters)
        now = self.clock()
        since = now - timedelta(seconds=job.start_deadline_seconds)
        most = max(lim.WAITING_TRIGGERS_SCAN, 2 * self.limits.waiting_triggers_per_job)
        check_trigger(self.limits, job.id, self.store.count_waiting_triggers(job.id, since, most))
        at = utc_second(now)
        run = new_run(job, ids.manual_run_id(job.id, at), at, Trigger.MANUAL)
        run = run.model_copy(update={"queued_at": now, "parameters": given})  # sent below
        self.store.create_run(run, now)
        try:
            self.index.enqueue([Occurrence.of(run)], now)
        except Exception:  # (queues unavailable): no run is left that nothing will send
            self.store.delete_pending_run(job.id, run.id)
            raise
        record(self.audit, now, owner, job.id, Action.TRIGGER, by, detail={"run_id": run.id})
        return run

    def limits_of(self, owner: str) -> dict[str, Any]:
        """Each of the owner's limits, and how much of it is used."""
        return owner_limits(self.store, owner, self.limits, self.max_jobs_per_owner, self.clock())

    def _check(self, spec: JobSpec) -> None:
        """What the models cannot know: registered tasks, writable buckets, addresses the
        deployment may call; and the size of the whole job."""
        size = len(spec.model_dump_json().encode())
        if size > lim.MAX_JOB_BYTES:
            raise InvalidRequest(
                None, f"the job is {size} bytes of JSON; at most {lim.MAX_JOB_BYTES} are kept"
            )
        windows.check(spec.schedule, self.clock())
        if isinstance(spec.target, PythonTarget) and not self.is_task(spec.target.task):
            raise InvalidRequest("target.task", f"{spec.target.task} is not a registered task")
        refused = self.targets.refusal(spec.target, spec.timeout_seconds)
        if refused:
            raise InvalidRequest(*refused)
        urls = {"notify.webhook": spec.notify.webhook if spec.notify else None}
        if isinstance(spec.target, HttpTarget):
            urls["target.url"] = spec.target.url
        for name, url in urls.items():
            # (a placeholder's value is checked at each run, the whole URL with it)
            plain = EXPRESSION.sub("x", url) if url else None
            refusal = self.network.url_refusal(plain) if plain else None
            if refusal:
                raise InvalidRequest(
                    name,
                    f"must not name a private, loopback, link-local or metadata address: {refusal}",
                )
        if spec.output_location is None or self.output_buckets is None:
            return
        bucket = split_location(spec.output_location)[0]
        if bucket not in self.output_buckets:
            allowed = ", ".join(sorted(self.output_buckets)) or "none"
            raise InvalidRequest(
                "output_location",
                f"bucket {bucket} is not one this deployment may write to"
                f" (its own bucket is used by default; others allowed: {allowed})",
            )

    def _save(self, old: Job, new: Job) -> Job:
        if not self.store.save_job(new, expected_version=old.version):
            raise Conflict(f"job {old.id} was changed meanwhile; read it again and retry")
        return new.as_of(self.clock())

    def _replace_occurrences(self, old: Job, new: Job, now: datetime) -> Job:
        """Save ``new`` (a new generation) and move the time index over to it: the new
        pending occurrence (a run id of its own, even at the same instant) is written first,
        so that a crash never leaves an active job without one; the old one belongs to an
        older generation: the dispatcher and the worker drop it (if a worker had already
        claimed it, it still runs). An occurrence written for a change that then conflicts
        is dropped the same way."""
        pending = [(new, new.next_run_at)] if new.next_run_at else []
        written = self.index.write(pending, now)
        if not self.store.save_job(new, expected_version=old.version):
            raise Conflict(f"job {old.id} was changed meanwhile; read it again and retry")
        self.index.send_if_dispatched(written, now)
        return new.as_of(now)


def _first_fire(spec: JobSpec, now: datetime) -> datetime:
    first = first_fire(spec.schedule, now)
    if first is None:
        if isinstance(spec.schedule, AtSchedule):
            raise InvalidRequest("schedule.at", "must be in the future")
        if calendars.calendar_of(spec.schedule) is not None and first_fire(
            spec.schedule.model_copy(update={"calendar": None}), now
        ):
            raise InvalidRequest(
                "schedule.calendar",
                f"excludes every fire time of the schedule for {lim.CALENDAR_HORIZON_DAYS} days",
            )
        raise InvalidRequest("schedule.end_at", "leaves no future fire time")
    return first


def _next_generation(job: Job, now: datetime, **changes: Any) -> Job:
    """``job`` changed so that its planned occurrences no longer hold (with ``max_runs``, its
    last run is counted afresh from its new first occurrence)."""
    return Job.model_validate(
        {
            **job.model_dump(),
            **changes,
            "version": job.version + 1,
            "generation": job.generation + 1,
            "updated_at": now,
        },
        context=STORED,  # (what it was stored with stays readable)
    ).with_final_run()


def remove_job(store: JobRemovalStore, job: Job, now: datetime) -> bool:
    """Delete a job, and give back what it held: its place in its owner's quota, its name,
    its running backfills (cancelled: their later fire times would never be made), its
    expectation of success (a job with ``expect``) (False: it was gone already). Its runs
    stay, until they expire."""
    if not store.delete_job(job.id):
        return False
    if job.expect is not None:
        store.end_expectation(job.id)
    store.count_job(job.owner, -1)
    store.release_name(job.owner, job.name, job.id)
    store.unuse_secrets(job.owner, job.id, job.secret_names())
    calendar = calendars.calendar_of(job.schedule)
    if calendar is not None:
        store.unuse_calendar(job.owner, job.id, calendar)
    end_backfills_of(store, job, now)
    return True
