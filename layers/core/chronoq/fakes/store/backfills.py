"""The BackfillStore port in memory."""

from __future__ import annotations

from datetime import datetime

from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.fakes.store._tables import FakeTables, page
from chronoq.usecases.ports import Page, Position


class FakeBackfills(FakeTables):
    def put_backfill(self, backfill: Backfill) -> None:
        with self._lock:
            self.backfills[(backfill.job_id, backfill.id)] = backfill

    def get_backfill(self, job_id: str, backfill_id: str) -> Backfill | None:
        return self.backfills.get((job_id, backfill_id))

    def page_backfills(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[Backfill]:
        newest_first = sorted(
            (b for (j, _), b in self.backfills.items() if j == job_id and b.owner == owner),
            key=lambda b: b.id,
            reverse=True,
        )
        candidates = [((b.id,), b) for b in newest_first if after is None or (b.id,) < after]
        return page(candidates, limit, lambda _: True)

    def end_backfill(
        self, job_id: str, backfill_id: str, state: BackfillState, now: datetime
    ) -> bool:
        with self._lock:
            kept = self.backfills.get((job_id, backfill_id))
            if kept is None or kept.state is not BackfillState.RUNNING:
                return False
            self.backfills[(job_id, backfill_id)] = kept.model_copy(
                update={"state": state, "finished_at": now}
            )
            return True
