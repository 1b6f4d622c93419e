"""The three tables in memory, with the conditional writes of the DynamoDB adapter."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Attempt, Occurrence, Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Claim, KeyRecord, Page, Position, RunFilter

T = TypeVar("T")


def _page(
    candidates: Sequence[tuple[Position, T]], limit: int, keep: Callable[[T], bool]
) -> Page[T]:
    """A store's paging over items in listing order, each with its position: up to
    ``limit`` kept ones, looking at PAGE_SCAN_LIMIT items at most."""
    found: list[T] = []
    last: Position | None = None
    for looked, (position, item) in enumerate(candidates):
        if looked == r.PAGE_SCAN_LIMIT:
            return Page(found, last)
        if keep(item):
            if len(found) == limit:
                return Page(found, last)
            found.append(item)
        last = position
    return Page(found, None)


@dataclass
class FakeStore:
    jobs: dict[str, Job] = field(default_factory=dict)
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    #: bucket -> due -> occurrence
    schedule: dict[str, dict[str, Occurrence]] = field(default_factory=dict)
    #: shard -> {"opened": minute, "minute": minute}
    marks: dict[int, dict[str, datetime]] = field(default_factory=dict)
    #: shard -> (minute being dispatched, key of its last item dispatched)
    within: dict[int, tuple[datetime, str]] = field(default_factory=dict)
    #: run id -> when it was last claimed
    claims: dict[str, datetime] = field(default_factory=dict)
    #: idempotency key -> (record, when it expires)
    keys: dict[str, tuple[KeyRecord, datetime]] = field(default_factory=dict)
    #: owner -> how many jobs they have
    job_counts: dict[str, int] = field(default_factory=dict)
    #: (owner, job name) -> (the job holding it, when it was claimed)
    names: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
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
        return _page(candidates, limit, keep or (lambda _: True))

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

    # --- job names: unique per owner (see DynamoStore.claim_name) ---------------------------

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
                queued_at=run.queued_at,
                notify=run.notify,
            )
            return True

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        return self.runs.get((job_id, run_id))

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        mine = sorted((r for (j, _), r in self.runs.items() if j == job_id), key=lambda r: r.id)
        return mine[::-1][:limit]

    def page_runs(
        self,
        job_id: str,
        owner: str,
        limit: int,
        after: Position | None = None,
        where: RunFilter | None = None,
    ) -> Page[Run]:
        newest_first = sorted(
            (run for (j, _), run in self.runs.items() if j == job_id and run.owner == owner),
            key=lambda run: run.id,
            reverse=True,
        )
        candidates = [
            ((run.id,), run) for run in newest_first if after is None or (run.id,) < after
        ]
        return _page(candidates, limit, (where or RunFilter()).matches)

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

    # --- idempotency keys -------------------------------------------------------------------

    def claim_key(
        self, key: str, fingerprint: str, now: datetime, stale: datetime
    ) -> KeyRecord | None:
        with self._lock:
            kept = self.keys.get(key)
            if kept is not None:
                record, expires = kept
                lapsed = record.answer is None and record.claimed_at < stale
                if expires > now and not (lapsed and record.fingerprint == fingerprint):
                    return record
            expires = now + timedelta(seconds=r.IDEMPOTENCY_KEY_SECONDS)
            self.keys[key] = (KeyRecord(fingerprint, None, now), expires)
            return None

    def answer_key(self, key: str, answer: str) -> None:
        with self._lock:
            record, expires = self.keys[key]
            self.keys[key] = (KeyRecord(record.fingerprint, answer, record.claimed_at), expires)

    def release_key(self, key: str) -> None:
        with self._lock:
            self.keys.pop(key, None)

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
        """Every occurrence due in ``minute`` on ``shard``, by due time."""
        items = self.schedule.get(ids.bucket(minute, shard), {})
        return [items[due] for due in sorted(items)]

    def occurrence_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> tuple[list[Occurrence], str | None]:
        items = self.schedule.get(ids.bucket(minute, shard), {})
        keys = [due for due in sorted(items) if after is None or due > after][:limit]
        return [items[due] for due in keys], (keys[-1] if len(keys) == limit else None)

    def dispatch_marks(
        self, shards: int
    ) -> tuple[dict[int, datetime | None], dict[int, tuple[datetime, str]]]:
        return self.checkpoints(shards), self.progress(shards)

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        return {s: self.marks.get(s, {}).get("minute") for s in range(shards)}

    def progress(self, shards: int) -> dict[int, tuple[datetime, str]]:
        return {s: self.within[s] for s in range(shards) if s in self.within}

    def advance_within(self, shard: int, minute: datetime, after: str) -> None:
        with self._lock:
            self.within[shard] = (ids.minute_of(minute), after)

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
            # (what was dispatched of that minute or a later one is read again too)
            if shard in self.within and self.within[shard][0] > earlier:
                del self.within[shard]

    def _advance(self, shard: int, mark: str, minute: datetime) -> None:
        with self._lock:
            marks = self.marks.setdefault(shard, {})
            minute = ids.minute_of(minute)
            if mark not in marks or marks[mark] < minute:
                marks[mark] = minute
