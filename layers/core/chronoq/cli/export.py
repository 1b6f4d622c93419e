"""``chronoq runs export``: every run of a range, from the runs table (the list routes) and the
archive (``GET /archive``'s links, one per object of each day), each run once: the archive's
highest version of a run, unless the table still holds it (its copy is the latest).

The range is of the runs' fire times (``scheduled_at``), as the list routes' ``since`` and
``until`` filter them and the archive's days partition them."""

from __future__ import annotations

import csv
import io
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import click

from chronoq import resources as r
from chronoq.cli.client import Api
from chronoq.cli.common import api_options
from chronoq.cli.errors import NOT_FOUND, USAGE, Failure
from chronoq.domain import archive

#: Every status a run may have (as chronoq.domain.runs has them).
STATUSES = (
    "SCHEDULED",
    "QUEUED",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "TIMED_OUT",
    "SKIPPED",
    "MISSED",
    "CANCELLED",
)
#: The columns of ``-o csv`` (a run's attempts as their count; its output and logs left out:
#: ``-o jsonl`` has them).
CSV_COLUMNS = (
    "id",
    "job_id",
    "owner",
    "status",
    "trigger",
    "priority",
    "scheduled_at",
    "started_at",
    "finished_at",
    "lag_ms",
    "attempts",
    "error",
    "reason",
    "output_location",
    "rerun_of",
    "backfill_id",
    "source",
    "version",
)
#: Seconds a download of an archive object may take.
DOWNLOAD_TIMEOUT_SECONDS = 60.0


def _instant(_: click.Context, parameter: click.Parameter, text: str) -> datetime:
    """An ISO 8601 instant with its offset, or a day (its midnight, UTC)."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            "must be an ISO 8601 instant with its offset (2026-11-26T00:00:00Z) or a day"
            " (2026-11-26)"
        ) from None
    if value.tzinfo is None:
        raise click.BadParameter("must name its offset (Z, +01:00, ...)")
    return value.astimezone(UTC)


def _statuses(_: click.Context, __: click.Parameter, text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    found = frozenset(s.strip().upper() for s in text.split(",") if s.strip())
    unknown = sorted(found - set(STATUSES))
    if unknown or not found:
        raise click.BadParameter(f"{', '.join(unknown) or text!r}: statuses are {STATUSES}")
    return found


def _when(run: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(run["scheduled_at"]).replace("Z", "+00:00"))


def _days(start: datetime, end: datetime) -> Iterator[date]:
    """The UTC days of the range ``[start, end)``."""
    day, last = start.date(), (end - timedelta(microseconds=1)).date()
    while day <= last:
        yield day
        day += timedelta(days=1)


def _jobs(api: Api, job: str | None) -> list[str]:
    """The ids of the jobs whose runs the table is asked for: the one ``--job`` names (by
    name or id; an id of a deleted job too), else every job of the caller."""
    found: list[dict[str, Any]] = []
    for page, _ in api.pages("/jobs", "jobs", r.MAX_PAGE_LIMIT, None, True):
        found += page
    if job is None:
        return [j["id"] for j in found]
    named = [j["id"] for j in found if job in (j.get("name"), j["id"])]
    if named:
        return named[:1]
    if job.startswith("job_"):  # (a deleted job: its runs are kept until they expire)
        return [job]
    raise Failure(f"no job named {job!r}", NOT_FOUND)


def table_runs(
    api: Api, jobs: Iterable[str], start: datetime, end: datetime, statuses: frozenset[str] | None
) -> list[dict[str, Any]]:
    """The runs of ``jobs`` of the range the runs table still holds."""
    runs: list[dict[str, Any]] = []
    query = {
        "since": start.isoformat().replace("+00:00", "Z"),
        "until": end.isoformat().replace("+00:00", "Z"),
        "status": ",".join(sorted(statuses)) if statuses else None,
    }
    for job_id in jobs:
        filters = {"job_id": job_id, **query}
        for page, _ in api.pages("/runs", "runs", r.MAX_PAGE_LIMIT, None, True, filters):
            runs += page
    return runs


def archived_runs(
    api: Api,
    start: datetime,
    end: datetime,
    jobs: frozenset[str] | None,
    statuses: frozenset[str] | None,
) -> dict[str, dict[str, Any]]:
    """The highest version of each run of the range the archive holds, by id."""
    lines: list[dict[str, Any]] = []
    for day in _days(start, end):
        token: str | None = None
        while True:
            query = {"day": day.isoformat(), "next_token": token}
            page = api.call("GET", "/archive", query=query)
            for found in page.get("objects", []):
                lines += archive.decode(_download(found["url"]))
            token = page.get("next_token")
            if not token:
                break
    return archive.latest(
        line
        for line in lines
        if start <= _when(line) < end
        and (jobs is None or line.get("job_id") in jobs)
        and (statuses is None or line.get("status") in statuses)
    )


def _download(url: str) -> bytes:
    """An object of the archive, through its link (it carries its own authorization)."""
    if not url.startswith(("http://", "https://")):
        raise Failure(f"the archive's link is not http(s): {url[:80]}")
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as answer:  # noqa: S310 - http(s) checked above
            data: bytes = answer.read()
    except urllib.error.HTTPError as error:
        raise Failure(f"downloading an archive object failed: HTTP {error.code}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        raise Failure(f"downloading an archive object failed: {error}") from None
    return data


def merged(
    table: Iterable[dict[str, Any]], archived: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each run once: the table's copy where it still has one (the latest), else the
    archive's highest version; by fire time, then id."""
    runs = {run_id: {**line, "source": "archive"} for run_id, line in archived.items()}
    for run in table:
        runs[run["id"]] = {**run, "source": "table"}
    return sorted(runs.values(), key=lambda run: (_when(run), run["id"]))


def write(runs: Iterable[dict[str, Any]], form: str, out: IO[str]) -> int:
    """Write ``runs`` as JSON Lines or CSV; how many."""
    count = 0
    if form == "csv":
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for run in runs:
            row = {**run, "attempts": len(run.get("attempts") or [])}
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in CSV_COLUMNS})
            count += 1
        return count
    for run in runs:
        out.write(json.dumps(run, sort_keys=True) + "\n")
        count += 1
    return count


@click.command("export")
@click.option(
    "--from",
    "start",
    required=True,
    callback=_instant,
    metavar="ISO",
    help="the range's first fire time (inclusive): an instant with its offset, or a day",
)
@click.option(
    "--to",
    "end",
    required=True,
    callback=_instant,
    metavar="ISO",
    help="the range's end (exclusive)",
)
@click.option("--job", metavar="NAME", help="only this job's runs (its name, or its id)")
@click.option(
    "--status",
    "statuses",
    callback=_statuses,
    metavar="S[,S]",
    help="only runs in these statuses",
)
@click.option(
    "-o",
    "--format",
    "form",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines (every field, output and logs included) or CSV",
)
@click.option(
    "--output",
    "output_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write to this file [default: stdout]",
)
@click.option(
    "--archive-only",
    is_flag=True,
    help="read the archive only (what the runs table still holds is left out)",
)
@api_options
def export(
    api: Api,
    start: datetime,
    end: datetime,
    job: str | None,
    statuses: frozenset[str] | None,
    form: str,
    output_file: Path | None,
    archive_only: bool,
) -> None:
    """Export the runs of a range of fire times, from the runs table and the archive
    together (runs older than the table's retention come from the archive), each run once."""
    if end <= start:
        raise Failure("--to must come after --from", USAGE)
    jobs = _jobs(api, job)
    wanted = frozenset(jobs) if job is not None else None
    archived = archived_runs(api, start, end, wanted, statuses)
    table = [] if archive_only else table_runs(api, jobs, start, end, statuses)
    runs = merged(table, archived)
    if output_file is None:
        count = write(runs, form, sys.stdout)
    else:
        text = io.StringIO(newline="")
        count = write(runs, form, text)
        output_file.write_text(text.getvalue(), encoding="utf-8", newline="")
    from_archive = sum(1 for run in runs if run["source"] == "archive")
    click.echo(f"{count} runs ({from_archive} from the archive)", err=True)
