"""The dispatcher: once a minute, enqueue the coming minute of every shard."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.runs import Occurrence, RunStatus, Trigger
from chronoq.domain.silence import Deadline
from chronoq.usecases.after import Pipelines
from chronoq.usecases.ports import (
    AfterStore,
    Clock,
    ExpectStore,
    JobStore,
    RunStore,
    ScheduleStore,
)
from chronoq.usecases.silence import Silence
from chronoq.usecases.timeindex import TimeIndex, end_unstarted, new_run

logger = logging.getLogger(__name__)


@dataclass
class DispatchReport:
    minutes: int = 0
    dispatched: int = 0
    missed: int = 0
    scheduled: int = 0
    #: Jobs with ``expect`` whose deadline passed with no success: gone silent.
    silent: int = 0
    #: Runs of ``after`` jobs whose instant's wait lapsed with upstreams missing: SKIPPED.
    skipped_after: int = 0
    per_shard: dict[int, int] = field(default_factory=dict)
    #: Shards left partway (the invocation's time ran out): the next one resumes them.
    unfinished: list[int] = field(default_factory=list)
    #: Minutes the most late of its shards is still behind the minute dispatched up to (0:
    #: every shard caught up); a metric, alarmed on.
    behind: int = 0


#: Time left to an invocation (seconds): under DISPATCH_STOP_SECONDS it takes no new page.
TimeLeft = Callable[[], float]


class DispatcherStore(AfterStore, ExpectStore, JobStore, RunStore, ScheduleStore, Protocol):
    """What the dispatcher reads and writes (its completion triggers and silences too)."""


@dataclass
class Dispatcher:
    store: DispatcherStore
    index: TimeIndex
    shards: int
    clock: Clock

    @property
    def silence(self) -> Silence:
        return Silence(self.store, self.shards, self.clock)

    @property
    def pipelines(self) -> Pipelines:
        return Pipelines(self.store, self.index, self.clock)

    def dispatch(
        self, shards: Sequence[int] | None = None, time_left: TimeLeft | None = None
    ) -> DispatchReport:
        """Enqueue every occurrence from each shard's checkpoint up to the coming minutes,
        minute by minute, a page of items at a time, and write the next occurrence of each
        recurring job. Occurrences past their job's start deadline (after an outage) are
        recorded MISSED instead. Jobs' success deadlines found in those pages are checked
        (usecases.silence: only jobs with ``expect`` have them). ``shards``: these only
        (default: all); ``time_left``: stop cleanly before it runs out, recording how far into
        its minute each shard got (the next invocation resumes there: each run is dispatched
        once)."""
        now = self.clock()
        last = ids.minute_of(now + timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS))
        mine = list(range(self.shards)) if shards is None else list(shards)
        checkpoints, progress = self.store.dispatch_marks(self.shards)
        report = DispatchReport()

        def out_of_time() -> bool:
            return time_left is not None and time_left() < r.DISPATCH_STOP_SECONDS

        # A shard never dispatched (a new deployment, more shards) may already hold
        # occurrences of the last minutes: look back as far as one tick catches up.
        never = last - timedelta(minutes=r.MAX_CATCH_UP_MINUTES - 1)

        def one_shard(shard: int) -> DispatchReport:
            done = checkpoints[shard]
            first = done + timedelta(minutes=1) if done else never
            every = ids.minutes(first, last)
            todo = every[: r.MAX_CATCH_UP_MINUTES]
            # until the minutes it closes say otherwise, the shard is behind by all of them
            part = DispatchReport(behind=len(every))
            for minute in todo:
                if out_of_time():
                    part.unfinished.append(shard)
                    return part
                part.minutes += 1
                self.store.open_minute(shard, minute)
                within, after = progress.get(shard, (None, None))
                after = after if within == minute else None
                while True:
                    page = self.store.schedule_page(minute, shard, after, r.DISPATCH_PAGE_ITEMS)
                    after = page.after
                    if page.occurrences:
                        self._dispatch_minute(page.occurrences, now, {shard: minute}, part)
                    if page.deadlines:
                        # (completion triggers: an after job's fan-in waits among them)
                        waits = [d for d in page.deadlines if d.instant is not None]
                        success = [d for d in page.deadlines if d.instant is None]
                        if success:
                            part.silent += self._deadlines(success, now)
                        if waits:
                            part.skipped_after += self._lapsed(waits, now)
                    if after is None:
                        break
                    self.store.advance_within(shard, minute, after)
                    if out_of_time():
                        part.unfinished.append(shard)
                        return part
                self.store.close_minute(shard, minute)
                part.behind -= 1
            return part

        # (each shard's thread runs in a copy of this context: whoever is calling, as the
        # local usage accounting tells callers apart, stays the caller)
        contexts = {s: contextvars.copy_context() for s in mine}
        with ThreadPoolExecutor(max_workers=max(1, min(len(mine), 8))) as pool:
            parts = pool.map(lambda s: contexts[s].run(one_shard, s), mine)
            for shard, part in zip(mine, parts, strict=True):
                report.minutes += part.minutes
                report.dispatched += part.dispatched
                report.missed += part.missed
                report.scheduled += part.scheduled
                report.silent += part.silent
                report.skipped_after += part.skipped_after
                report.per_shard[shard] = part.dispatched
                report.unfinished += part.unfinished
                report.behind = max(report.behind, part.behind)
        return report

    def _deadlines(self, deadlines: list[Deadline], now: datetime) -> int:
        """Jobs' success deadlines found in a minute (usecases.silence): how many went
        silent. Looking at them holds up no run: if it fails, they are written again into a
        minute not opened yet, to be looked at then (if that fails too, the minute is read
        again, as for any failure)."""
        try:
            return self.silence.due(deadlines, now)
        except Exception:
            logger.exception("deadlines of %d jobs looked at again later", len(deadlines))
            self.store.put_deadlines(deadlines, self.shards, now)
            return 0

    def _lapsed(self, waits: list[Deadline], now: datetime) -> int:
        """After jobs' fan-in waits found in a minute (usecases.after): how many of their
        runs were recorded SKIPPED. If looking fails, they are written again, as deadlines
        are."""
        try:
            return self.pipelines.lapsed(waits, now)
        except Exception:
            logger.exception("fan-in waits of %d instants looked at again later", len(waits))
            self.store.put_deadlines(waits, self.shards, now)
            return 0

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
            if job.is_late(o.starts_at, now):
                kept = self.store.get_run(o.job_id, o.run_id)
                run = kept or new_run(job, o.run_id, o.scheduled_at, Trigger.SCHEDULE)
                if end_unstarted(self.store, kept, run, RunStatus.MISSED, job.missed_reason(), now):
                    report.missed += 1
            else:
                due.append(o)
        if due:
            report.dispatched += self.index.enqueue(due, now, jobs)
        # the next occurrences in packs named by the minute dispatched: a re-dispatch of the
        # minute writes the same items again
        (minute,) = {m for m in dispatched.values() if m is not None}
        pack = f"chain-{minute:%Y%m%dT%H%M}"
        report.scheduled += self.index.chain(current, jobs, now, dispatched, pack, current=True)
