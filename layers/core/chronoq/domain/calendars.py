"""Business calendars: named sets of excluded dates of one owner, in a time zone, with the
weekdays that are business days (Monday to Friday unless the calendar says otherwise).

A recurring schedule may name one (``"calendar": {"name": ..., "on_excluded": ...}``). A fire
time is excluded when its local date in the calendar's time zone is excluded or not a
business day. An excluded fire time is dropped (``skip``) or moved to the next (or previous)
business day, at the same local time of day in the calendar's zone (a time that day lacks,
skipped by daylight saving, fires at the jump; a repeated one at its first occurrence).
Fire times moved onto the same instant, or onto one the schedule fires at anyway, make one
run.

A job carries a copy of its calendar's rules (``rules``), so the dispatcher reads nothing
more per run; changing the calendar re-plans the jobs that use it (usecases.calendars).
The arithmetic lives with the schedules' (chronoq.domain.schedules).
"""

from __future__ import annotations

import functools
import re
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from chronoq.domain import limits as lim
from chronoq.domain.base import Model

#: A calendar's name: letters, digits, ``_`` and ``-``, starting with a letter or digit.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
NAME = re.compile(NAME_PATTERN)

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DEFAULT_BUSINESS_DAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri")


class OnExcluded(StrEnum):
    """What becomes of a fire time on an excluded date."""

    SKIP = "skip"
    NEXT_BUSINESS_DAY = "next_business_day"
    PREVIOUS_BUSINESS_DAY = "previous_business_day"


class CalendarRules(Model):
    """What a calendar excludes: ``dates``, inclusive ``ranges`` of dates, and every date
    whose weekday is not in ``business_days``, all local dates in ``timezone``."""

    dates: tuple[date, ...] = Field(default=(), max_length=lim.MAX_CALENDAR_ENTRIES)
    ranges: tuple[tuple[date, date], ...] = Field(default=(), max_length=lim.MAX_CALENDAR_ENTRIES)
    timezone: str = Field(default="UTC", max_length=64)
    business_days: tuple[Weekday, ...] = Field(default=DEFAULT_BUSINESS_DAYS, min_length=1)

    @field_validator("dates")
    @classmethod
    def _sorted_dates(cls, value: tuple[date, ...]) -> tuple[date, ...]:
        return tuple(sorted(set(value)))

    @field_validator("ranges")
    @classmethod
    def _valid_ranges(cls, value: tuple[tuple[date, date], ...]) -> tuple[tuple[date, date], ...]:
        for first, last in value:
            if last < first:
                raise ValueError(f"{first}..{last}: a range ends on or after its first date")
            if (last - first).days >= lim.MAX_CALENDAR_RANGE_DAYS:
                raise ValueError(
                    f"{first}..{last}: a range spans at most {lim.MAX_CALENDAR_RANGE_DAYS} days"
                )
        return tuple(sorted(set(value)))

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        if value in ("localtime", "posixrules", "Factory") or value.startswith(
            ("posix/", "right/")
        ):
            raise ValueError(f"is not an IANA time zone: {value!r}")
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"is not a known IANA time zone: {value!r}") from None
        return value

    @field_validator("business_days")
    @classmethod
    def _sorted_days(cls, value: tuple[Weekday, ...]) -> tuple[Weekday, ...]:
        return tuple(d for d in WEEKDAYS if d in value)

    @model_validator(mode="after")
    def _bounded(self) -> CalendarRules:
        if len(self.dates) + len(self.ranges) > lim.MAX_CALENDAR_ENTRIES:
            raise ValueError(f"dates and ranges: at most {lim.MAX_CALENDAR_ENTRIES} in all")
        return self

    def is_business_day(self, day: date) -> bool:
        return _is_business_day(self, day.toordinal())

    def business_day(self, day: date, step: int) -> date | None:
        """The first business day after (``step`` 1) or before (-1) ``day``, within
        CALENDAR_HORIZON_DAYS; None if there is none."""
        for i in range(1, lim.CALENDAR_HORIZON_DAYS + 1):
            candidate = day + timedelta(days=step * i)
            if self.is_business_day(candidate):
                return candidate
        return None


@functools.lru_cache(maxsize=256)
def _excluded(rules: CalendarRules) -> frozenset[int]:
    """The excluded dates of ``rules`` (ordinals), once per calendar copy per process."""
    days = {d.toordinal() for d in rules.dates}
    for first, last in rules.ranges:
        days.update(range(first.toordinal(), last.toordinal() + 1))
    return frozenset(days)


def _is_business_day(rules: CalendarRules, ordinal: int) -> bool:
    weekday = WEEKDAYS[(ordinal - 1) % 7]  # (ordinal 1, 0001-01-01, is a Monday)
    return weekday in rules.business_days and ordinal not in _excluded(rules)


class Calendar(CalendarRules):
    """The body of ``PUT /calendars/{name}``."""


class CalendarMeta(Model):
    """A calendar as kept: its name, rules, version (moved on by every change) and times."""

    name: str
    rules: CalendarRules
    version: int = Field(ge=1)
    created_at: datetime
    updated_at: datetime

    def shown(self) -> dict[str, object]:
        rules = self.rules.model_dump(mode="json")
        return {
            "name": self.name,
            **rules,
            "version": self.version,
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": self.updated_at.isoformat().replace("+00:00", "Z"),
        }


class CalendarUse(Model):
    """A recurring schedule's calendar: which one, and what becomes of excluded fire times.
    ``rules`` is the copy of the calendar the job plans with: chronoq fills it in from the
    named calendar when the job is created or changed and when the calendar changes (what a
    request gives there is replaced)."""

    name: str = Field(min_length=1, max_length=lim.MAX_CALENDAR_NAME_LENGTH, pattern=NAME_PATTERN)
    on_excluded: OnExcluded = OnExcluded.SKIP
    rules: CalendarRules | None = None
    #: The calendar's version the copy was made of.
    version: int | None = None

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.rules.timezone if self.rules else "UTC")
