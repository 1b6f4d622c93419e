"""The use cases of chronoq, over injected adapters: what each handler calls into."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq import ids
from chronoq import resources as r
from chronoq.errors import InvalidRequest, NotFound
from chronoq.executor import Executor
from chronoq.models import (
    AtSchedule,
    Job,
    JobSpec,
    JobState,
    Occurrence,
    Run,
    RunMessage,
    RunStatus,
    format_instant,
)
from chronoq.queue import Queues
from chronoq.schedules import next_fire
from chronoq.store import Store

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


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
    }


@dataclass
class DispatchReport:
    minutes: int = 0
    dispatched: int = 0
    scheduled: int = 0
    per_shard: dict[int, int] = field(default_factory=dict)


@dataclass
class Chronoq:
    store: Store
    queues: Queues | None = None
    executor: Executor | None = None
    shards: int = r.DEFAULT_SHARDS
    clock: Clock = utc_now

    # --- jobs -----------------------------------------------------------------------------

    def create_job(self, owner: str, spec: JobSpec) -> Job:
        now = self.clock()
        if isinstance(spec.schedule, AtSchedule) and spec.schedule.at <= now:
            raise InvalidRequest("schedule.at", "must be in the future")
        first = next_fire(spec.schedule, now)
        job = Job.model_validate(
            {
                **spec.model_dump(),
                "id": ids.new_job_id(),
                "owner": owner,
                "state": JobState.ACTIVE if first else JobState.COMPLETED,
                "next_run_at": first,
                "version": 1,
                "created_at": now,
                "updated_at": now,
            }
        )
        self.store.put_new_job(job)
        if first is not None:
            self._schedule([(job, first)], now)
        return job

    def get_job(self, owner: str, job_id: str) -> Job:
        job = self.store.get_job(job_id)
        if job is None or job.owner != owner:
            raise NotFound(f"job {job_id} not found")
        return job

    def list_jobs(self, owner: str) -> list[Job]:
        return sorted(self.store.list_jobs(owner), key=lambda j: (j.created_at, j.id))

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

    # --- the time index -------------------------------------------------------------------

    def _schedule(
        self,
        pairs: Iterable[tuple[Job, datetime]],
        now: datetime,
        dispatched: Mapping[int, datetime | None] | None = None,
    ) -> int:
        """Record a SCHEDULED run and a schedule item for each (job, instant). An instant
        whose minute its shard has already dispatched goes straight to SQS as well: the
        checkpoint is read after the item is written, so no occurrence falls between the
        dispatcher's query and this write."""
        occurrences: list[Occurrence] = []
        for job, at in pairs:
            run = Run(
                id=ids.run_id(job.id, at),
                job_id=job.id,
                owner=job.owner,
                status=RunStatus.SCHEDULED,
                priority=job.priority,
                scheduled_at=at,
            )
            self.store.create_run(run, now)
            occurrences.append(
                Occurrence(job_id=job.id, run_id=run.id, scheduled_at=at, priority=job.priority)
            )
        if not occurrences:
            return 0
        self.store.put_occurrences(occurrences, self.shards, now)
        checkpoints = dict(dispatched) if dispatched is not None else {}
        late = []
        for o in occurrences:
            shard = ids.shard_of(o.job_id, self.shards)
            if shard not in checkpoints:
                checkpoints[shard] = self.store.checkpoint(shard)
            done_through = checkpoints[shard]
            if done_through is not None and ids.minute_of(o.scheduled_at) <= done_through:
                late.append(o)
        if late:
            # The dispatcher has passed these minutes: send now, and chain on from here.
            self._enqueue(late, now)
            self._continue(late, now, checkpoints)
        return len(occurrences)

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
        minute by minute, and write the next occurrence of each recurring job."""
        now = self.clock()
        last = ids.minute_of(now) + timedelta(minutes=r.DISPATCH_LOOKAHEAD_MINUTES)
        checkpoints = self.store.checkpoints(self.shards)
        report = DispatchReport()

        def one_shard(shard: int) -> tuple[int, int, int]:
            done = checkpoints[shard]
            first = done + timedelta(minutes=1) if done else ids.minute_of(now)
            todo = ids.minutes(first, last)[: r.MAX_CATCH_UP_MINUTES]
            dispatched = scheduled = 0
            for minute in todo:
                occurrences = self.store.occurrences_in(minute, shard)
                if occurrences:
                    dispatched += self._enqueue(occurrences, now)
                    scheduled += self._continue(occurrences, now, {shard: minute})
                self.store.set_checkpoint(shard, minute)
            return len(todo), dispatched, scheduled

        with ThreadPoolExecutor(max_workers=min(self.shards, 8)) as pool:
            for shard, (n, dispatched, scheduled) in enumerate(
                pool.map(one_shard, range(self.shards))
            ):
                report.minutes += n
                report.dispatched += dispatched
                report.scheduled += scheduled
                report.per_shard[shard] = dispatched
        return report

    def _continue(
        self,
        occurrences: list[Occurrence],
        now: datetime,
        dispatched: Mapping[int, datetime | None],
    ) -> int:
        """Chain each job on from the occurrence just dispatched to its next one."""
        jobs = self.store.get_jobs(o.job_id for o in occurrences)
        pairs: list[tuple[Job, datetime]] = []
        advances: list[tuple[Job, datetime | None]] = []
        for o in occurrences:
            job = jobs.get(o.job_id)
            if job is None or job.state != JobState.ACTIVE or job.next_run_at != o.scheduled_at:
                continue  # deleted, finished, or already moved on by an earlier dispatch
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
        """Start one queued run unless it must not start. Returns what happened."""
        job = self.store.get_job(message.job_id)
        if job is None:
            logger.info("job gone, run dropped", extra={"run_id": message.run_id})
            return "job_gone"
        if not self.store.claim_run(message.job_id, message.run_id, message.queued_at):
            logger.info("duplicate delivery dropped", extra={"run_id": message.run_id})
            return "duplicate"
        assert self.executor is not None, "this function has no executor configured"
        started = self.executor.start(
            message.run_id, execution_input(job, message.run_id, message.scheduled_at)
        )
        return "started" if started else "duplicate"
