"""Completion triggers (chronoq.domain.after): what the API and the notifier do for jobs whose
schedule is ``after`` other jobs.

- The API resolves an ``after`` schedule's upstreams (names or ids, the caller's own: else
  422 naming ``schedule.jobs``), checks the owner's pipeline graph for a cycle and writes it
  back on condition of the version read (``link``: two racing changes cannot both pass), and
  keeps each upstream's followers (``Job.followed_by``), which its runs note as they start.
- The notifier, hearing of the end of a run whose ``slots`` name followers, notes it in each
  follower's fan-in for the run's instant and, when the fan-in is complete, creates the
  follower's run (a deterministic id, a conditional write: once) and sends it as a manual run
  is sent (``upstream_ended``).

A job that nothing follows costs none of this: its runs' ``slots`` name no follower, and the
notifier does nothing more for them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from chronoq.domain import after, ids, keys
from chronoq.domain import limits as lim
from chronoq.domain.errors import Conflict, InvalidRequest
from chronoq.domain.jobs import Job, JobState
from chronoq.domain.runs import Occurrence, Run, RunStatus, Trigger
from chronoq.domain.schedules import AfterSchedule
from chronoq.domain.silence import Deadline
from chronoq.usecases.ports import AfterStore, Clock, ExpectStore, JobStore, RunStore
from chronoq.usecases.timeindex import TimeIndex, new_run

logger = logging.getLogger(__name__)

#: Tries of a graph's write that loses to another change of the owner's graph.
ATTEMPTS = 5


def upstreams_of(job: Job) -> frozenset[str]:
    """The job ids an ``after`` job follows (none for another job)."""
    if isinstance(job.schedule, AfterSchedule):
        return frozenset(job.schedule.jobs)
    return frozenset()


class PipelineStore(AfterStore, ExpectStore, JobStore, RunStore, Protocol):
    """What the completion triggers read and write."""


@dataclass
class Pipelines:
    store: PipelineStore
    index: TimeIndex
    clock: Clock

    # --- the API's side -------------------------------------------------------------------

    def resolved(
        self, owner: str, schedule: AfterSchedule, job_id: str | None, max_runs: int | None = None
    ) -> AfterSchedule:
        """The schedule with its upstreams as job ids; 422 naming ``schedule.jobs`` for a name
        or id that is none of the owner's jobs, or the job itself (and naming ``max_runs``
        when it is given: an after job has no scheduled runs to count)."""
        if max_runs is not None:
            raise InvalidRequest(
                "max_runs", "an after job has no scheduled runs to count: leave max_runs out"
            )
        found: list[str] = []
        for given in schedule.jobs:
            upstream = self._find(owner, given)
            if upstream is None:
                raise InvalidRequest(after.FIELD, f"{given!r} is not one of your jobs")
            if upstream == job_id:
                raise InvalidRequest(after.FIELD, f"{given!r} is this job: it cannot follow itself")
            if upstream in found:
                raise InvalidRequest(after.FIELD, f"{given!r} names a job named before")
            found.append(upstream)
        return schedule.model_copy(update={"jobs": found})

    def _find(self, owner: str, given: str) -> str | None:
        if given.startswith(keys.JOB):
            job = self.store.get_job(given)
            if job is not None and job.owner == owner:
                return job.id
        held = self.store.job_named(owner, given)
        if held is None:
            return None
        job = self.store.get_job(held)
        return job.id if job is not None and job.owner == owner and job.name == given else None

    def link(self, owner: str, job_id: str, upstreams: Iterable[str]) -> frozenset[str]:
        """Make ``upstreams`` the jobs ``job_id`` follows in the owner's graph (none: it
        follows none): refused (422 naming ``schedule.jobs``) if that closes a cycle. The
        graph is written on condition of the version read, so of two racing changes the
        second is checked against the first's graph. Answers the upstreams it followed
        before (to ``settle``)."""
        wanted = frozenset(upstreams)
        for _ in range(ATTEMPTS):
            graph = self.store.get_graph(owner)
            before = graph.edges.get(job_id, frozenset())
            if before == wanted:
                return before
            changed = graph.with_job(job_id, wanted)
            if wanted:
                cycle = after.cycle_from(changed.edges, job_id)
                if cycle is not None:
                    names = " -> ".join(self._name(j) for j in [*cycle, cycle[0]])
                    raise InvalidRequest(after.FIELD, f"would make a cycle: {names}")
                if job_id not in graph.edges and len(graph.edges) >= lim.MAX_AFTER_JOBS_PER_OWNER:
                    raise InvalidRequest(
                        after.FIELD,
                        f"you have {len(graph.edges)} after jobs, the most allowed"
                        f" ({lim.MAX_AFTER_JOBS_PER_OWNER})",
                    )
            if self.store.save_graph(changed):
                return before
        raise Conflict("your pipeline graph kept changing: try again")

    def settle(self, job_id: str, before: Iterable[str], now_following: Iterable[str]) -> None:
        """Keep the followers on the upstream jobs: added to those it follows now, taken off
        those it no longer follows."""
        old, new = frozenset(before), frozenset(now_following)
        for upstream in new - old:
            self.store.follow(upstream, add=[job_id])
        for upstream in old - new:
            self.store.follow(upstream, remove=[job_id])

    def unlink(self, job: Job) -> None:
        """A job deleted: it leaves its owner's graph (as a follower) and its upstreams'
        followers. (The jobs that follow it keep naming it: shown as a deleted upstream.)"""
        ups = upstreams_of(job)
        if not ups:
            return
        before = self.link(job.owner, job.id, ())
        self.settle(job.id, before | ups, ())

    def _name(self, job_id: str) -> str:
        job = self.store.get_job(job_id)
        return job.name if job is not None else job_id

    def shown(self, job: Job) -> Job:
        """The job with its upstreams (an ``after`` job) and downstreams (jobs following it),
        each ``{id, name, state}``: a deleted one with name and state None."""
        ups = list(job.schedule.jobs) if isinstance(job.schedule, AfterSchedule) else []
        downs = sorted(job.followed_by)
        if not ups and not downs:
            return job
        found = self.store.get_jobs([*ups, *downs])
        now = self.clock()

        def entry(job_id: str) -> dict[str, str | None]:
            other = found.get(job_id)
            if other is None or other.owner != job.owner:
                return {"id": job_id, "name": None, "state": None}
            return {"id": job_id, "name": other.name, "state": other.as_of(now).state.value}

        update: dict[str, Any] = {}
        if ups:
            update["upstreams"] = [entry(j) for j in ups]
        if downs:
            update["downstreams"] = [entry(j) for j in downs]
        return job.model_copy(update=update)

    def with_triggered(self, run: Run) -> Run:
        """The run with the runs of ``after`` jobs its end made (``triggered``): those of its
        job's followers for its instant (a read of the job, and one per follower)."""
        job = self.store.get_job(run.job_id)
        if job is None or not job.followed_by:
            return run
        made = [
            run_id
            for follower in sorted(job.followed_by)
            if self.store.get_run(follower, run_id := ids.after_run_id(follower, run.scheduled_at))
            is not None
        ]
        return run.model_copy(update={"triggered": made})

    # --- the notifier's side --------------------------------------------------------------

    def upstream_ended(self, run: Run, followers: Iterable[str]) -> list[str]:
        """The end of upstream run ``run`` (its ``slots`` named ``followers``): noted in each
        follower's fan-in for its instant, where it counts; the ids of the downstream runs
        created (a run created before, by an end heard before, is not created again).
        Re-runs' and backfills' runs are not followed (unless they cascade)."""
        if run.trigger in (Trigger.RERUN, Trigger.BACKFILL) and not run.cascade:
            return []
        now = self.clock()
        created: list[str] = []
        for follower_id in sorted(set(followers)):
            follower = self.store.get_job(follower_id)  # (GetItem: what the notifier may do)
            made = self._arrive(follower, run, now) if follower is not None else None
            if made is not None:
                created.append(made)
        return created

    def _arrive(self, job: Job, run: Run, now: datetime) -> str | None:
        schedule = job.schedule
        if (
            not isinstance(schedule, AfterSchedule)
            or job.owner != run.owner
            or run.job_id not in schedule.jobs
            or job.state is not JobState.ACTIVE
            or not after.counts(schedule.on, run.status)
        ):
            return None  # (no longer following it, paused, or not an end it asks for)
        if run.cascade:  # a cascade: a run of its own, at once (no fan-in: see cascaded_run_id)
            cascaded = ids.cascaded_run_id(job.id, run.scheduled_at, run.id)
            return self._create(job, run.scheduled_at, [run.id], now, cascaded)
        if len(schedule.jobs) == 1:  # (no fan-in to keep)
            return self._create(job, run.scheduled_at, [run.id], now)
        fanin = self.store.arrive(job.id, run.scheduled_at, run.job_id, run.id, now)
        if not fanin.complete(schedule.jobs):
            # the instant waits from its first arrival; written again by each arrival that
            # leaves it incomplete (the same entry: an arrival whose writing of it died, and
            # was followed by another before being heard again, loses nothing)
            self._wait(job, run.scheduled_at, fanin.first_at or now, now)
            return None
        return self._create(job, run.scheduled_at, sorted(fanin.runs), now)

    def _create(
        self,
        job: Job,
        instant: datetime,
        triggered_by: list[str],
        now: datetime,
        cascaded: str | None = None,
    ) -> str | None:
        """The downstream run of ``instant``, created once (its id derived from the job and
        the instant) and sent as a manual run is (the worker, fair share and the owner's
        limits as for any run). Created before but not started yet (an end heard again after
        a crash before the send), it is sent again: the worker starts it once. ``cascaded``:
        the id of a cascade's run (derived from the cascading run), which cascades on."""
        run_id = cascaded or ids.after_run_id(job.id, instant)
        run = new_run(job, run_id, instant, Trigger.AFTER)
        update: dict[str, Any] = {"queued_at": now, "triggered_by": triggered_by}
        if cascaded:
            update["cascade"] = True
        run = run.model_copy(update=update)
        if not self.store.create_run(run, now):
            kept = self.store.get_run(job.id, run.id)
            if kept is None or kept.status is not RunStatus.SCHEDULED or kept.queued_at is None:
                return None  # (started, ended, or made SKIPPED by the wait's end)
            self.index.enqueue([Occurrence.of(kept)], now)
            return None
        self.index.enqueue([Occurrence.of(run)], now)
        return run.id

    def _wait(self, job: Job, instant: datetime, first_at: datetime, now: datetime) -> None:
        """The instant waits ``within_seconds`` for the rest of its upstreams: its deadline
        written to the time index (as a job's success deadline is: the dispatcher finds it
        once it has passed)."""
        assert isinstance(job.schedule, AfterSchedule)
        at = first_at + timedelta(seconds=job.schedule.within_seconds)
        self.store.put_deadlines(
            [Deadline(job_id=job.id, at=at, instant=instant)], self.index.shards, now
        )

    # --- the dispatcher's side ------------------------------------------------------------

    def lapsed(self, waits: Iterable[Deadline], now: datetime) -> int:
        """Fan-in waits the dispatcher found passed: an instant still missing upstreams has
        its downstream run recorded SKIPPED, naming them, under the id the complete fan-in
        would have given it (whichever comes first makes the run; the other finds it). A
        wait found early is kept for a later minute. How many were SKIPPED."""
        skipped = 0
        for wait in waits:
            assert wait.instant is not None
            job = self.store.get_job(wait.job_id)
            if job is None or not isinstance(job.schedule, AfterSchedule):
                continue  # (deleted, or no longer after anything)
            fanin = self.store.get_fanin(job.id, wait.instant)
            ups = job.schedule.jobs
            run_id = ids.after_run_id(job.id, wait.instant)
            if fanin is not None and fanin.complete(ups):
                kept = self.store.get_run(job.id, run_id)
                if kept is None or kept.queued_at is not None:
                    continue  # (made by the last upstream's end, or about to be: it runs)
            elif now < wait.at:
                self.store.put_deadlines([wait], self.index.shards, now)
                continue
            missing = fanin.missing(ups) if fanin is not None else sorted(ups)
            reason = f"within_seconds ({job.schedule.within_seconds} s) passed " + (
                f"with upstreams missing: {', '.join(self._name(j) for j in missing)}"
                if missing
                else "before the last upstream arrived"
            )
            run = new_run(job, run_id, wait.instant, Trigger.AFTER)
            run = run.model_copy(
                update={"triggered_by": sorted(fanin.runs) if fanin is not None else None}
            )
            if not self.store.create_run(run, now):
                kept = self.store.get_run(job.id, run.id)
                if kept is None or kept.queued_at is not None:
                    continue  # (made by the last upstream's end: it runs)
            if self.store.end_run(run, RunStatus.SKIPPED, now, reason, [RunStatus.SCHEDULED]):
                skipped += 1
        return skipped
