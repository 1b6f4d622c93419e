"""``chronoq calendars``: business calendars. Import one from an iCalendar file (``import``),
list them (``list``), show one and the jobs using it (``show``), delete one no job uses
(``delete``), re-plan the jobs using one (``replan``: what a change leaves to do when more
jobs use it than one request re-plans)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from chronoq.cli import ical, render
from chronoq.cli.client import Api, quote
from chronoq.cli.common import api_options, emit, output_option
from chronoq.cli.errors import API_ERROR, USAGE, ApiError, Failure


@click.group()
def calendars() -> None:
    """Your business calendars: dates on which the jobs naming one do not run (or run on
    the next or previous business day).

    \b
    chronoq calendars import us-market-holidays nyse-2027.ics --timezone America/New_York
    chronoq calendars list
    chronoq calendars show us-market-holidays
    chronoq calendars delete us-market-holidays
    """


@calendars.command("import")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--timezone",
    help="the calendar's IANA time zone (default: the file's X-WR-TIMEZONE, else UTC)",
)
@click.option(
    "--business-days",
    default="mon,tue,wed,thu,fri",
    show_default=True,
    help="the weekdays that are business days, comma-separated",
)
@output_option
@api_options
def import_calendar(
    api: Api, output: str, name: str, file: Path, timezone: str | None, business_days: str
) -> None:
    """Make (or change) the calendar NAME from FILE's events: each VEVENT's dates are
    excluded (a one-day event a date, a longer one a range). Recurring events (RRULE) are
    not expanded: they are named, and left out. Then every job using the calendar is
    re-planned on it."""
    try:
        imported = ical.parse(file.read_text(encoding="utf-8-sig"))
    except (ical.IcsError, UnicodeDecodeError) as error:
        raise Failure(f"{file}: {error}", USAGE) from None
    days = [d.strip().lower() for d in business_days.split(",") if d.strip()]
    body = {
        **imported.body(),
        "timezone": timezone or imported.timezone or "UTC",
        "business_days": days,
    }
    answer = api.send("PUT", f"/calendars/{quote(name)}", body)
    calendar: dict[str, Any] = answer.body
    replanned = _replan_rest(api, name, calendar.get("replan") or {})
    if output == "json":
        click.echo(render.dump_json({**calendar, "replanned": replanned}))
        return
    done = "made" if answer.status == 201 else "changed"
    click.echo(
        f"{done} calendar {calendar['name']}, version {calendar['version']}:"
        f" {len(calendar['dates'])} dates, {len(calendar['ranges'])} ranges;"
        f" {len(replanned)} job(s) re-planned"
    )
    for summary in imported.recurring:
        click.echo(f"left out (recurring, not expanded): {summary}", err=True)


def _replan_rest(api: Api, name: str, first: dict[str, Any]) -> list[str]:
    """Every job re-planned: the first page's (``first``, PUT's answer), then each next."""
    replanned = list(first.get("replanned") or [])
    token = first.get("next_token")
    while token:
        page = api.call("POST", f"/calendars/{quote(name)}/replan", {"next_token": token})
        replanned += page.get("replanned") or []
        token = page.get("next_token")
    return replanned


@calendars.command("replan")
@click.argument("name")
@output_option
@api_options
def replan_calendar(api: Api, output: str, name: str) -> None:
    """Re-plan every job using the calendar NAME on its current rules (a change re-plans a
    page of them itself; this goes through the rest)."""
    first = api.call("POST", f"/calendars/{quote(name)}/replan", {})
    replanned = _replan_rest(api, name, first)
    if output == "json":
        click.echo(render.dump_json({"replanned": replanned}))
    else:
        click.echo(f"{len(replanned)} job(s) re-planned on calendar {name}")


@calendars.command("list")
@output_option
@api_options
def list_calendars(api: Api, output: str) -> None:
    """List your calendars: name, time zone, business days, how many dates and ranges."""
    answer = api.call("GET", "/calendars")
    emit(output, answer, lambda: render.calendars_table(answer.get("calendars") or []))


@calendars.command("show")
@click.argument("name")
@output_option
@api_options
def show_calendar(api: Api, output: str, name: str) -> None:
    """The calendar NAME: its dates, ranges, time zone, business days and the jobs using it."""
    answer = api.call("GET", f"/calendars/{quote(name)}")
    if output == "json":
        click.echo(render.dump_json(answer))
        return
    click.echo(f"calendar {answer['name']} (version {answer['version']})")
    click.echo(f"timezone: {answer['timezone']}")
    click.echo(f"business days: {', '.join(answer['business_days'])}")
    click.echo(f"dates: {', '.join(answer['dates']) or '-'}")
    ranges = [f"{a}..{b}" for a, b in answer["ranges"]]
    click.echo(f"ranges: {', '.join(ranges) or '-'}")
    click.echo(f"jobs: {', '.join(answer.get('jobs') or []) or '-'}")


@calendars.command("delete")
@click.argument("name")
@output_option
@api_options
def delete_calendar(api: Api, output: str, name: str) -> None:
    """Delete the calendar NAME. Refused while jobs use it: they are listed, to change
    first."""
    try:
        api.call("DELETE", f"/calendars/{quote(name)}")
    except ApiError as error:
        detail = error.body.get("error") if isinstance(error.body, dict) else None
        jobs = detail.get("jobs") if isinstance(detail, dict) else None
        if error.status != 409 or not isinstance(jobs, list):
            raise
        lines = [error.format_message(), f"the jobs using {name}:"]
        lines += [f"  {job_id}" for job_id in jobs]
        raise Failure("\n".join(lines), API_ERROR) from None
    if output == "json":
        click.echo(render.dump_json({"name": name, "deleted": True}))
    else:
        click.echo(f"deleted calendar {name}")
