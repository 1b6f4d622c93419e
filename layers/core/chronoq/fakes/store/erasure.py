"""The ErasureStore port in memory."""

from __future__ import annotations

from chronoq.domain import flow, inflight
from chronoq.fakes.store._tables import FakeTables


class FakeErasure(FakeTables):
    def erase_job_partition(self, job_id: str) -> int:
        with self._lock:
            runs = [key for key in self.runs if key[0] == job_id]
            backfills = [key for key in self.backfills if key[0] == job_id]
            for key in runs:
                del self.runs[key]
            for key in backfills:
                del self.backfills[key]
            for key in [k for k in self.parked if k[0] == job_id]:
                del self.parked[key]
            return len(runs) + len(backfills)

    def erase_owner_items(self, owner: str) -> int:
        with self._lock:
            found = [
                self.job_counts.pop(owner, None) is not None,
                self.usage.pop(owner, None) is not None,
                self.secrets.pop(owner, None) is not None,
                self.calendars.pop(owner, None) is not None,
                self.in_flight.pop(inflight.item_key(owner), None) is not None,
                self.flows.pop(flow.owner_item_key(owner), None) is not None,
                self.graphs.pop(owner, None) is not None,  # (its pipeline graph)
            ]
            return sum(found)
