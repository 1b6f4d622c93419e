"""Erasing an owner: every piece of one owner's data taken out of chronoq, for an operator
answering a request to be forgotten (docs/api/audit.md).

What goes, in this order: the runs still under way (cancelled: an execution left running would
write its run's record again), the owner's jobs (as a delete does: quota, names, secrets' uses,
backfills), every item of those jobs' partitions of the runs table (runs, backfills), the jobs'
objects in the deployment's bucket (outputs and logs), the owner's secrets (names and values),
and the owner's own items (job count, usage, runs in flight). Runs of jobs deleted earlier are
found through ``known_jobs``: the job ids other stores know of (the audit trail's entries,
which outlive their job as runs do). What erases other stores' data (the audit trail, the
archive) is given as ``extra`` steps, each answering how much it took out.

The erasure itself is recorded in the audit trail (``trail``), without what was erased: an
entry of its own, under a digest of the owner, with who asked and the counts (``Erased``).
Idempotent: erasing again finds nothing and takes nothing out (and is recorded again)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from chronoq import resources as r
from chronoq.domain import archive as domain_archive
from chronoq.domain.audit import Action, AuditEntry, Source
from chronoq.domain.runs import RunStatus
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.jobs import JobRemovalStore, remove_job
from chronoq.usecases.ports import (
    Archive,
    Artifacts,
    AuditTrail,
    Clock,
    ErasureStore,
    RunFilter,
    RunStore,
    SecretValues,
)

#: Runs read at a time when looking for those still under way.
PAGE = 100
#: Archive objects listed and deleted at a time (S3's DeleteObjects takes 1,000).
ARCHIVE_PAGE = 1000
UNDER_WAY = frozenset({RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING})


class EraserStore(JobRemovalStore, ErasureStore, RunStore, Protocol):
    """The tables an erasure reads and deletes from."""


@dataclass(frozen=True)
class Erased:
    """What an erasure took out, said without the owner (a digest of it)."""

    owner_digest: str
    at: datetime
    counts: Mapping[str, int]


def record_of(erased: Erased, by: str, request_id: str) -> AuditEntry:
    """The audit entry of an erasure: under the owner's digest (as job and as owner), who
    asked, and how much was taken out; nothing that was erased."""
    return AuditEntry(
        job_id=f"erasure#{erased.owner_digest}",
        owner=f"erased#{erased.owner_digest}",
        at=erased.at,
        request_id=request_id,
        action=Action.ERASE,
        by=by,
        source=Source.CLI,
        detail=dict(erased.counts),
    )


def erase_archive(archive: Archive, owner: str) -> int:
    """Delete every object of the owner's archive (its ``owner=`` prefix): how many."""
    prefix = domain_archive.owner_prefix(r.ARCHIVE_PREFIX, owner)
    erased = 0
    while True:  # (each page deleted: the next page starts again from the first left)
        page = archive.list(prefix, ARCHIVE_PAGE)
        keys = [o.key for o in page.items]
        if not keys:
            return erased
        archive.delete(keys)
        erased += len(keys)


def owner_digest(owner: str) -> str:
    """How an erasure's record names the owner it erased (not the owner itself)."""
    return hashlib.sha256(f"erased\0{owner}".encode()).hexdigest()[:32]


@dataclass
class Eraser:
    store: EraserStore
    secret_values: SecretValues
    artifacts: Artifacts
    canceller: Canceller
    clock: Clock
    #: Other stores' erasures: name -> (owner -> how much it took out).
    extra: Mapping[str, Callable[[str], int]] = field(default_factory=dict)
    #: Job ids of the owner that other stores know of (jobs deleted before, whose runs and
    #: objects may still be kept).
    known_jobs: Callable[[str], Iterable[str]] = lambda owner: ()
    #: Where the erasure is recorded (None: it is not).
    trail: AuditTrail | None = None

    def erase(
        self,
        owner: str,
        by: str = "operator",
        request_id: str = "erasure",
        reason: str = "its owner's data was erased",
    ) -> Erased:
        now = self.clock()
        jobs = self.store.list_jobs(owner)
        cancelled = 0
        for job in jobs:
            cancelled += self._cancel_under_way(job.id, owner, reason)
            remove_job(self.store, job, now)
        job_ids = sorted({job.id for job in jobs} | set(self.known_jobs(owner)))
        counts = {
            "jobs": len(jobs),
            "runs_cancelled": cancelled,
            "run_items": sum(self.store.erase_job_partition(j) for j in job_ids),
            "objects": sum(self.artifacts.erase_job_objects(j) for j in job_ids),
            "secrets": self._erase_secrets(owner),
            "owner_items": self.store.erase_owner_items(owner),
        }
        for name, step in self.extra.items():
            counts[name] = step(owner)
        erased = Erased(owner_digest(owner), now, counts)
        if self.trail is not None:
            self.trail.append(record_of(erased, by, request_id))
        return erased

    def _cancel_under_way(self, job_id: str, owner: str, reason: str) -> int:
        """Cancel the job's runs not ended yet (their executions stopped)."""
        cancelled = 0
        after = None
        while True:
            page = self.store.page_runs(job_id, owner, PAGE, after, RunFilter(statuses=UNDER_WAY))
            for run in page.items:
                self.canceller.cancel(job_id, run.id, reason)
                cancelled += 1
            after = page.after
            if after is None:
                return cancelled

    def _erase_secrets(self, owner: str) -> int:
        """The owner's secrets, values first (its jobs are gone: no job uses them)."""
        names = sorted(self.store.get_secrets(owner, consistent=True))
        for name in names:
            self.secret_values.delete_value(owner, name)
            self.store.remove_secret(owner, name)
        return len(names)
