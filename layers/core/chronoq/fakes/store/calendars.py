"""The CalendarStore port in memory: each owner's calendars and the jobs using each."""

from __future__ import annotations

from chronoq.domain.calendars import CalendarMeta
from chronoq.fakes.store._tables import FakeTables


class FakeCalendars(FakeTables):
    def get_calendars(self, owner: str, consistent: bool = False) -> dict[str, CalendarMeta]:
        with self._lock:
            return dict(sorted(self.calendars.get(owner, {}).items()))

    def put_calendar(self, owner: str, meta: CalendarMeta, limit: int) -> bool:
        with self._lock:
            kept = self.calendars.setdefault(owner, {})
            old = kept.get(meta.name)
            if old is None:
                if meta.version != 1 or len(kept) >= limit:
                    return False
            elif old.version != meta.version - 1:
                return False
            kept[meta.name] = meta
            return True

    def remove_calendar(self, owner: str, name: str) -> list[str]:
        with self._lock:
            users = sorted(self.calendar_uses.get((owner, name), set()))
            if users:
                return users
            self.calendars.get(owner, {}).pop(name, None)
            return []

    def use_calendar(self, owner: str, job_id: str, name: str) -> bool:
        with self._lock:
            if name not in self.calendars.get(owner, {}):
                return False
            self.calendar_uses.setdefault((owner, name), set()).add(job_id)
            return True

    def unuse_calendar(self, owner: str, job_id: str, name: str) -> None:
        with self._lock:
            users = self.calendar_uses.get((owner, name), set())
            users.discard(job_id)
            if not users:
                self.calendar_uses.pop((owner, name), None)

    def calendar_users(self, owner: str, name: str) -> list[str]:
        with self._lock:
            return sorted(self.calendar_uses.get((owner, name), set()))
