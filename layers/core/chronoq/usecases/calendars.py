"""Business calendars: what the API does with them (put, list, show, delete, re-plan the jobs
that use one), and how a job's schedule comes to carry a copy of its calendar's rules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chronoq.domain import calendars
from chronoq.domain import limits as lim
from chronoq.domain.calendars import CalendarMeta, CalendarRules
from chronoq.domain.errors import (
    CalendarInUse,
    Conflict,
    InvalidRequest,
    LimitExceeded,
    NotFound,
)
from chronoq.domain.jobs import Job, JobState
from chronoq.domain.schedules import AfterSchedule, AnySchedule, AtSchedule
from chronoq.usecases.ports import CalendarStore, Clock, JobStore

#: The field a job's calendar is named in.
FIELD = "schedule.calendar.name"


def check_name(name: str) -> None:
    if not calendars.NAME.fullmatch(name) or len(name) > lim.MAX_CALENDAR_NAME_LENGTH:
        raise InvalidRequest(
            "name",
            "must be letters, digits, _ and -, starting with a letter or digit, at most"
            f" {lim.MAX_CALENDAR_NAME_LENGTH} characters",
        )


def calendar_of(schedule: AnySchedule) -> str | None:
    """The name of the calendar ``schedule`` names, if any."""
    if isinstance(schedule, AtSchedule | AfterSchedule) or schedule.calendar is None:
        return None
    return schedule.calendar.name


def with_rules(schedule: AnySchedule, meta: CalendarMeta) -> AnySchedule:
    """``schedule`` carrying a copy of the calendar ``meta``'s rules (and its version)."""
    if isinstance(schedule, AtSchedule | AfterSchedule) or schedule.calendar is None:
        return schedule
    use = schedule.calendar.model_copy(update={"rules": meta.rules, "version": meta.version})
    return schedule.model_copy(update={"calendar": use})


def resolve(store: CalendarStore, owner: str, schedule: AnySchedule) -> AnySchedule:
    """``schedule`` with its calendar's rules copied in (one read; none without a calendar),
    or 422 naming ``schedule.calendar.name`` if the owner has no calendar of that name."""
    name = calendar_of(schedule)
    if name is None:
        return schedule
    meta = store.get_calendars(owner, consistent=True).get(name)
    if meta is None:
        raise unknown(name)
    return with_rules(schedule, meta)


def unknown(name: str) -> InvalidRequest:
    return InvalidRequest(
        FIELD, f"names calendar {name!r}, which you do not have: PUT /calendars/{name} first"
    )


#: Re-plans one job on the calendar's new rules (JobOperations.recalendar): the job as
#: stored afterwards.
Replan = Callable[[Job, CalendarMeta], Job]


@dataclass
class CalendarOperations:
    store: CalendarStore
    jobs: JobStore
    clock: Clock
    #: Re-plans a job on a changed calendar (the rules of a schedule change).
    replan_job: Replan
    max_calendars_per_owner: int = lim.DEFAULT_MAX_CALENDARS_PER_OWNER
    page: int = lim.CALENDAR_REPLAN_PAGE

    def put(
        self, owner: str, name: str, rules: CalendarRules
    ) -> tuple[CalendarMeta, bool, dict[str, Any]]:
        """Keep the calendar (a new one, or its next version); then re-plan the first page
        of the jobs that use it. The calendar as kept, whether it is new, and the re-plan's
        report (see replan)."""
        check_name(name)
        rules = CalendarRules.model_validate(rules.model_dump())
        for _ in range(3):  # (a concurrent change: read again and go on from it)
            kept = self.store.get_calendars(owner, consistent=True)
            old = kept.get(name)
            if old is None and len(kept) >= self.max_calendars_per_owner:
                raise self._full()
            now = self.clock()
            meta = CalendarMeta(
                name=name,
                rules=rules,
                version=old.version + 1 if old else 1,
                created_at=old.created_at if old else now,
                updated_at=now,
            )
            if self.store.put_calendar(owner, meta, self.max_calendars_per_owner):
                return meta, old is None, self._replan(owner, meta, None)
        raise Conflict(f"calendar {name} was changed meanwhile; retry")

    def _full(self) -> LimitExceeded:
        return LimitExceeded(
            "max_calendars_per_owner",
            f"you have {self.max_calendars_per_owner} calendars, the most this deployment allows"
            " (max_calendars_per_owner): delete one first",
            field="name",
        )

    def all(self, owner: str) -> list[CalendarMeta]:
        return list(self.store.get_calendars(owner, consistent=True).values())

    def get(self, owner: str, name: str) -> CalendarMeta:
        check_name(name)
        meta = self.store.get_calendars(owner, consistent=True).get(name)
        if meta is None:
            raise NotFound(f"calendar {name} not found")
        return meta

    def users(self, owner: str, name: str) -> list[str]:
        """The ids of the jobs using the calendar (from its index)."""
        self.get(owner, name)
        return self.store.calendar_users(owner, name)

    def replan(self, owner: str, name: str, next_token: str | None) -> dict[str, Any]:
        """Re-plan the next page of the jobs using the calendar (after ``next_token``)."""
        return self._replan(owner, self.get(owner, name), next_token)

    def _replan(self, owner: str, meta: CalendarMeta, after: str | None) -> dict[str, Any]:
        """Re-plan up to a page of the calendar's users (by id, after ``after``) whose copy
        is older than ``meta``, as a change of their schedule would: ``replanned`` (their
        ids), ``failed`` (id -> why: changed meanwhile, or its new schedule refused) and
        ``next_token`` (None: every user has been gone through)."""
        users = [u for u in self.store.calendar_users(owner, meta.name) if not after or u > after]
        page, rest = users[: self.page], users[self.page :]
        found = self.jobs.get_jobs(page, consistent=True) if page else {}
        replanned: list[str] = []
        failed: dict[str, str] = {}
        for job_id in page:
            job = found.get(job_id)
            if job is None or job.owner != owner or calendar_of(job.schedule) != meta.name:
                continue  # (deleted, or changed to another calendar meanwhile)
            if job.as_of(self.clock()).state is JobState.COMPLETED:
                continue  # (no run left to plan)
            use = getattr(job.schedule, "calendar", None)
            if use is not None and use.version is not None and use.version >= meta.version:
                continue  # (planned on this version, or a later one, already)
            try:
                self.replan_job(job, meta)
                replanned.append(job_id)
            except (Conflict, InvalidRequest) as error:
                failed[job_id] = str(error)
        return {
            "replanned": replanned,
            "failed": failed,
            "next_token": page[-1] if rest else None,
        }

    def delete(self, owner: str, name: str) -> None:
        """Forget the calendar, unless a job uses it (409, naming the jobs)."""
        self.get(owner, name)
        users = self.store.remove_calendar(owner, name)
        if users:
            # (a job deleted while letting go of its calendar is not one)
            jobs = self.jobs.get_jobs(users, consistent=True)
            gone = [
                u
                for u in users
                if u not in jobs or jobs[u].owner != owner or calendar_of(jobs[u].schedule) != name
            ]
            for job_id in gone:
                self.store.unuse_calendar(owner, job_id, name)
            users = [u for u in users if u not in gone] or self.store.remove_calendar(owner, name)
        if users:
            names = ", ".join(f"{jobs[u].name} ({u})" if u in jobs else u for u in users[:10])
            more = f" and {len(users) - 10} more" if len(users) > 10 else ""
            raise CalendarInUse(
                f"calendar {name} is used by {len(users)} job(s): {names}{more}; change them first",
                users,
            )
