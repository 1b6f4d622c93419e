"""The use cases of chronoq, over injected adapters: what each handler calls into."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq import ids, tasks
from chronoq import resources as r
from chronoq.artifacts import Artifacts, split_location
from chronoq.errors import Conflict, InvalidRequest, NotFound
from chronoq.executor import Executor
from chronoq.models import (
    AtSchedule,
    Concurrency,
    EventBridgeTarget,
    Job,
    JobPatch,
    JobSpec,
    JobState,
    Occurrence,
    PythonTarget,
    Run,
    RunMessage,
    RunStatus,
    SnsTarget,
    SqsTarget,
    Trigger,
    anchored,
    format_instant,
    utc_second,
)
from chronoq.queue import Queues
from chronoq.schedules import next_fire
from chronoq.store import Store

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]

#: How often the worker re-reads a job that changed under it before giving the run back.
_CLAIM_ATTEMPTS = 3


def utc_now() -> datetime:
    """Now, to the millisecond (the precision instants are stored with)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def execution_input(job: Job, run_id: str, scheduled_at: datetime) -> dict[str, Any]:
    """The input of the run state machine: everything one run needs, and nothing that
    changes between two deliveries of the same run (so that starting it is idempotent)."""
    return {
        "job_id": job.id,
        "run_id": run_id,
        "owner": job.owner,
        "scheduled_at": format_instant(scheduled_at),
        "timeout_seconds": job.timeout_seconds,
        "target": job.target.model_dump(mode="json"),
        "retry": job.retry.model_dump(mode="json"),
        "attempt": {"number": 1},
        "output_location": job.output_location or "",
        "delivery": delivery(job),
    }


def message_text(message: Any) -> str:
    """What a queue or topic receives: a string as it is, anything else as JSON."""
    return message if isinstance(message, str) else json.dumps(message)


def delivery(job: Job) -> dict[str, Any]:
    """What the state machine's service integrations send, prepared as the APIs want it."""
    target = job.target
    if isinstance(target, SqsTarget | SnsTarget):
        return {"message": message_text(target.message)}
    if isinstance(target, EventBridgeTarget):
        return {"detail": json.dumps(target.detail)}
    return {}


def is_late(job: Job, scheduled_at: datetime, now: datetime) -> bool:
    """Past the job's start deadline: the run must not start any more."""
    return now - scheduled_at > timedelta(seconds=job.start_deadline_seconds)


def is_current(job: Job, run: Run | Occurrence) -> bool:
    """Does this scheduled occurrence still belong to the job's schedule? (Manual runs
    always do.)"""
    if isinstance(run, Run) and run.trigger is Trigger.MANUAL:
        return True
    return job.state is not JobState.PAUSED and run.generation == job.generation


@dataclass
class DispatchReport:
    minutes: int = 0
    dispatched: int = 0
    missed: int = 0
    scheduled: int = 0
    per_shard: dict[int, int] = field(default_factory=dict)


@dataclass
class Chronoq:
    store: Store
    queues: Queues | None = None
    executor: Executor | None = None
    artifacts: Artifacts | None = None
    #: Buckets a job's output_location may name (the runner may write there); None: any.
    output_buckets: frozenset[str] | None = None
    shards: int = r.DEFAULT_SHARDS
    clock: Clock = utc_now
    sleep: Callable[[float], None] = time.sleep

    # --- jobs -----------------------------------------------------------------------------

    def create_job(self, owner: str, spec: JobSpec) -> Job:
        _check_target(spec)
        self._check_output_location(spec)
        now = self.clock()
        spec = spec.model_copy(update={"schedule": anchored(spec.schedule, now)})
        first = self._first_fire(spec, now)
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
        )
        self.store.put_new_job(job)
        self._schedule([(job, first)], now)
        return job

    def _check_output_location(self, spec: JobSpec) -> None:
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

    @staticmethod
    def _first_fire(spec: JobSpec, now: datetime) -> datetime:
        first = next_fire(spec.schedule, now)
        if first is None:
            if isinstance(spec.schedule, AtSchedule):
                raise InvalidRequest("schedule.at", "must be in the future")
            raise InvalidRequest("schedule.end_at", "leaves no future fire time")
        return first

    def get_job(self, owner: str, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")
        return job

    def list_jobs(self, owner: str) -> list[Job]:
        return sorted(self.store.list_jobs(owner), key=lambda j: (j.created_at, j.id))

    def update_job(self, owner: str, job_id: str, patch: JobPatch) -> Job:
        """Change a job. A new schedule replaces the pending occurrence by the new
        schedule's next fire time (a run already claimed still runs); other changes apply
        to every run that has not started yet."""
        job = self.get_job(owner, job_id)
        if patch.version is not None and patch.version != job.version:
            raise Conflict(f"job {job_id} is at version {job.version}, not {patch.version}")
        now = self.clock()
        changes = patch.changes()
        spec = JobSpec.model_validate({**job.spec().model_dump(), **changes})
        _check_target(spec)
        self._check_output_location(spec)
        if "schedule" not in changes:
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
        first = self._first_fire(spec, now) if state is JobState.ACTIVE else None
        updated = _next_generation(job, now, **spec.model_dump(), state=state, next_run_at=first)
        return self._replace_occurrences(job, updated, now)

    def pause_job(self, owner: str, job_id: str) -> Job:
        """No scheduled run of a paused job starts; its pending occurrence is dropped."""
        job = self.get_job(owner, job_id)
        if job.state is JobState.PAUSED:
            return job
        if job.state is JobState.COMPLETED:
            raise Conflict(f"job {job_id} is COMPLETED: it has no runs left to pause")
        now = self.clock()
        paused = _next_generation(job, now, state=JobState.PAUSED, next_run_at=None)
        return self._replace_occurrences(job, paused, now)

    def resume_job(self, owner: str, job_id: str) -> Job:
        """Schedule the next future fire time; occurrences missed while paused never run."""
        job = self.get_job(owner, job_id)
        if job.state is not JobState.PAUSED:
            return job
        now = self.clock()
        following = next_fire(job.schedule, now)
        state = JobState.ACTIVE if following else JobState.COMPLETED
        resumed = _next_generation(job, now, state=state, next_run_at=following)
        return self._replace_occurrences(job, resumed, now)

    def delete_job(self, owner: str, job_id: str) -> None:
        """No further run starts; a run already executing finishes."""
        job = self.get_job(owner, job_id)
        if not self.store.delete_job(job.id):
            raise NotFound(f"job {job_id} not found")
        if job.next_run_at is not None:
            self.store.delete_pending_run(job.id, ids.run_id(job.id, job.next_run_at))

    def trigger_job(self, owner: str, job_id: str) -> Run:
        """One run now, outside the schedule (also for a paused or completed job)."""
        job = self.get_job(owner, job_id)
        now = self.clock()
        at = utc_second(now)
        run = _scheduled_run(job, ids.manual_run_id(job.id, at), at, Trigger.MANUAL)
        self.store.create_run(run, now)
        self._enqueue([self._occurrence(run)], now)
        return run

    def _save(self, old: Job, new: Job) -> Job:
        if not self.store.save_job(new, expected_version=old.version):
            raise Conflict(f"job {old.id} was changed meanwhile; read it again and retry")
        return new

    def _replace_occurrences(self, old: Job, new: Job, now: datetime) -> Job:
        """Save ``new`` (a new generation) and move the time index over to it: the new
        pending occurrence is written first, so that a crash never leaves an active job
        without one; the old one is forgotten afterwards (if it was already dispatched,
        the worker drops it as belonging to an older generation)."""
        pending = [(new, new.next_run_at)] if new.next_run_at else []
        written = self._write_occurrences(pending, now)
        if not self.store.save_job(new, expected_version=old.version):
            for o in written:
                self.store.delete_pending_run(o.job_id, o.run_id)
            raise Conflict(f"job {old.id} was changed meanwhile; read it again and retry")
        if old.next_run_at is not None and old.next_run_at != new.next_run_at:
            self.store.delete_pending_run(old.id, ids.run_id(old.id, old.next_run_at))
        self._send_if_dispatched(written, now)
        return new

    # --- runs -----------------------------------------------------------------------------

    def list_runs(self, owner: str, job_id: str, limit: int = 50) -> list[Run]:
        self.get_job(owner, job_id)
        return self.store.list_runs(job_id, limit)

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
        assert self.artifacts is not None
        output = self.artifacts.read_output(run)
        if output is None:
            raise NotFound(f"run {run_id} has no output (status {run.status.value})")
        return output

    def run_logs(self, owner: str, run_id: str) -> list[str]:
        """Every log line of a run, attempt by attempt."""
        run = self.get_run(owner, run_id)
        assert self.artifacts is not None
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
            self._cancel(run.job_id, run.id, reason)
            cancelled = self.get_run(owner, run_id)
            if cancelled.status is RunStatus.CANCELLED:
                return cancelled
            run = cancelled
        raise Conflict(f"run {run_id} is already {run.status.value}")

    # --- the time index -------------------------------------------------------------------

    @staticmethod
    def _occurrence(run: Run) -> Occurrence:
        return Occurrence(
            job_id=run.job_id,
            run_id=run.id,
            scheduled_at=run.scheduled_at,
            priority=run.priority,
            generation=run.generation,
        )

    def _write_occurrences(
        self, pairs: Iterable[tuple[Job, datetime]], now: datetime
    ) -> list[Occurrence]:
        """Record a SCHEDULED run and a schedule item for each (job, instant)."""
        occurrences: list[Occurrence] = []
        for job, at in pairs:
            run = _scheduled_run(job, ids.run_id(job.id, at), at, Trigger.SCHEDULE)
            self.store.create_run(run, now)
            occurrences.append(self._occurrence(run))
        if occurrences:
            self.store.put_occurrences(occurrences, self.shards, now)
        return occurrences

    def _schedule(
        self,
        pairs: Iterable[tuple[Job, datetime]],
        now: datetime,
        dispatched: Mapping[int, datetime | None] | None = None,
    ) -> int:
        occurrences = self._write_occurrences(pairs, now)
        self._send_if_dispatched(occurrences, now, dispatched)
        return len(occurrences)

    def _send_if_dispatched(
        self,
        occurrences: list[Occurrence],
        now: datetime,
        dispatched: Mapping[int, datetime | None] | None = None,
    ) -> None:
        """An occurrence whose minute its shard has already begun to dispatch goes straight
        to SQS (see Store.opened_through: none can fall between the dispatcher's query and
        this write)."""
        checkpoints = dict(dispatched) if dispatched is not None else {}
        late = []
        for o in occurrences:
            shard = ids.shard_of(o.job_id, self.shards)
            if shard not in checkpoints:
                checkpoints[shard] = self.store.opened_through(shard)
            done_through = checkpoints[shard]
            if done_through is not None and ids.minute_of(o.scheduled_at) <= done_through:
                late.append(o)
        if late:
            # The dispatcher has passed these minutes: send now, and chain on from here.
            self._enqueue(late, now)
            self._continue(late, self.store.get_jobs(o.job_id for o in late), now, checkpoints)

    def _enqueue(self, occurrences: list[Occurrence], now: datetime) -> int:
        assert self.queues is not None, "this function has no queues configured"
        return self.queues.send(
            (
                (
                    o.priority,
                    RunMessage(
                        job_id=o.job_id, run_id=o.run_id, scheduled_at=o.scheduled_at, queued_at=now
                    ),
                )
                for o in occurrences
            ),
            now,
        )

    # --- dispatching ----------------------------------------------------------------------

    def dispatch(self) -> DispatchReport:
        """Enqueue every occurrence from each shard's checkpoint up to the coming minute,
        minute by minute, and write the next occurrence of each recurring job. Occurrences
        past their job's start deadline (after an outage) are recorded MISSED instead."""
        now = self.clock()
        last = ids.minute_of(now) + timedelta(minutes=r.DISPATCH_LOOKAHEAD_MINUTES)
        checkpoints = self.store.checkpoints(self.shards)
        report = DispatchReport()

        def one_shard(shard: int) -> DispatchReport:
            done = checkpoints[shard]
            first = done + timedelta(minutes=1) if done else ids.minute_of(now)
            todo = ids.minutes(first, last)[: r.MAX_CATCH_UP_MINUTES]
            part = DispatchReport(minutes=len(todo))
            for minute in todo:
                self.store.open_minute(shard, minute)
                occurrences = self.store.occurrences_in(minute, shard)
                if occurrences:
                    self._dispatch_minute(occurrences, now, {shard: minute}, part)
                self.store.close_minute(shard, minute)
            return part

        with ThreadPoolExecutor(max_workers=min(self.shards, 8)) as pool:
            for shard, part in enumerate(pool.map(one_shard, range(self.shards))):
                report.minutes += part.minutes
                report.dispatched += part.dispatched
                report.missed += part.missed
                report.scheduled += part.scheduled
                report.per_shard[shard] = part.dispatched
        return report

    def _dispatch_minute(
        self,
        occurrences: list[Occurrence],
        now: datetime,
        dispatched: Mapping[int, datetime | None],
        report: DispatchReport,
    ) -> None:
        jobs = self.store.get_jobs(o.job_id for o in occurrences)
        current = []
        for o in occurrences:
            if o.job_id in jobs and is_current(jobs[o.job_id], o):
                current.append(o)
            else:  # its job was deleted, paused or rescheduled after it was planned
                self.store.delete_pending_run(o.job_id, o.run_id)
        due = []
        for o in current:
            job = jobs[o.job_id]
            if is_late(job, o.scheduled_at, now):
                run = self.store.get_run(o.job_id, o.run_id)
                if run and self.store.end_run(
                    run, RunStatus.MISSED, now, _missed_reason(job), [RunStatus.SCHEDULED]
                ):
                    report.missed += 1
            else:
                due.append(o)
        if due:
            report.dispatched += self._enqueue(due, now)
        report.scheduled += self._continue(current, jobs, now, dispatched)

    def _continue(
        self,
        occurrences: list[Occurrence],
        jobs: Mapping[str, Job],
        now: datetime,
        dispatched: Mapping[int, datetime | None],
    ) -> int:
        """Chain each job on from the occurrence just dispatched to its next one."""
        pairs: list[tuple[Job, datetime]] = []
        advances: list[tuple[Job, datetime | None]] = []
        for o in occurrences:
            job = jobs.get(o.job_id)
            if job is None or job.state is not JobState.ACTIVE or job.next_run_at != o.scheduled_at:
                continue  # deleted, paused, finished, or already moved on by an earlier dispatch
            following = next_fire(job.schedule, o.scheduled_at)
            if following is not None:
                pairs.append((job, following))
            advances.append((job, following))
        count = self._schedule(pairs, now, dispatched)
        for job, following in advances:
            self.store.advance_job(job, following, self.clock())
        return count

    # --- starting runs --------------------------------------------------------------------

    def start_run(self, message: RunMessage) -> str:
        """Start one queued run at its scheduled second, unless it must not start. Runs
        reach the worker up to DISPATCH_LEAD_SECONDS early, by design: the wait here is what
        makes a run start on its second, and it is taken in queue order, so a burst of runs
        due together starts in priority order. Returns what happened."""
        early = (message.scheduled_at - self.clock()).total_seconds()
        if early > 0:
            self.sleep(min(early, max(r.DISPATCH_LEAD_SECONDS.values()) + 1))
        for _ in range(_CLAIM_ATTEMPTS):
            outcome = self._try_start(message)
            if outcome != "job_changed":
                return outcome
        raise Conflict(f"job {message.job_id} kept changing; run {message.run_id} retried later")

    def _try_start(self, message: RunMessage) -> str:
        job = self.store.get_job(message.job_id)
        run = self.store.get_run(message.job_id, message.run_id)
        if job is None or run is None:
            return "gone"
        if run.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            return "duplicate"
        if not is_current(job, run):
            self.store.delete_pending_run(run.job_id, run.id)
            return "superseded"
        now = self.clock()
        if is_late(job, run.scheduled_at, now):
            self.store.end_run(
                run,
                RunStatus.MISSED,
                now,
                _missed_reason(job),
                [RunStatus.SCHEDULED, RunStatus.QUEUED],
            )
            return "missed"
        active = self._still_active(job, run)
        if active and job.concurrency is Concurrency.FORBID:
            reason = f"concurrency forbid: run {sorted(active)[0]} is still active"
            self.store.end_run(
                run, RunStatus.SKIPPED, now, reason, [RunStatus.SCHEDULED, RunStatus.QUEUED]
            )
            return "skipped"
        if active and job.concurrency is Concurrency.REPLACE:
            for other in sorted(active):
                self._cancel(job.id, other, f"concurrency replace: replaced by run {run.id}")
            return "job_changed"  # read the job again: its active runs are gone now
        claim = self.store.claim_run(
            job, run, message.queued_at, exclusive=job.concurrency is not Concurrency.ALLOW
        )
        if claim != "claimed":
            return claim
        assert self.executor is not None, "this function has no executor configured"
        started = self.executor.start(run.id, execution_input(job, run.id, run.scheduled_at))
        return "started" if started else "duplicate"

    def _still_active(self, job: Job, run: Run) -> set[str]:
        """The job's other active runs, after forgetting those that have in fact ended."""
        active = set()
        for other in job.active_runs - {run.id}:
            found = self.store.get_run(job.id, other)
            if found is None or found.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
                self.store.release_run(job.id, other)
            else:
                active.add(other)
        return active

    def _cancel(self, job_id: str, run_id: str, reason: str) -> None:
        assert self.executor is not None, "this function has no executor configured"
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


def _scheduled_run(job: Job, run_id: str, at: datetime, trigger: Trigger) -> Run:
    """A new run of ``job`` at ``at``, not yet claimed."""
    return Run(
        id=run_id,
        job_id=job.id,
        owner=job.owner,
        status=RunStatus.SCHEDULED,
        priority=job.priority,
        trigger=trigger,
        scheduled_at=at,
        generation=job.generation,
    )


def _check_target(spec: JobSpec) -> None:
    if isinstance(spec.target, PythonTarget) and tasks.lookup(spec.target.task) is None:
        raise InvalidRequest("target.task", f"{spec.target.task} is not a registered task")


def _next_generation(job: Job, now: datetime, **changes: Any) -> Job:
    """``job`` changed so that its planned occurrences no longer hold."""
    return Job.model_validate(
        {
            **job.model_dump(),
            **changes,
            "version": job.version + 1,
            "generation": job.generation + 1,
            "updated_at": now,
        }
    )


def _missed_reason(job: Job) -> str:
    return f"could not start within start_deadline_seconds ({job.start_deadline_seconds} s)"
