"""The time index: planning occurrences of jobs and handing due ones to the queues. Shared by
the API (a job created or rescheduled) and the dispatcher (a job chained on to its next run)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobState
from chronoq.domain.runs import Occurrence, Run, RunMessage, RunStatus, Trigger
from chronoq.usecases.ports import Clock, JobStore, Queues, RunStore, ScheduleStore

#: Per shard, the last minute whose dispatch has begun (None: never).
Dispatched = Mapping[int, datetime | None]


def end_unstarted(
    store: RunStore, kept: Run | None, run: Run, status: RunStatus, reason: str, now: datetime
) -> bool:
    """Give a run that will not execute (``kept``: its record, if it has one yet) its final
    status; a run with no record yet is recorded first."""
    if kept is None:
        store.create_run(run, now)
    return store.end_run(run, status, now, reason, [RunStatus.SCHEDULED, RunStatus.QUEUED])


def new_run(job: Job, run_id: str, at: datetime, trigger: Trigger) -> Run:
    """A new run of ``job`` at ``at``, not yet claimed (marked ``notify`` if the notifier is
    to hear of its end: see Job.tells_end)."""
    return Run(
        id=run_id,
        job_id=job.id,
        owner=job.owner,
        status=RunStatus.SCHEDULED,
        priority=job.priority,
        trigger=trigger,
        scheduled_at=at,
        generation=job.generation,
        notify=job.tells_end(at, trigger),
    )


class TimeIndexStore(JobStore, ScheduleStore, Protocol):
    """What the time index reads and writes."""


@dataclass
class TimeIndex:
    store: TimeIndexStore
    queues: Queues
    shards: int
    clock: Clock

    def write(
        self, pairs: Iterable[tuple[Job, datetime]], now: datetime, pack: str | None = None
    ) -> list[Occurrence]:
        """Write a schedule item for each (job, instant). The run itself is recorded when it
        starts (or when it is found too late to start)."""
        occurrences: list[Occurrence] = []
        for job, at in pairs:
            run = new_run(job, job.occurrence_id(at), at, Trigger.SCHEDULE)
            occurrences.append(Occurrence.of(run))
        if occurrences:
            self.store.put_occurrences(occurrences, self.shards, now, pack)
        return occurrences

    def schedule(
        self,
        pairs: Iterable[tuple[Job, datetime]],
        now: datetime,
        dispatched: Dispatched | None = None,
        pack: str | None = None,
    ) -> int:
        """Plan each (job, instant); send at once those whose minute is already dispatched."""
        occurrences = self.write(pairs, now, pack)
        self.send_if_dispatched(occurrences, now, dispatched)
        return len(occurrences)

    def send_if_dispatched(
        self, occurrences: list[Occurrence], now: datetime, dispatched: Dispatched | None = None
    ) -> None:
        """An occurrence whose minute its shard has already begun to dispatch goes straight
        to SQS (see the schedule store's opened_through: none can fall between the
        dispatcher's query and this write)."""
        checkpoints = dict(dispatched) if dispatched is not None else {}
        late = []
        for o in occurrences:
            shard = ids.shard_of(o.job_id, self.shards)
            if shard not in checkpoints:
                checkpoints[shard] = self.store.opened_through(shard)
            done_through = checkpoints[shard]
            if done_through is not None and ids.minute_of(o.starts_at) <= done_through:
                late.append(o)
        if late:
            # The dispatcher has passed these minutes: send now, and chain on from here. (The
            # next occurrences are checked against the minutes opened once they are written,
            # not against those read above: the dispatcher may open theirs meanwhile.)
            try:
                jobs = self.store.get_jobs(o.job_id for o in late)
                self.enqueue(late, now, jobs)
                self.chain(late, jobs, now, dispatched)
            except Exception:
                # Not sent (or not chained on): the dispatcher reads those minutes again.
                for shard, minute in {
                    (ids.shard_of(o.job_id, self.shards), ids.minute_of(o.starts_at)) for o in late
                }:
                    self.store.reopen_minute(shard, minute)
                raise

    def enqueue(
        self, occurrences: list[Occurrence], now: datetime, jobs: Mapping[str, Job] | None = None
    ) -> int:
        """Send the occurrences' runs, each in its owner's group (the owner from ``jobs``
        when the occurrence, read from the time index, does not carry it)."""
        jobs = jobs or {}
        return self.queues.send(
            (
                (
                    o.priority,
                    RunMessage(
                        job_id=o.job_id,
                        run_id=o.run_id,
                        scheduled_at=o.scheduled_at,
                        queued_at=now,
                        generation=o.generation,
                        trigger=o.trigger,
                        owner=o.owner or (jobs[o.job_id].owner if o.job_id in jobs else ""),
                        start_deadline_seconds=o.start_deadline_seconds,
                    ),
                )
                for o in occurrences
            ),
            now,
        )

    def chain(
        self,
        occurrences: list[Occurrence],
        jobs: Mapping[str, Job],
        now: datetime,
        dispatched: Dispatched | None,
        pack: str | None = None,
        current: bool = False,
    ) -> int:
        """Chain each job on from the occurrence just dispatched to its next one
        (``dispatched``: the minutes being dispatched, or None: those opened, read once the
        next occurrences are written; ``pack``: written as packs of that name, see
        Store.put_occurrences; ``current``: the occurrences are known to be their jobs'
        current ones)."""
        pairs: list[tuple[Job, datetime]] = []
        for o in occurrences:
            job = jobs.get(o.job_id)
            if job is None or job.state is not JobState.ACTIVE:
                continue  # deleted, paused or finished
            if not current and not job.is_current(o):
                continue  # rescheduled
            following = job.following(o.scheduled_at)  # (none after its last run: max_runs)
            if following is not None:
                # (chaining the same occurrence twice writes the same item twice: harmless)
                pairs.append((job, following))
        # The job item is not written: its next_run_at and its end (COMPLETED) are derived
        # from its schedule when it is read (Job.as_of).
        return self.schedule(pairs, now, dispatched, pack)
