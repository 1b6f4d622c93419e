"""The UsageStore port in memory."""

from __future__ import annotations

from dataclasses import replace

from chronoq.domain.limits import Usage
from chronoq.fakes.store._tables import FakeTables


class FakeUsage(FakeTables):
    def get_usage(self, owner: str) -> Usage:
        return self.usage.get(owner, Usage())

    def reserve_reruns(self, owner: str, runs: int, usage: Usage) -> bool:
        with self._lock:
            kept = self.usage.get(owner, Usage())
            if kept.version != usage.version:
                return False
            self.usage[owner] = replace(kept, reruns=kept.reruns + runs, version=kept.version + 1)
            return True

    def release_reruns(self, owner: str, runs: int) -> None:
        with self._lock:
            kept = self.usage.get(owner, Usage())
            self.usage[owner] = replace(kept, reruns=kept.reruns - runs)

    def release_backfill(self, owner: str, job_id: str, backfill_id: str) -> None:
        with self._lock:
            self.usage[owner] = self.usage.get(owner, Usage()).left(job_id, backfill_id)
