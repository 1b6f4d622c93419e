"""Excluded dates from an iCalendar (RFC 5545) file, for ``chronoq calendars import``: each
VEVENT's DTSTART and DTEND (or DURATION) as dates. A one-day event gives a date, a longer one
a range (DTEND is exclusive, as RFC 5545 says of all-day events); an event given with times
counts for the date its DTSTART names (as written, its time zone not applied), up to the date
of its DTEND. Recurring events (RRULE, RDATE) are not expanded: they are told apart, so the
caller can say which were left out. No code is run and nothing is fetched: the text is read
line by line (unfolded, as RFC 5545 folds long lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T\d{6}Z?)?")
_DAYS = re.compile(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T.*)?")


class IcsError(ValueError):
    """The file is not an iCalendar text chronoq can read (its message says where)."""


@dataclass
class Imported:
    """What a file holds: single excluded ``dates``, inclusive ``ranges``, the calendar's
    ``timezone`` if it names one (X-WR-TIMEZONE), and the summaries of the recurring events
    left out."""

    dates: list[date] = field(default_factory=list)
    ranges: list[tuple[date, date]] = field(default_factory=list)
    timezone: str | None = None
    recurring: list[str] = field(default_factory=list)

    def body(self) -> dict[str, object]:
        return {
            "dates": [d.isoformat() for d in sorted(set(self.dates))],
            "ranges": [[a.isoformat(), b.isoformat()] for a, b in sorted(set(self.ranges))],
        }


def unfold(text: str) -> list[str]:
    """The content lines of ``text``: a line beginning with a space or a tab continues the
    one before it (that one character dropped)."""
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] += raw[1:]
        elif raw.strip():
            lines.append(raw)
    return lines


def _split(line: str) -> tuple[str, dict[str, str], str]:
    """A content line's name, parameters and value (``NAME;P=V:value``)."""
    head, colon, value = line.partition(":")
    if not colon:
        raise IcsError(f"not a content line: {line[:60]!r}")
    name, *params = head.split(";")
    found = {}
    for param in params:
        key, _, val = param.partition("=")
        found[key.upper()] = val.strip('"')
    return name.upper(), found, value.strip()


def _date(value: str, where: str) -> date:
    match = _DATE.fullmatch(value)
    if not match:
        raise IcsError(f"{where}: {value!r} is not a date (YYYYMMDD) or date-time")
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        raise IcsError(f"{where}: {value!r} is not a date") from None


def parse(text: str) -> Imported:
    """The excluded dates of an iCalendar text (see the module's doc); raises IcsError."""
    lines = unfold(text)
    if not lines or lines[0].strip().upper() != "BEGIN:VCALENDAR":
        raise IcsError("not an iCalendar file: it does not begin with BEGIN:VCALENDAR")
    found = Imported()
    event: dict[str, str] | None = None
    depth = 0  # (components nested in an event: VALARM)
    for number, line in enumerate(lines, start=1):
        name, _, value = _split(line)
        if name == "X-WR-TIMEZONE" and event is None:
            found.timezone = value
        elif name == "BEGIN" and value.upper() == "VEVENT":
            event = {}
        elif name == "BEGIN" and event is not None:
            depth += 1
        elif name == "END" and event is not None and depth:
            depth -= 1
        elif name == "END" and value.upper() == "VEVENT" and event is not None:
            _add(found, event, number)
            event = None
        elif event is not None and not depth and name not in event:
            event[name] = value
    if event is not None:
        raise IcsError("a VEVENT is not ended (END:VEVENT is missing)")
    return found


def _add(found: Imported, event: dict[str, str], line: int) -> None:
    where = f"the event ending on line {line}"
    if "DTSTART" not in event:
        raise IcsError(f"{where} has no DTSTART")
    if "RRULE" in event or "RDATE" in event:
        found.recurring.append(event.get("SUMMARY") or event["DTSTART"])
        return
    first = _date(event["DTSTART"], f"{where}, DTSTART")
    if "DTEND" in event:
        end = _date(event["DTEND"], f"{where}, DTEND")
        timed = "T" in event["DTEND"]
        last = end if timed and end > first else end - timedelta(days=1)
    elif "DURATION" in event:
        match = _DAYS.fullmatch(event["DURATION"])
        if not match:
            raise IcsError(f"{where}, DURATION: {event['DURATION']!r} is not a duration")
        days = 7 * int(match[1] or 0) + int(match[2] or 0)
        last = first + timedelta(days=max(days, 1) - 1)
    else:
        last = first
    last = max(first, last)
    if last == first:
        found.dates.append(first)
    else:
        found.ranges.append((first, last))
