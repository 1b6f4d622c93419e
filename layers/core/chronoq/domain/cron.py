"""chronoq's cron dialect: five fields parsed into the values each allows, and the first
matching wall-clock minute from a given one.

The dialect is Vixie/Debian cron's, with the extensions below (see the Schedules
page of the docs, docs/api/schedules.md):

- fields: minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-7 or
  SUN-SAT (0 and 7 are Sunday); names in any case;
- terms: ``*``, ``a``, ``a-b`` (``a`` <= ``b``: a range that wraps is refused), ``*/n``,
  ``a-b/n``, ``a/n`` (from ``a`` to the field's end), joined by commas; a step is 1 to the
  field's largest value;
- day-of-month also ``L`` (the month's last day) and ``LW`` (its last weekday, Monday to
  Friday); day-of-week also ``nL`` (the month's last weekday ``n``) and ``d#n`` (its ``n``-th
  weekday ``d``, 1 to 5);
- when day-of-month or day-of-week starts with ``*``, a day fires if it matches both; otherwise
  if it matches either.

Everything here works on naive wall-clock times: mapping them to instants in a time zone is
``schedules``' business.
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from datetime import datetime

MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

#: Dates repeat their days of the week every 400 years (146,097 days, exactly 20,871 weeks):
#: an expression that matches no minute within that many months from anywhere matches none.
_CYCLE_MONTHS = 400 * 12 + 1
#: Bits 0, 7, 14, 21 and 28: one weekday through a month, shifted to its first day.
_WEEKLY = sum(1 << (7 * week) for week in range(5))


class CronSyntaxError(ValueError):
    """An expression outside the dialect; the message names the field and the term."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()

    def value(self, text: str, term: str) -> int:
        """A number or name of this field."""
        upper = text.upper()
        if upper in self.names:
            return self.names.index(upper) + (1 if self.name == "month" else 0)
        if not (text.isascii() and text.isdigit()):
            raise self.error(term, "is not a number" + (" or a name" if self.names else ""))
        number = int(text)
        if not self.low <= number <= self.high:
            raise self.error(term, f"is out of range ({self.low}-{self.high})")
        return number

    def error(self, term: str, problem: str) -> CronSyntaxError:
        return CronSyntaxError(f"{self.name} {term!r} {problem}")


MINUTE = _Field("minute", 0, 59)
HOUR = _Field("hour", 0, 23)
DAY = _Field("day-of-month", 1, 31)
MONTH = _Field("month", 1, 12, MONTH_NAMES)
WEEKDAY = _Field("day-of-week", 0, 7, DAY_NAMES)


def _values(field: _Field, term: str) -> int:
    """The values of one plain term (no ``L``, ``W`` or ``#``) as a bit mask."""
    base, slash, step_text = term.partition("/")
    if slash:
        if not (step_text.isascii() and step_text.isdigit()):
            raise field.error(term, "has a step that is not a number")
        step = int(step_text)
        if not 1 <= step <= field.high:
            raise field.error(term, f"has a step out of range (1-{field.high})")
    else:
        step = 1
    if base == "*":
        first, last = field.low, field.high
    elif "-" in base:
        start, _, end = base.partition("-")
        first, last = field.value(start, term), field.value(end, term)
        if first > last:
            raise field.error(
                term, "is a reversed range (a range runs upwards; list both parts instead)"
            )
    else:
        first = field.value(base, term)
        last = field.high if slash else first
    mask = 0
    for value in range(first, last + 1, step):
        mask |= 1 << value
    return mask


def _refuse_extensions(field: _Field, term: str) -> None:
    """Name what a term that is not plain asks for, when the dialect does not have it."""
    upper = term.upper()
    if "?" in upper:
        raise field.error(term, "is not supported: '?' is not cron syntax, write '*'")
    if field is DAY and "W" in upper:
        raise field.error(term, "is not supported: of W, only LW (the last weekday) is")
    if field in (DAY, WEEKDAY) and "L" in upper:
        raise field.error(term, "is not supported (L, LW on day-of-month; nL on day-of-week)")


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the values each field allows, as bit masks (bit ``v`` set when
    value ``v`` is allowed)."""

    minutes: int
    hours: int
    days: int  # bits 1-31
    months: int  # bits 1-12
    weekdays: int  # bits 0-6, Sunday 0
    last_day: bool  # day-of-month L
    last_workday: bool  # day-of-month LW
    last_weekdays: int  # day-of-week nL: bits 0-6
    nth_weekdays: tuple[tuple[int, int], ...]  # day-of-week d#n: (d, n), Sunday 0
    either_day: bool  # neither day field starts with '*': a day matching either one fires

    def days_of(self, year: int, month: int) -> int:
        """The days of ``month`` that fire, as a bit mask (bits 1-31)."""
        return _days_of(self, year, month)

    def next_match(self, start: datetime) -> datetime | None:
        """The first wall-clock minute at or after ``start`` (naive, a whole minute) that
        the expression matches; None when there is none before the year 10000."""
        year, month, day, hour, minute = (
            start.year,
            start.month,
            start.day,
            start.hour,
            start.minute,
        )
        for _ in range(_CYCLE_MONTHS):
            if self.months >> month & 1:
                days = self.days_of(year, month) >> day
                while days:
                    skip = _lowest(days)
                    if skip:
                        day, hour, minute, days = day + skip, 0, 0, days >> skip
                    found = _next_in(self.hours, hour)
                    if found is not None:
                        at = _next_in(self.minutes, minute if found == hour else 0)
                        if at is not None:
                            return datetime(year, month, day, found, at)
                        found = _next_in(self.hours, found + 1)
                        if found is not None:
                            return datetime(year, month, day, found, _lowest(self.minutes))
                    day, hour, minute, days = day + 1, 0, 0, days >> 1
            month, day, hour, minute = month + 1, 1, 0, 0
            if month > 12:
                month, year = 1, year + 1
                if year > 9999:
                    return None
        return None

    @functools.cached_property
    def matches_some_day(self) -> bool:
        """Does the expression match any minute at all (in any 400 years)?"""
        return self.next_match(datetime(2001, 1, 1)) is not None


def _lowest(mask: int) -> int:
    """The index of the lowest bit set in ``mask`` (> 0)."""
    return (mask & -mask).bit_length() - 1


def _next_in(mask: int, value: int) -> int | None:
    """The smallest value >= ``value`` in ``mask``, or None."""
    rest = mask >> value
    return value + _lowest(rest) if rest else None


@functools.lru_cache(maxsize=8192)
def _days_of(cron: Cron, year: int, month: int) -> int:
    first_weekday, length = calendar.monthrange(year, month)  # Monday 0
    first = (first_weekday + 1) % 7  # Sunday 0
    month_days = ((1 << length) - 1) << 1
    by_day = cron.days & month_days
    if cron.last_day:
        by_day |= 1 << length
    if cron.last_workday:
        last = (first + length - 1) % 7
        by_day |= 1 << (length - (2 if last == 0 else 1 if last == 6 else 0))
    if cron.weekdays == 0x7F:
        by_weekday = month_days
    else:
        by_weekday = 0
        for weekday in range(7):
            offset = (weekday - first) % 7 + 1  # the month's first such day
            if cron.weekdays >> weekday & 1:
                by_weekday |= _WEEKLY << offset
            if cron.last_weekdays >> weekday & 1:
                by_weekday |= 1 << (offset + 7 * ((length - offset) // 7))
        for weekday, nth in cron.nth_weekdays:
            by_weekday |= 1 << ((weekday - first) % 7 + 1 + 7 * (nth - 1))
        by_weekday &= month_days
    return (by_day | by_weekday) if cron.either_day else (by_day & by_weekday)


_SEPARATOR = re.compile(r"[ \t]+")


def split_fields(text: str) -> list[str]:
    """``text``'s fields, separated by spaces and tabs only (no other whitespace)."""
    stripped = text.strip(" \t")
    return _SEPARATOR.split(stripped) if stripped else []


@functools.lru_cache(maxsize=4096)
def parse(expression: str) -> Cron:
    """The expression (five fields separated by spaces or tabs), parsed; CronSyntaxError
    naming the field and term when it is outside the dialect (other whitespace, a no-break
    space say, is no separator: the field holding it is refused)."""
    fields = split_fields(expression)
    if len(fields) != 5:
        raise CronSyntaxError("must have five fields: minute hour day-of-month month day-of-week")
    texts = dict(zip((MINUTE, HOUR, DAY, MONTH, WEEKDAY), fields, strict=True))
    masks: dict[_Field, int] = {}
    for field in (MINUTE, HOUR, MONTH):
        masks[field] = _field_mask(field, texts[field])
    days, last_day, last_workday = 0, False, False
    for term in texts[DAY].split(","):
        upper = term.upper()
        if upper == "L":
            last_day = True
        elif upper == "LW":
            last_workday = True
        else:
            _refuse_extensions(DAY, term)
            days |= _values(DAY, term)
    weekdays, last_weekdays, nth = 0, 0, set()
    for term in texts[WEEKDAY].split(","):
        upper = term.upper()
        if upper.endswith("L") and upper[:-1].isascii() and upper[:-1].isdigit():
            last_weekdays |= 1 << WEEKDAY.value(term[:-1], term) % 7
        elif "#" in upper:
            day_text, _, nth_text = term.partition("#")
            if not (nth_text.isascii() and nth_text.isdigit() and 1 <= int(nth_text) <= 5):
                raise WEEKDAY.error(term, "needs 1 to 5 after '#' (the n-th such day)")
            nth.add((WEEKDAY.value(day_text, term) % 7, int(nth_text)))
        else:
            _refuse_extensions(WEEKDAY, term)
            mask = _values(WEEKDAY, term)
            weekdays |= (mask | mask >> 7) & 0x7F  # 7 is Sunday
    return Cron(
        minutes=masks[MINUTE],
        hours=masks[HOUR],
        days=days,
        months=masks[MONTH],
        weekdays=weekdays,
        last_day=last_day,
        last_workday=last_workday,
        last_weekdays=last_weekdays,
        nth_weekdays=tuple(sorted(nth)),
        either_day=not (texts[DAY].startswith("*") or texts[WEEKDAY].startswith("*")),
    )


def _field_mask(field: _Field, text: str) -> int:
    mask = 0
    for term in text.split(","):
        _refuse_extensions(field, term)
        mask |= _values(field, term)
    return mask
