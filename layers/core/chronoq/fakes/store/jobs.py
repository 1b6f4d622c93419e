"""The JobStore port in memory: jobs, job counts, job names, and the job's side of a claim."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta

from chronoq import resources as r
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.fakes.store._tables import FakeTables, page
from chronoq.usecases.ports import Claim, Page, Position


class FakeJobs(FakeTables):
    def put_new_job(self, job: Job) -> None:
        with self._lock:
            if job.id in self.jobs:
                raise KeyError(f"job {job.id} exists")
            self.jobs[job.id] = job

    def get_job(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def get_jobs(self, job_ids: Iterable[str], consistent: bool = False) -> dict[str, Job]:
        return {j: self.jobs[j] for j in set(job_ids) if j in self.jobs}

    def list_jobs(self, owner: str) -> list[Job]:
        # (the owner index's order: by creation, stable among jobs created together)
        return sorted(
            (j for j in self.jobs.values() if j.owner == owner), key=lambda j: j.created_at
        )

    def page_jobs(
        self,
        owner: str,
        limit: int,
        after: Position | None = None,
        keep: Callable[[Job], bool] | None = None,
    ) -> Page[Job]:
        ordered = sorted(
            ((format_instant(j.created_at), j.id), j)
            for j in self.jobs.values()
            if j.owner == owner
        )
        candidates = [(p, j) for p, j in ordered if after is None or p > after]
        return page(candidates, limit, keep or (lambda _: True))

    def save_job(self, job: Job, expected_version: int) -> bool:
        with self._lock:
            stored = self.jobs.get(job.id)
            if stored is None or stored.version != expected_version:
                return False
            self.jobs[job.id] = job.model_copy(
                update={"active_runs": stored.active_runs, "followed_by": stored.followed_by}
            )
            return True

    def delete_job(self, job_id: str) -> bool:
        with self._lock:
            return self.jobs.pop(job_id, None) is not None

    def job_count(self, owner: str) -> int:
        return self.job_counts.get(owner, 0)

    def count_job(self, owner: str, delta: int, limit: int | None = None) -> bool:
        with self._lock:
            count = self.job_counts.get(owner, 0) + delta
            if limit is not None and delta > 0 and count > limit:
                return False
            self.job_counts[owner] = count
            return True

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        with self._lock:
            stored = self.jobs.get(job.id)
            if stored is None or stored.version != job.version:
                return "job_changed"
            if exclusive and stored.active_runs and run.id not in stored.active_runs:
                return "job_changed"
            entered_before = run.id in stored.active_runs
            self.jobs[job.id] = stored.model_copy(
                update={"active_runs": stored.active_runs | {run.id}}
            )
            kept = self.runs.get((run.job_id, run.id))
            claimed_at = self.claims.get(run.id)
            lapsed = claimed_at is None or now - claimed_at >= timedelta(
                seconds=r.CLAIM_LEASE_SECONDS
            )
            if kept is not None and kept.status is RunStatus.QUEUED and not lapsed:
                return "held"
            if kept is None:  # a scheduled run has no record yet: the claim creates it
                kept = run.model_copy(update={"status": RunStatus.SCHEDULED})
            if kept.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
                if not entered_before:
                    self.release_run(job.id, run.id)
                return "taken"
            self.runs[(run.job_id, run.id)] = kept.model_copy(
                update={"status": RunStatus.QUEUED, "queued_at": kept.queued_at or queued_at}
            )
            self.claims[run.id] = now
            return "claimed"

    def release_run(self, job_id: str, run_id: str) -> None:
        with self._lock:
            stored = self.jobs.get(job_id)
            if stored is not None:
                self.jobs[job_id] = stored.model_copy(
                    update={"active_runs": stored.active_runs - {run_id}}
                )

    def claim_name(self, owner: str, name: str, job_id: str, now: datetime) -> str | None:
        with self._lock:
            held = self.names.get((owner, name))
            if held is not None and held[0] != job_id:
                holder, claimed = held
                if now - claimed < timedelta(seconds=r.NAME_STALE_SECONDS):
                    return holder
                job = self.jobs.get(holder)
                if job is not None and job.name == name:
                    return holder
            self.names[(owner, name)] = (job_id, now)
            return None

    def release_name(self, owner: str, name: str, job_id: str) -> None:
        with self._lock:
            held = self.names.get((owner, name))
            if held is not None and held[0] == job_id:
                del self.names[(owner, name)]

    def all_jobs(self) -> Iterator[Job]:
        yield from list(self.jobs.values())
