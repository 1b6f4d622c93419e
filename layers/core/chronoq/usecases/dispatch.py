"""The dispatcher: once a minute, enqueue the coming minute of every shard."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.runs import Occurrence, RunStatus, Trigger
from chronoq.usecases.ports import Clock, Store
from chronoq.usecases.timeindex import TimeIndex, end_unstarted, new_run


@dataclass
class DispatchReport:
    minutes: int = 0
    dispatched: int = 0
    missed: int = 0
    scheduled: int = 0
    per_shard: dict[int, int] = field(default_factory=dict)


@dataclass
class Dispatcher:
    store: Store
    index: TimeIndex
    shards: int
    clock: Clock

    def dispatch(self) -> DispatchReport:
        """Enqueue every occurrence from each shard's checkpoint up to the coming minute,
        minute by minute, and write the next occurrence of each recurring job. Occurrences
        past their job's start deadline (after an outage) are recorded MISSED instead."""
        now = self.clock()
        last = ids.minute_of(now) + timedelta(minutes=r.DISPATCH_LOOKAHEAD_MINUTES)
        checkpoints = self.store.checkpoints(self.shards)
        report = DispatchReport()

        # A shard never dispatched (a new deployment, more shards) may already hold
        # occurrences of the last minutes: look back as far as one tick catches up.
        never = last - timedelta(minutes=r.MAX_CATCH_UP_MINUTES - 1)

        def one_shard(shard: int) -> DispatchReport:
            done = checkpoints[shard]
            first = done + timedelta(minutes=1) if done else never
            todo = ids.minutes(first, last)[: r.MAX_CATCH_UP_MINUTES]
            part = DispatchReport(minutes=len(todo))
            for minute in todo:
                self.store.open_minute(shard, minute)
                occurrences = self.store.occurrences_in(minute, shard)
                if occurrences:
                    self._dispatch_minute(occurrences, now, {shard: minute}, part)
                self.store.close_minute(shard, minute)
            return part

        # (each shard's thread runs in a copy of this context: whoever is calling, as the
        # local usage accounting tells callers apart, stays the caller)
        contexts = [contextvars.copy_context() for _ in range(self.shards)]
        with ThreadPoolExecutor(max_workers=min(self.shards, 8)) as pool:
            parts = pool.map(lambda s: contexts[s].run(one_shard, s), range(self.shards))
            for shard, part in enumerate(parts):
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
        # An occurrence whose job was deleted, paused or rescheduled after it was planned is
        # dropped (it has no run record: nothing to clean up).
        current = [o for o in occurrences if o.job_id in jobs and jobs[o.job_id].is_current(o)]
        due = []
        for o in current:
            job = jobs[o.job_id]
            if job.is_late(o.scheduled_at, now):
                kept = self.store.get_run(o.job_id, o.run_id)
                run = kept or new_run(job, o.run_id, o.scheduled_at, Trigger.SCHEDULE)
                if end_unstarted(self.store, kept, run, RunStatus.MISSED, job.missed_reason(), now):
                    report.missed += 1
            else:
                due.append(o)
        if due:
            report.dispatched += self.index.enqueue(due, now)
        # the next occurrences in packs named by the minute dispatched: a re-dispatch of the
        # minute writes the same items again
        (minute,) = {m for m in dispatched.values() if m is not None}
        pack = f"chain-{minute:%Y%m%dT%H%M}"
        report.scheduled += self.index.chain(current, jobs, now, dispatched, pack, current=True)
