"""Jobs from flags: the JSON of ``POST /jobs`` (or of a ``PATCH``) built from what was given
on the command line, over what a file (``-f``) gave. Pure: the API validates the result."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_PART = re.compile(r"(\d+)\s*(d|h|m|s)", re.IGNORECASE)
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_WORDS = re.compile(r"^(\d+)\s+(second|minute|hour|day)s?$", re.IGNORECASE)


class BadInput(ValueError):
    """A flag or file that cannot make a job; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


def parse_duration(text: str) -> int:
    """Seconds in ``"90"``, ``"90s"``, ``"5m"``, ``"1h30m"``, ``"2d"`` or ``"5 minutes"``."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    words = _WORDS.match(value)
    if words:
        return int(words[1]) * _SECONDS[words[2][0].lower()]
    compact = value.replace(" ", "")
    parts = _PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts).lower() != compact.lower():
        raise ValueError(f"not a duration: {text!r} (e.g. 30s, 5m, 1h30m, 2d)")
    return sum(int(n) * _SECONDS[u.lower()] for n, u in parts)


def rate_every(text: str) -> str:
    """The ``every`` of a rate schedule for ``--every 5m``: ``"5 minutes"``, in the largest
    unit that divides it (minutes, hours or days)."""
    seconds = parse_duration(text)
    if seconds < 60 or seconds % 60:
        raise ValueError(f"must be whole minutes, at least 1: {text!r}")
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    raise AssertionError("unreachable: a whole number of minutes")


def parse_instant(text: str, timezone: str = "UTC", now: datetime | None = None) -> str:
    """An ISO 8601 instant for ``--at``: ``+30s``/``in 5m`` from now, or a date and time (in
    ``timezone`` when it has no offset)."""
    value = text.strip()
    relative = value.removeprefix("+").removeprefix("in ").strip()
    if value.startswith(("+", "in ")):
        at = (now or datetime.now(UTC)) + timedelta(seconds=parse_duration(relative))
        if at.microsecond:
            at = at.replace(microsecond=0) + timedelta(seconds=1)
        return at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an instant: {text!r} (ISO 8601, or +30s / in 5m)") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=zone(timezone))
    return at.isoformat()


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"not a known IANA time zone: {name!r}") from None


def json_value(text: str) -> Any:
    """JSON if it parses, else the text as a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class JobFlags:
    """The job options of ``jobs create`` and ``jobs update`` (None: not given)."""

    name: str | None = None
    cron: str | None = None
    every: str | None = None
    at: str | None = None
    timezone: str | None = None
    start_at: str | None = None
    end_at: str | None = None
    http: str | None = None
    method: str | None = None
    headers: tuple[str, ...] = ()
    body: str | None = None
    task: str | None = None
    args: str | None = None
    priority: str | None = None
    timeout: str | None = None
    start_deadline: str | None = None
    concurrency: str | None = None
    max_attempts: int | None = None
    retry_interval: str | None = None
    notify_webhook: str | None = None
    notify_email: str | None = None
    notify_on: tuple[str, ...] = field(default_factory=tuple)
    output_location: str | None = None
    max_runs: int | None = None
    on_complete: str | None = None
    labels: tuple[str, ...] = field(default_factory=tuple)
    expect_within: str | None = None
    # --- run features: time window, flow control ---
    window: str | None = None
    flow: str | None = None
    flow_max_running: int | None = None
    flow_max_rate: int | None = None
    # --- completion triggers ---
    after: tuple[str, ...] = field(default_factory=tuple)
    after_on: str | None = None
    after_within: str | None = None
    # --- business calendars ---
    calendar: str | None = None
    on_excluded: str | None = None


def build(
    flags: JobFlags, base: dict[str, Any] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """The job document: ``base`` (from a file) with what the flags give put over it. Only
    given flags appear, so the same document serves as a PATCH."""
    job: dict[str, Any] = dict(base or {})
    if flags.name is not None:
        job["name"] = flags.name
    schedule = _schedule(flags, job.get("schedule"), now)
    if schedule is not None:
        job["schedule"] = schedule
    target = _target(flags)
    if target is not None:
        job["target"] = target
    if flags.priority is not None:
        job["priority"] = flags.priority.lower()
    if flags.concurrency is not None:
        job["concurrency"] = flags.concurrency.lower()
    for option, key, text in (
        ("--timeout", "timeout_seconds", flags.timeout),
        ("--start-deadline", "start_deadline_seconds", flags.start_deadline),
    ):
        if text is not None:
            job[key] = _seconds(option, text)
    if flags.max_attempts is not None or flags.retry_interval is not None:
        retry = dict(job.get("retry") or {})
        if flags.max_attempts is not None:
            retry["max_attempts"] = flags.max_attempts
        if flags.retry_interval is not None:
            retry["interval_seconds"] = _seconds("--retry-interval", flags.retry_interval)
        job["retry"] = retry
    if flags.notify_webhook or flags.notify_email or flags.notify_on:
        notify = dict(job.get("notify") or {})
        if flags.notify_webhook:
            notify["webhook"] = flags.notify_webhook
        if flags.notify_email:
            notify["email"] = flags.notify_email
        if flags.notify_on:
            notify["on"] = [
                s.strip().upper() for v in flags.notify_on for s in v.split(",") if s.strip()
            ]
        job["notify"] = notify
    if flags.output_location is not None:
        job["output_location"] = flags.output_location
    if flags.max_runs is not None:
        job["max_runs"] = flags.max_runs
    if flags.on_complete is not None:
        job["on_complete"] = flags.on_complete.lower()
    if flags.labels:
        job["labels"] = dict(_label(text) for text in flags.labels)
    if flags.expect_within is not None:
        seconds = _seconds("--expect-within", flags.expect_within)
        job["expect"] = {"success_within_seconds": seconds}
    _run_features(flags, job)
    _calendar(flags, job)
    return job


def _calendar(flags: JobFlags, job: dict[str, Any]) -> None:
    """``--calendar`` and ``--on-excluded`` into the schedule (given, or the file's)."""
    if flags.calendar is None and flags.on_excluded is None:
        return
    schedule = job.get("schedule")
    flag = "--calendar" if flags.calendar is not None else "--on-excluded"
    if not isinstance(schedule, dict) or schedule.get("type") not in ("cron", "rate"):
        raise BadInput(flag, "goes with a recurring schedule (--cron or --every)")
    current = schedule.get("calendar")
    calendar: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    if flags.calendar is not None:
        calendar["name"] = flags.calendar
    if flags.on_excluded is not None:
        calendar["on_excluded"] = flags.on_excluded
    if "name" not in calendar:
        raise BadInput("--on-excluded", "goes with --calendar NAME")
    calendar.pop("rules", None)  # (chronoq's copy, made again from the calendar)
    calendar.pop("version", None)
    job["schedule"] = {**schedule, "calendar": calendar}


def _label(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise BadInput("--label", f"must be KEY=VALUE, not {text!r}")
    return key.strip(), value.strip()


def _run_features(flags: JobFlags, job: dict[str, Any]) -> None:
    """``--window`` into the schedule (given, or the file's); ``--flow*`` into ``flow``."""
    if flags.window is not None:
        schedule = job.get("schedule")
        if not isinstance(schedule, dict) or schedule.get("type") not in ("cron", "rate"):
            raise BadInput("--window", "goes with a recurring schedule (--cron or --every)")
        job["schedule"] = {**schedule, "window_seconds": _seconds("--window", flags.window)}
    limits = {"max_running": flags.flow_max_running, "max_starts_per_second": flags.flow_max_rate}
    if flags.flow is None and any(v is not None for v in limits.values()):
        raise BadInput(
            "--flow-max-running" if limits["max_running"] else "--flow-max-rate",
            "goes with --flow KEY",
        )
    if flags.flow is not None:
        given = {k: v for k, v in limits.items() if v is not None}
        if not given:
            raise BadInput("--flow", "give --flow-max-running N, --flow-max-rate N or both")
        job["flow"] = {"key": flags.flow, **given}


def _seconds(option: str, text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise BadInput(option, str(error)) from None


def _schedule(flags: JobFlags, current: Any, now: datetime | None) -> dict[str, Any] | None:
    given = [
        o for o, v in (("--cron", flags.cron), ("--every", flags.every), ("--at", flags.at)) if v
    ]
    if flags.after:
        given.append("--after")
    if len(given) > 1:
        raise BadInput(
            given[1], f"give one of --cron, --every, --at, --after (not {' and '.join(given)})"
        )
    schedule: dict[str, Any] | None
    if flags.after:  # completion triggers: after these jobs (names or ids)
        schedule = {"type": "after", "jobs": list(flags.after)}
        if flags.after_on:
            schedule["on"] = flags.after_on.upper()
        if flags.after_within:
            schedule["within_seconds"] = _seconds("--after-within", flags.after_within)
        return schedule
    if flags.after_on or flags.after_within:
        raise BadInput("--after-on" if flags.after_on else "--after-within", "give --after too")
    if flags.cron:
        schedule = {"type": "cron", "expression": flags.cron}
        if flags.timezone:
            schedule["timezone"] = flags.timezone
    elif flags.every:
        try:
            schedule = {"type": "rate", "every": rate_every(flags.every)}
        except ValueError as error:
            raise BadInput("--every", str(error)) from None
    elif flags.at:
        try:
            schedule = {"type": "at", "at": parse_instant(flags.at, flags.timezone or "UTC", now)}
        except ValueError as error:
            raise BadInput("--at", str(error)) from None
    elif isinstance(current, dict) and (flags.timezone or flags.start_at or flags.end_at):
        schedule = dict(current)  # from the file: only the given parts change
        if flags.timezone:
            schedule["timezone"] = flags.timezone
    elif flags.timezone or flags.start_at or flags.end_at:
        raise BadInput(
            "--timezone" if flags.timezone else "--start-at" if flags.start_at else "--end-at",
            "give the schedule too (--cron, --every or --at)",
        )
    else:
        return None
    for option, key, text in (
        ("--start-at", "start_at", flags.start_at),
        ("--end-at", "end_at", flags.end_at),
    ):
        if text:
            try:
                schedule[key] = parse_instant(text, flags.timezone or "UTC", now)
            except ValueError as error:
                raise BadInput(option, str(error)) from None
    return schedule


def _target(flags: JobFlags) -> dict[str, Any] | None:
    if flags.http and flags.task:
        raise BadInput("--task", "give one of --http and --task")
    if flags.http:
        target: dict[str, Any] = {"type": "http", "url": flags.http}
        if flags.method:
            target["method"] = flags.method.upper()
        if flags.headers:
            target["headers"] = dict(_header(h) for h in flags.headers)
        if flags.body is not None:
            target["body"] = json_value(flags.body)
        return target
    http_only = [
        o
        for o, v in (
            ("--method", flags.method),
            ("--header", flags.headers),
            ("--body", flags.body),
        )
        if v
    ]
    if http_only:
        raise BadInput(http_only[0], "goes with --http URL")
    if flags.task:
        target = {"type": "python", "task": flags.task}
        if flags.args is not None:
            args = json_value(flags.args)
            if not isinstance(args, dict):
                raise BadInput("--args", "must be a JSON object, e.g. '{\"rows\": 10}'")
            target["args"] = args
        return target
    if flags.args is not None:
        raise BadInput("--args", "goes with --task module:function")
    return None


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise BadInput("--header", f"must be NAME:VALUE, not {text!r}")
    return name.strip(), value.strip()


def load(path: str, text: str | None = None) -> dict[str, Any]:
    """A job document from a JSON or YAML file (``-``: standard input, read into ``text``)."""
    content = text if text is not None else Path(path).read_text()
    if path.endswith((".yaml", ".yml")) or not content.lstrip().startswith(("{", "[")):
        import yaml

        try:
            document = yaml.safe_load(content)
        except yaml.YAMLError as error:
            raise BadInput("--file", f"{path} is neither JSON nor YAML: {error}") from None
    else:
        try:
            document = json.loads(content)
        except ValueError as error:
            raise BadInput("--file", f"{path} is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise BadInput("--file", f"{path} must hold one job (an object)")
    # YAML reads unquoted times as datetimes: back to ISO 8601 text, as the API takes them
    plain: dict[str, Any] = json.loads(json.dumps(document, default=_iso))
    return plain


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
