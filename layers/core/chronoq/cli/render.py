"""How jobs and runs look to people: aligned tables, schedules in words, times and durations
made short. (``-o json`` prints the API's answers instead.)

Why this module is long: it is every table and phrase the command line shows people (jobs,
runs, backfills, schedules in words, durations, the audit trail, status, cost), each renderer
short; they share one console and one style.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.table import Table

_DAYS = {
    "0": "Sundays",
    "1": "Mondays",
    "2": "Tuesdays",
    "3": "Wednesdays",
    "4": "Thursdays",
    "5": "Fridays",
    "6": "Saturdays",
    "7": "Sundays",
    "sun": "Sundays",
    "mon": "Mondays",
    "tue": "Tuesdays",
    "wed": "Wednesdays",
    "thu": "Thursdays",
    "fri": "Fridays",
    "sat": "Saturdays",
}
#: Widest a table is laid out when the output is not a terminal (a pipe, a file).
PIPE_WIDTH = 400


def console() -> Console:
    """A console on the current standard output (looked up now: tests replace it)."""
    out = sys.stdout
    terminal = out.isatty()
    return Console(
        file=out,
        highlight=False,
        soft_wrap=False,
        width=None if terminal else PIPE_WIDTH,
        color_system="auto" if terminal else None,
    )


def show(renderable: RenderableType) -> None:
    """Print to a terminal with rich; anywhere else as plain text without trailing blanks."""
    if sys.stdout.isatty():
        console().print(renderable)
    else:
        click.echo(as_text(renderable))


def as_text(renderable: RenderableType, width: int = PIPE_WIDTH) -> str:
    """What ``renderable`` prints as plain text (each line's trailing blanks dropped)."""
    out = Console(width=width, color_system=None, highlight=False, record=True, file=io.StringIO())
    out.print(renderable)
    return "\n".join(line.rstrip() for line in out.export_text().splitlines())


def dump_json(document: Any) -> str:
    return json.dumps(document, indent=2)


# --- words ------------------------------------------------------------------------------------


def schedule_words(schedule: dict[str, Any] | None) -> str:
    """A schedule as people say it: "daily at 02:00 (Europe/Berlin)", "every 5 minutes",
    "once at 2026-11-25 21:48:30Z"; cron expressions without a short name are shown as they are."""
    if not schedule:
        return ""
    kind = schedule.get("type")
    if kind == "at":
        return f"once at {short_time(schedule.get('at'))}"
    if kind == "after":  # (completion triggers: job_view names the upstreams)
        jobs = schedule.get("jobs") or []
        return f"after {len(jobs)} job{'s' if len(jobs) != 1 else ''}, on {schedule.get('on')}"
    if kind == "rate":
        text = f"every {schedule.get('every')}"
    elif kind == "cron":
        text = cron_words(str(schedule.get("expression", "")))
        zone = schedule.get("timezone") or "UTC"
        if zone != "UTC":
            text += f" ({zone})"
    else:
        return json.dumps(schedule)
    if schedule.get("end_at"):
        text += f" until {short_time(schedule['end_at'])}"
    calendar = schedule.get("calendar")
    if isinstance(calendar, dict) and calendar.get("name"):  # (a business calendar)
        moves = {
            "next_business_day": ", moved to the next",
            "previous_business_day": ", moved back",
        }
        moved = moves.get(str(calendar.get("on_excluded")), "")
        text += f" on {calendar['name']} business days{moved}"
    return text


def cron_words(expression: str) -> str:
    fields = expression.split()
    if len(fields) != 5:
        return f"cron {expression}"
    minute, hour, day, month, weekday = fields
    if fields == ["*"] * 5:
        return "every minute"
    if minute.startswith("*/") and [hour, day, month, weekday] == ["*"] * 4:
        return f"every {minute[2:]} minutes"
    if not (minute.isdigit() and month == "*"):
        return f"cron {expression}"
    if [hour, day, weekday] == ["*"] * 3:
        return f"hourly at :{int(minute):02d}"
    if not hour.isdigit():
        return f"cron {expression}"
    clock = f"{int(hour):02d}:{int(minute):02d}"
    if day == "*" and weekday == "*":
        return f"daily at {clock}"
    if day == "*" and weekday in ("1-5", "mon-fri", "MON-FRI"):
        return f"weekdays at {clock}"
    if day == "*" and weekday.lower() in _DAYS:
        return f"{_DAYS[weekday.lower()]} at {clock}"
    if day.isdigit() and weekday == "*":
        return f"monthly on day {int(day)} at {clock}"
    return f"cron {expression}"


def target_words(target: dict[str, Any] | None) -> str:
    if not target:
        return ""
    kind = target.get("type")
    detail = {
        "http": f"{target.get('method', 'POST')} {target.get('url')}",
        "python": f"{target.get('task')} {json.dumps(target.get('args') or {})}",
        "lambda": str(target.get("function_arn")),
        "sqs": str(target.get("queue_url")),
        "sns": str(target.get("topic_arn")),
        "eventbridge": f"bus {target.get('event_bus', 'default')}",
        "container": f"{target.get('image')} {' '.join(target.get('command') or [])}",
    }.get(str(kind), "")
    return f"{kind} {detail}".strip()


# --- times ------------------------------------------------------------------------------------


def _instant(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def short_time(value: Any) -> str:
    """``2026-11-25T21:48:30.004Z`` -> ``2026-11-25 21:48:30Z`` (empty for none)."""
    at = _instant(value)
    return at.strftime("%Y-%m-%d %H:%M:%SZ") if at else ("" if not value else str(value))


def span(seconds: float) -> str:
    """A length of time made short: 4 ms, 1.2 s, 3m05s, 2h10m, 3d4h."""
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600}h"


def relative(value: Any, now: datetime) -> str:
    at = _instant(value)
    if at is None:
        return ""
    seconds = (at - now).total_seconds()
    return f"in {span(seconds)}" if seconds >= 0 else f"{span(-seconds)} ago"


def when(value: Any, now: datetime) -> str:
    """A time and how far it is from now: ``2026-11-25 21:48:30Z (in 4m05s)``."""
    if not value:
        return ""
    return f"{short_time(value)} ({relative(value, now)})"


def lag(run: dict[str, Any]) -> str:
    value = run.get("lag_ms")
    return span(value / 1000) if isinstance(value, int | float) else ""


def duration(run: dict[str, Any]) -> str:
    started, finished = _instant(run.get("started_at")), _instant(run.get("finished_at"))
    if started is None or finished is None:
        return ""
    return span((finished - started).total_seconds())


# --- tables -----------------------------------------------------------------------------------


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column.upper(), no_wrap=True, overflow="fold")
    return table


def jobs_table(jobs: Iterable[dict[str, Any]], now: datetime) -> Table:
    """The jobs, a row each; a column of labels when one of them has any; the last success
    and since when silent when one of them has ``expect``."""
    jobs = list(jobs)
    labelled = any(job.get("labels") for job in jobs)
    expecting = any(job.get("expect") for job in jobs)
    table = _table(
        "id",
        "name",
        "state",
        "schedule",
        "next run",
        *(["labels"] if labelled else []),
        *(["last success", "silent since"] if expecting else []),
    )
    for job in jobs:
        table.add_row(
            str(job.get("id", "")),
            str(job.get("name", "")),
            str(job.get("state", "")),
            schedule_words(job.get("schedule")),
            when(job.get("next_run_at"), now) or "-",
            *([label_words(job.get("labels"))] if labelled else []),
            *(
                [
                    when(job.get("last_success_at"), now) or "-",
                    when(job.get("silent_since"), now) or "-",
                ]
                if expecting
                else []
            ),
        )
    return table


def expect_words(job: dict[str, Any]) -> str | None:
    """What a job expects: ``a success within 1d2h``."""
    expect = job.get("expect") or {}
    seconds = expect.get("success_within_seconds")
    return f"a success within {span(seconds)}" if isinstance(seconds, int) else None


def label_words(labels: dict[str, str] | None) -> str:
    """``team=data,env=prod`` (as ``-l`` takes them)."""
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))


def runs_words(job: dict[str, Any]) -> str | None:
    """What ends a limited job: ``3 (the last at 2026-11-25 21:51:00Z)``."""
    if job.get("max_runs") is None:
        return None
    last = job.get("final_run_at")
    return f"{job['max_runs']}" + (f" (the last at {short_time(last)})" if last else "")


def runs_table(runs: Iterable[dict[str, Any]]) -> Table:
    table = _table("id", "status", "scheduled", "lag", "duration", "attempts")
    for run in runs:
        table.add_row(
            str(run.get("id", "")),
            str(run.get("status", "")),
            short_time(run.get("scheduled_at")),
            lag(run),
            duration(run),
            str(len(run.get("attempts") or [])),
        )
    return table


def _fields(rows: Iterable[tuple[str, Any]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, value in rows:
        if value not in (None, "", [], {}):
            grid.add_row(name, str(value))
    return grid


def parameters_words(parameters: dict[str, Any] | None) -> str | None:
    """Run parameters as one line of JSON (ASCII: nothing in them can move the terminal)."""
    return _clip(json.dumps(parameters, separators=(", ", ": "))) if parameters else None


def value_words(value: Any) -> str:
    """A header's or a variable's value as the job holds it: text as it is (placeholders
    such as ``{{ secret.crm-token }}`` too), a reference as its JSON,
    ``{"secret": "crm-token"}``. (A job never holds a secret's value.)"""
    return value if isinstance(value, str) else json.dumps(value)


def _named(label: str, values: Any) -> list[tuple[str, Any]]:
    """A row per ``NAME: value`` of a mapping (headers, variables), the first labelled."""
    if not isinstance(values, dict):
        return []
    return [
        (label if n == 0 else "", f"{key}: {value_words(value)}")
        for n, (key, value) in enumerate(values.items())
    ]


def job_view(job: dict[str, Any], now: datetime) -> Table:
    retry = job.get("retry") or {}
    notify = job.get("notify") or {}
    target = job.get("target") or {}
    return _fields(
        [
            ("id", job.get("id")),
            ("name", job.get("name")),
            ("state", job.get("state")),
            ("schedule", _after_words(job) or schedule_words(job.get("schedule"))),
            ("window", _window(job.get("schedule"))),
            ("upstreams", _linked(job.get("upstreams"))),
            ("downstreams", _linked(job.get("downstreams"))),
            ("next run", when(job.get("next_run_at"), now)),
            ("next start", _next_start(job, now)),
            ("target", target_words(job.get("target"))),
            *_named("headers", target.get("headers")),
            *_named("environment", target.get("environment")),
            ("priority", job.get("priority")),
            ("timeout", f"{job['timeout_seconds']} s" if "timeout_seconds" in job else None),
            ("concurrency", job.get("concurrency")),
            ("retry", f"up to {retry['max_attempts']} attempts" if retry else None),
            (
                "notify",
                f"{', '.join(notify.get('on') or [])} -> "
                + ", ".join(str(notify[k]) for k in ("webhook", "email") if notify.get(k))
                if notify
                else None,
            ),
            *_named("webhook headers", notify.get("webhook_headers")),
            ("max runs", runs_words(job)),
            ("on complete", job.get("on_complete") if job.get("on_complete") == "delete" else None),
            ("labels", label_words(job.get("labels"))),
            ("parameters", parameters_words(job.get("parameters"))),
            ("flow", _flow(job.get("flow"))),
            ("expect", expect_words(job)),
            ("last success", when(job.get("last_success_at"), now)),
            ("silent since", when(job.get("silent_since"), now)),
            ("active runs", ", ".join(job.get("active_runs") or [])),
            ("version", job.get("version")),
            ("created", short_time(job.get("created_at"))),
            ("updated", short_time(job.get("updated_at"))),
        ]
    )


def run_view(run: dict[str, Any]) -> Table:
    return _fields(
        [
            ("id", run.get("id")),
            ("job", run.get("job_id")),
            ("status", run.get("status")),
            ("trigger", run.get("trigger")),
            ("priority", run.get("priority")),
            ("scheduled", short_time(run.get("scheduled_at"))),
            ("planned start", _planned(run)),
            ("rerun of", run.get("rerun_of")),
            ("backfill", run.get("backfill_id")),
            ("triggered by", ", ".join(run.get("triggered_by") or [])),
            ("triggered", ", ".join(run.get("triggered") or [])),
            ("parameters", parameters_words(run.get("parameters"))),
            ("queued", short_time(run.get("queued_at"))),
            ("started", short_time(run.get("started_at"))),
            ("finished", short_time(run.get("finished_at"))),
            ("lag", lag(run)),
            ("flow wait", _flow_wait(run)),
            ("duration", duration(run)),
            ("error", run.get("error")),
            ("reason", run.get("reason")),
            ("output", _clip(run.get("output") or run.get("output_location"))),
            (
                "notifications",
                ", ".join(f"{k}: {v}" for k, v in (run.get("notifications") or {}).items()),
            ),
        ]
    )


# --- completion triggers ---------------------------------------------------------------------


def _after_words(job: dict[str, Any]) -> str | None:
    """An after job's schedule with its upstreams' names: "after extract and clean, on
    SUCCEEDED, waiting up to 6h"."""
    schedule = job.get("schedule") or {}
    upstreams = job.get("upstreams")
    if schedule.get("type") != "after" or not upstreams:
        return None
    names = [u.get("name") or f"{u.get('id')} (deleted)" for u in upstreams]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    within = span(float(schedule.get("within_seconds", 0)))
    return f"after {listed}, on {schedule.get('on')}, waiting up to {within}"


def _linked(jobs: list[dict[str, Any]] | None) -> str | None:
    """Upstream or downstream jobs: "extract (ACTIVE), clean (PAUSED)"."""
    if not jobs:
        return None
    return ", ".join(
        f"{j['name']} ({j['state']})" if j.get("name") else f"{j.get('id')} (deleted)" for j in jobs
    )


def _window(schedule: dict[str, Any] | None) -> str | None:
    seconds = (schedule or {}).get("window_seconds")
    return f"each run starts within {span(seconds)} of its fire time" if seconds else None


def _next_start(job: dict[str, Any], now: datetime) -> str | None:
    start = job.get("next_start_at")
    return when(start, now) if start and start != job.get("next_run_at") else None


def _flow(value: dict[str, Any] | None) -> str | None:
    if not value:
        return None
    limits = [
        f"{value['max_running']} running at once" if value.get("max_running") else "",
        f"{value['max_starts_per_second']} starts a second"
        if value.get("max_starts_per_second")
        else "",
    ]
    return f"{value.get('key')}: " + ", ".join(x for x in limits if x)


def _planned(run: dict[str, Any]) -> str | None:
    start = run.get("starts_at")
    return short_time(start) if start and start != run.get("scheduled_at") else None


def _flow_wait(run: dict[str, Any]) -> str | None:
    waited = run.get("flow_wait_ms")
    return span(waited / 1000) if isinstance(waited, int | float) else None


def attempts_table(run: dict[str, Any]) -> Table:
    table = _table("attempt", "started", "finished", "outcome", "error")
    for attempt in run.get("attempts") or []:
        table.add_row(
            str(attempt.get("attempt", "")),
            short_time(attempt.get("started_at")),
            short_time(attempt.get("finished_at")),
            str(attempt.get("outcome", "")),
            str(attempt.get("error") or ""),
        )
    return table


def _clip(value: Any, limit: int = 200) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- audit trails -----------------------------------------------------------------------------


def _audit_value(value: Any) -> str:
    return "-" if value is None else value if isinstance(value, str) else json.dumps(value)


def audit_changes(entry: dict[str, Any]) -> str:
    """What an audit entry changed, in a line: ``priority: normal -> high; ...`` (a field
    made: ``name = nightly``; its detail: ``run_id=...``)."""
    parts = []
    for change in entry.get("changes") or []:
        field, before, after = change.get("field"), change.get("before"), change.get("after")
        if before is None:
            parts.append(f"{field} = {_audit_value(after)}")
        else:
            parts.append(f"{field}: {_audit_value(before)} -> {_audit_value(after)}")
    parts += [f"{k}={_audit_value(v)}" for k, v in (entry.get("detail") or {}).items()]
    return _clip("; ".join(parts), 400) or ""


def audit_table(entries: Iterable[dict[str, Any]]) -> Table:
    table = _table("when", "action", "by", "from", "changes", "request")
    table.columns[4].no_wrap = False
    for entry in entries:
        table.add_row(
            short_time(entry.get("at")),
            str(entry.get("action", "")),
            str(entry.get("by_name") or entry.get("by") or ""),
            str(entry.get("source", "")),
            audit_changes(entry),
            str(entry.get("request_id", "")),
        )
    return table


# --- run features: backfills ------------------------------------------------------------------


def backfill_view(backfill: dict[str, Any]) -> Any:
    counts = backfill.get("runs") or {}
    return _fields(
        [
            ("id", backfill.get("id")),
            ("job", backfill.get("job_id")),
            ("state", backfill.get("state")),
            (
                "range",
                f"{short_time(backfill.get('from'))} to {short_time(backfill.get('to'))}",
            ),
            ("fire times", backfill.get("total")),
            ("in flight", f"at most {backfill.get('max_in_flight')}"),
            ("ended", _ended(backfill)),
            ("runs", ", ".join(f"{n} {status}" for status, n in counts.items())),
            ("created", short_time(backfill.get("created_at"))),
            ("finished", short_time(backfill.get("finished_at"))),
        ]
    )


def backfills_table(items: list[dict[str, Any]]) -> Table:
    table = _table("id", "state", "from", "to", "ended", "created")
    for b in items:
        table.add_row(
            str(b.get("id", "")),
            str(b.get("state", "")),
            short_time(b.get("from")),
            short_time(b.get("to")),
            _ended(b),
            short_time(b.get("created_at")),
        )
    return table


def _ended(backfill: dict[str, Any]) -> str:
    """How many of its fire times have ended, of how many ("?": not counted, in a listing)."""
    ended = backfill.get("ended")
    return f"{'?' if ended is None else ended} of {backfill.get('total', '?')}"


def secrets_table(items: Iterable[dict[str, Any]]) -> Table:
    """The caller's secrets (``chronoq secrets list``): never a value, the API has none."""
    table = _table("name", "version", "updated")
    for secret in items:
        table.add_row(
            str(secret.get("name", "")),
            str(secret.get("version", "")),
            short_time(secret.get("updated_at")),
        )
    return table


def calendars_table(items: Iterable[dict[str, Any]]) -> Table:
    """The caller's business calendars (``chronoq calendars list``)."""
    table = _table("name", "timezone", "business days", "dates", "ranges", "version", "updated")
    for calendar in items:
        table.add_row(
            str(calendar.get("name", "")),
            str(calendar.get("timezone", "")),
            ",".join(calendar.get("business_days") or []),
            str(len(calendar.get("dates") or [])),
            str(len(calendar.get("ranges") or [])),
            str(calendar.get("version", "")),
            short_time(calendar.get("updated_at")),
        )
    return table


def preview_table(fire_times: Iterable[dict[str, str]]) -> Table:
    table = _table("utc", "local")
    for fire in fire_times:
        table.add_row(fire["utc"], fire["local"])
    return table


def limits(answer: dict[str, Any]) -> str:
    """``chronoq status``: each of the caller's limits, and how much of it is used."""
    lines = [f"limits of {answer.get('owner', '?')}:"]
    for name, value in answer.items():
        if not isinstance(value, dict):
            continue
        used = value.get("used")
        if isinstance(used, dict):
            shown = ", ".join(f"{job} {n}" for job, n in used.items()) or "none"
            text = f"{shown} (at most {value['limit']:,} each)"
        elif used is None:
            text = f"at most {value['limit']:,}"
        else:
            text = f"{used:,} of {value['limit']:,}"
        lines.append(f"  {name.replace('_', ' '):<30}{text}")
    return "\n".join(lines)


def heartbeat(beat: dict[str, Any]) -> str:
    """``chronoq status``: the heartbeat's state, last run and last success, in words."""

    def seen(run: dict[str, Any] | None) -> str:
        if run is None:
            return "none yet"
        lag = "-" if run["lag_ms"] is None else f"{run['lag_ms']:,} ms"
        return f"{run['status']}, scheduled {run['scheduled_at']}, lag {lag}"

    since = beat["seconds_since_success"]
    ago = "" if since is None else f" ({since:.0f} s ago)"
    return "\n".join(
        [
            f"heartbeat     {beat['state']}"
            f" (every {beat['every_seconds']} s: job {beat['job_id']})",
            f"last run      {seen(beat['last_run'])}",
            f"last success  {seen(beat['last_success'])}{ago}",
            f"alarms        late over {beat['max_lag_seconds']} s of lag,"
            f" missing after {beat['max_silence_seconds']} s without a success",
        ]
    )
