"""Jobs' audit trails in memory (the AuditTrail port; chronoq.aws.audit on DynamoDB)."""

from __future__ import annotations

import threading

from chronoq.domain.audit import AuditEntry
from chronoq.fakes.store._tables import page
from chronoq.usecases.ports import EntryExists, Page, Position


class FakeAuditTrail:
    def __init__(self) -> None:
        #: (job id, entry key) -> entry
        self.entries: dict[tuple[str, str], AuditEntry] = {}
        self._lock = threading.Lock()

    def append(self, entry: AuditEntry) -> None:
        with self._lock:
            key = (entry.job_id, entry.key)
            if key in self.entries:
                raise EntryExists(f"audit entry {entry.key} of job {entry.job_id}")
            self.entries[key] = entry

    def page(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[AuditEntry]:
        with self._lock:
            newest_first = sorted(
                (((key,), entry) for (job, key), entry in self.entries.items() if job == job_id),
                key=lambda found: found[0],
                reverse=True,
            )
        # (every entry of a job carries its owner: another owner's job has none of theirs)
        newest_first = [(p, e) for p, e in newest_first if e.owner == owner]
        candidates = [(p, e) for p, e in newest_first if after is None or p < after]
        return page(candidates, limit, lambda _: True)

    def of(self, job_id: str) -> list[AuditEntry]:
        """The job's entries, oldest first (what a test reads)."""
        with self._lock:
            return [e for (job, _), e in sorted(self.entries.items()) if job == job_id]

    def job_ids(self, owner: str) -> list[str]:
        """The ids of the jobs the owner's entries name (what erasing an owner reads)."""
        with self._lock:
            return sorted({job for (job, _), e in self.entries.items() if e.owner == owner})

    def erase(self, owner: str) -> int:
        """Delete the owner's entries (what the eraser may do, and nothing else)."""
        with self._lock:
            found = [key for key, e in self.entries.items() if e.owner == owner]
            for key in found:
                del self.entries[key]
            return len(found)
