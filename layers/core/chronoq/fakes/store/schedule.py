"""The ScheduleStore port in memory: occurrences by bucket, and each shard's checkpoint."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from chronoq.domain import ids
from chronoq.domain.runs import Occurrence
from chronoq.domain.silence import Deadline
from chronoq.fakes.store._tables import FakeTables
from chronoq.usecases.ports import SchedulePage


class FakeSchedule(FakeTables):
    def put_occurrences(
        self,
        occurrences: Iterable[Occurrence],
        shards: int,
        now: datetime,
        pack: str | None = None,
    ) -> None:
        with self._lock:
            for o in occurrences:
                o = o.model_copy(update={"owner": ""}) if o.owner else o  # (not kept)
                bucket = ids.bucket(o.starts_at, ids.shard_of(o.job_id, shards))
                due = f"{o.starts_at.isoformat()}#{o.run_id}"
                self.schedule.setdefault(bucket, {})[due] = o

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        """Every occurrence due in ``minute`` on ``shard``, by due time."""
        items = self.schedule.get(ids.bucket(minute, shard), {})
        return [items[due] for due in sorted(items)]

    def occurrence_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> tuple[list[Occurrence], str | None]:
        page = self.schedule_page(minute, shard, after, limit)
        return page.occurrences, page.after

    def schedule_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> SchedulePage:
        bucket = ids.bucket(minute, shard)
        items: dict[str, Occurrence | Deadline] = {
            **self.schedule.get(bucket, {}),
            **self.deadlines.get(bucket, {}),
        }
        keys = [due for due in sorted(items) if after is None or due > after][:limit]
        found = [items[due] for due in keys]
        return SchedulePage(
            [o for o in found if isinstance(o, Occurrence)],
            [d for d in found if isinstance(d, Deadline)],
            keys[-1] if len(keys) == limit else None,
        )

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
