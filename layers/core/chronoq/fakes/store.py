"""The three tables in memory, with the conditional writes of the DynamoDB adapter."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Attempt, Occurrence, Run, RunStatus
from chronoq.usecases.ports import Claim


@dataclass
class FakeStore:
    jobs: dict[str, Job] = field(default_factory=dict)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    #: bucket -> due -> occurrence
    schedule: dict[str, dict[str, Occurrence]] = field(default_factory=dict)
    #: shard -> {"opened": minute, "minute": minute}
    marks: dict[int, dict[str, datetime]] = field(default_factory=dict)
    #: run id -> when it was last claimed
    claims: dict[str, datetime] = field(default_factory=dict)
    #: owner -> how many jobs they have
    job_counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # --- jobs -------------------------------------------------------------------------------

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

    def save_job(self, job: Job, expected_version: int) -> bool:
        with self._lock:
            stored = self.jobs.get(job.id)
            if stored is None or stored.version != expected_version:
                return False
            self.jobs[job.id] = job.model_copy(update={"active_runs": stored.active_runs})
            return True

    def delete_job(self, job_id: str) -> bool:
        with self._lock:
            return self.jobs.pop(job_id, None) is not None

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

    # --- runs -------------------------------------------------------------------------------

    def create_run(self, run: Run, now: datetime) -> bool:
        with self._lock:
            key = (run.job_id, run.id)
            if key in self.runs:
                return False
            self.runs[key] = Run(
                id=run.id,
                job_id=run.job_id,
                owner=run.owner,
                status=run.status,
                priority=run.priority,
                trigger=run.trigger,
                generation=run.generation,
                scheduled_at=run.scheduled_at,
                notify=run.notify,
            )
            return True

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        return self.runs.get((job_id, run_id))

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        mine = sorted((r for (j, _), r in self.runs.items() if j == job_id), key=lambda r: r.id)
        return mine[::-1][:limit]

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        with self._lock:
            kept = self.runs.get((run.job_id, run.id))
            if kept is None or kept.status not in set(only_from):
                return False
            attempts = [*kept.attempts, attempt] if attempt is not None else kept.attempts
            self.runs[(run.job_id, run.id)] = kept.model_copy(
                update={
                    "status": status,
                    "finished_at": now,
                    "reason": reason,
                    "attempts": attempts,
                }
            )
            return True

    def delete_pending_run(self, job_id: str, run_id: str) -> bool:
        with self._lock:
            kept = self.runs.get((job_id, run_id))
            if kept is None or kept.status is not RunStatus.SCHEDULED:
                return False
            del self.runs[(job_id, run_id)]
            return True

    def note_notification(self, job_id: str, run_id: str, channel: str, outcome: str) -> None:
        with self._lock:
            kept = self.runs.get((job_id, run_id))
            if kept is not None:
                notes = {**kept.notifications, channel: outcome}
                self.runs[(job_id, run_id)] = kept.model_copy(update={"notifications": notes})

    def update_run(self, job_id: str, run_id: str, **changes: object) -> None:
        """What the run state machine writes (MarkRunning, MarkSucceeded, ...): for tests
        that play its part."""
        with self._lock:
            kept = self.runs[(job_id, run_id)]
            self.runs[(job_id, run_id)] = kept.model_copy(update=changes)

    # --- schedule ---------------------------------------------------------------------------

    def put_occurrences(
        self,
        occurrences: Iterable[Occurrence],
        shards: int,
        now: datetime,
        pack: str | None = None,
    ) -> None:
        with self._lock:
            for o in occurrences:
                bucket = ids.bucket(o.scheduled_at, ids.shard_of(o.job_id, shards))
                due = f"{o.scheduled_at.isoformat()}#{o.run_id}"
                self.schedule.setdefault(bucket, {})[due] = o

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        items = self.schedule.get(ids.bucket(minute, shard), {})
        return [items[due] for due in sorted(items)]

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        return {s: self.marks.get(s, {}).get("minute") for s in range(shards)}

    def opened_through(self, shard: int) -> datetime | None:
        marks = self.marks.get(shard, {})
        return max(marks.values()) if marks else None

    def open_minute(self, shard: int, minute: datetime) -> None:
        self._advance(shard, "opened", minute)

    def close_minute(self, shard: int, minute: datetime) -> None:
        self._advance(shard, "minute", minute)

    def reopen_minute(self, shard: int, minute: datetime) -> None:
        with self._lock:
            marks = self.marks.setdefault(shard, {})
            earlier = ids.minute_of(minute) - timedelta(minutes=1)
            if "minute" in marks and marks["minute"] > earlier:
                marks["minute"] = earlier

    def _advance(self, shard: int, mark: str, minute: datetime) -> None:
        with self._lock:
            marks = self.marks.setdefault(shard, {})
            minute = ids.minute_of(minute)
            if mark not in marks or marks[mark] < minute:
                marks[mark] = minute
