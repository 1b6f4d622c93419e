"""The BackfillStore port in memory."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.limits import Usage
from chronoq.fakes.store._tables import FakeTables, page
from chronoq.usecases.ports import Page, Position, Tally, TallyRefused


class FakeBackfills(FakeTables):
    def put_backfill(self, backfill: Backfill) -> None:
        with self._lock:
            self.backfills[(backfill.job_id, backfill.id)] = backfill

    def get_backfill(self, job_id: str, backfill_id: str) -> Backfill | None:
        return self.backfills.get((job_id, backfill_id))

    def get_backfills(self, keys: Iterable[tuple[str, str]]) -> list[Backfill]:
        found = (self.backfills.get(key) for key in sorted(set(keys)))
        return [b for b in found if b is not None]

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

    def end_backfill(self, backfill: Backfill, state: BackfillState, now: datetime) -> bool:
        with self._lock:
            key = (backfill.job_id, backfill.id)
            kept = self.backfills.get(key)
            if kept is None or kept.state is not BackfillState.RUNNING:
                return False
            self.backfills[key] = kept.model_copy(update={"state": state, "finished_at": now})
            if kept.counted:
                self._leave(kept)
            return True

    def start_backfill(self, backfill: Backfill, usage: Usage) -> bool:
        with self._lock:
            kept = self.usage.get(backfill.owner, Usage())
            if kept.version != usage.version or (backfill.job_id, backfill.id) in self.backfills:
                return False
            entered = kept.entered(backfill.job_id, backfill.id)
            self.usage[backfill.owner] = replace(entered, version=kept.version + 1)
            self.backfills[(backfill.job_id, backfill.id)] = backfill
            return True

    def count_ends(self, tally: Tally) -> TallyRefused | None:
        with self._lock:
            counted = frozenset(
                end.run_id
                for end in tally.ends
                if (end.job_id, end.run_id) not in self.runs.uncounted
                or self.runs[(end.job_id, end.run_id)].status is not end.status
            )
            read = tally.backfill
            kept = self.backfills.get((read.job_id, read.id)) if read is not None else None
            moved = read is not None and (
                kept is None or (kept.state, kept.ended) != (read.state, read.ended)
            )
            if counted or moved:
                return TallyRefused(counted, moved)
            for end in tally.ends:
                self.runs.uncounted.discard((end.job_id, end.run_id))
            if kept is not None:
                runs = Counter(kept.runs) + Counter(end.status.value for end in tally.ends)
                changes: dict[str, object] = {
                    "ended": (kept.ended or 0) + len(tally.ends),
                    "runs": dict(sorted(runs.items())),
                }
                if tally.completed_at is not None:
                    changes.update(state=BackfillState.COMPLETED, finished_at=tally.completed_at)
                    self._leave(kept)
                self.backfills[(kept.job_id, kept.id)] = kept.model_copy(update=changes)
            if tally.reruns:
                usage = self.usage.get(tally.owner, Usage())
                self.usage[tally.owner] = replace(usage, reruns=usage.reruns - tally.reruns)
            return None

    def _leave(self, backfill: Backfill) -> None:
        """Take a backfill out of its owner's usage."""
        usage = self.usage.get(backfill.owner, Usage())
        self.usage[backfill.owner] = usage.left(backfill.job_id, backfill.id)
