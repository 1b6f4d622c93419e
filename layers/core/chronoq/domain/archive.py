"""The archive: every ended run's record, kept in S3 after the runs table lets it expire
(docs/api/archive.md). Pure: no I/O.

Where: ``<prefix>/owner=<owner segment>/day=<YYYY-MM-DD>/<first>-<last>.jsonl.gz``.

- ``owner segment``: the owner itself, or a digest of it when it holds characters an S3 key or
  an Athena partition should not (chronoq.domain.owners): one owner's objects, and only its
  own, are under its prefix.
- ``day``: the UTC day of the run's ``scheduled_at`` (its fire time; a backfill's run has its
  fire time's day too): what the runs listings' ``since``/``until`` filter on, and the same for
  every version of a run, however late it ended or was written again.
- ``first``, ``last``: the lowest and highest version the object holds, so that an object's
  name follows from its content: a batch handed over again is written to the same names
  (overwriting them with the same bytes), never as more objects.

What: gzip JSON Lines, a line per version of an ended run: the run as the API shows it (status,
attempts, times, lag, trigger, output or the S3 location of it, error, notifications), its log
lines kept in the record (``logs``) and the S3 locations of those kept apart
(``log_objects``), and its ``version``.

Audit entries (docs/api/audit.md): each entry a job's audit trail gets is archived too,
under ``<prefix>/owner=<owner segment>/audit/day=<YYYY-MM-DD>/<first>-<last>.jsonl.gz``: in
its owner's prefix (what an erasure deletes), beside its runs' days (which the runs' table
and listings never read), ``day`` the UTC day of the entry's ``at``. A line per entry: the
entry as the API shows it (``GET /jobs/{id}/audit``) and its ``version`` (an entry is
written once: one version each).

Versions: a run is written again after it ends (the notes of its notifications, its end
counted): each write of an ended run is archived, with the stream record's sequence number
as its version (zero-padded to 40 digits: compared as text, they order as numbers). Readers
keep each run's highest version (``latest``).
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date
from typing import Any

from chronoq.domain.audit import AuditEntry
from chronoq.domain.owners import owner_segment
from chronoq.domain.runs import TERMINAL_STATUSES, Run

#: A version: a stream record's sequence number (DynamoDB's have 21 to 40 digits).
VERSION_DIGITS = 40
OBJECT_SUFFIX = ".jsonl.gz"
#: The name of an object within its owner's day.
OBJECT_NAME = re.compile(rf"^[0-9]{{{VERSION_DIGITS}}}-[0-9]{{{VERSION_DIGITS}}}\.jsonl\.gz$")
_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
#: What the API's view of a run leaves out (internal bookkeeping).
_INTERNAL = frozenset({"generation", "notify", "triggered"})  # (triggered: shown, never kept)
#: The columns of a line, as the archive's table (Glue, read by Athena with the JSON SerDe)
#: types them: every key of ``Archived.line`` (instants are ISO 8601 text in UTC:
#: ``from_iso8601_timestamp`` reads them).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "string"),
    ("job_id", "string"),
    ("owner", "string"),
    ("status", "string"),
    ("priority", "string"),
    ("trigger", "string"),
    ("scheduled_at", "string"),
    ("starts_at", "string"),
    ("queued_at", "string"),
    ("started_at", "string"),
    ("finished_at", "string"),
    ("lag_ms", "bigint"),
    ("flow_wait_ms", "bigint"),
    ("held_at", "string"),
    ("waiting_for", "string"),
    ("output", "string"),
    ("output_location", "string"),
    ("error", "string"),
    ("reason", "string"),
    (
        "attempts",
        "array<struct<attempt:int,started_at:string,finished_at:string,outcome:string,"
        "error:string>>",
    ),
    ("notifications", "map<string,string>"),
    ("rerun_of", "string"),
    ("backfill_id", "string"),
    ("start_deadline_seconds", "int"),
    # completion triggers: an after job's run's upstream runs; a cascade's run
    ("triggered_by", "array<string>"),
    ("cascade", "boolean"),
    ("logs", "array<string>"),
    ("log_objects", "array<string>"),
    ("version", "string"),
    # (a run's parameters, a JSON object of any shape: its JSON text, json_extract reads it)
    ("parameters", "string"),
)
#: The table's partitions: the owner's segment (given by every query: ``injected``) and the
#: day (``YYYY-MM-DD``), as the objects' keys name them.
PARTITIONS: tuple[tuple[str, str], ...] = (("owner_key", "string"), ("day", "string"))
#: The folder of an owner's audit entries, within its prefix.
AUDIT = "audit"
#: The columns of an audit entry's line (the audit table of Glue): every key of
#: ``ArchivedEntry.line``.
AUDIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("job_id", "string"),
    ("owner", "string"),
    ("at", "string"),
    ("request_id", "string"),
    ("action", "string"),
    ("by", "string"),
    ("by_name", "string"),
    ("source", "string"),
    ("changes", "array<struct<field:string,before:string,after:string>>"),
    ("detail", "map<string,string>"),
    ("version", "string"),
)


def version(sequence_number: str) -> str:
    """A stream record's sequence number as a version: 40 digits, zero-padded."""
    if not sequence_number.isdigit() or not sequence_number.isascii():
        raise ValueError(f"a sequence number is digits, not {sequence_number!r}")
    if len(sequence_number) > VERSION_DIGITS:
        raise ValueError(f"a sequence number has at most {VERSION_DIGITS} digits")
    return sequence_number.zfill(VERSION_DIGITS)


def day_of(run: Run) -> date:
    """The day a run's versions are archived under: its fire time's, in UTC."""
    return run.scheduled_at.astimezone(UTC).date()


def parse_day(text: str) -> date:
    """A day given as ``YYYY-MM-DD`` (ValueError for anything else)."""
    if not _DAY.fullmatch(text):
        raise ValueError("must be a day, YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text} is not a day of the calendar") from None


def owner_prefix(prefix: str, owner: str) -> str:
    """Where all of one owner's archive is."""
    return f"{prefix.strip('/')}/owner={owner_segment(owner)}/"


def day_prefix(prefix: str, owner: str, day: date) -> str:
    """Where one owner's runs of one day are."""
    return f"{owner_prefix(prefix, owner)}day={day.isoformat()}/"


def audit_day_prefix(prefix: str, owner: str, day: date) -> str:
    """Where one owner's audit entries of one day are."""
    return f"{owner_prefix(prefix, owner)}{AUDIT}/day={day.isoformat()}/"


def object_key(prefix: str, owner: str, day: date, first: str, last: str) -> str:
    """The object holding one owner's versions ``first`` to ``last`` of one day."""
    return f"{day_prefix(prefix, owner, day)}{first}-{last}{OBJECT_SUFFIX}"


@dataclass(frozen=True)
class Archived:
    """One version of an ended run, as it is archived."""

    version: str
    run: Run
    #: Its log lines kept in the record, and the S3 locations of those kept apart.
    logs: tuple[str, ...] = ()
    log_objects: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.run.status not in TERMINAL_STATUSES:
            raise ValueError(f"run {self.run.id} has not ended ({self.run.status.value})")

    @property
    def owner(self) -> str:
        return self.run.owner

    @property
    def id(self) -> str:
        return self.run.id

    @property
    def day(self) -> date:
        return day_of(self.run)

    def where(self, prefix: str) -> str:
        """The folder of its object: its owner's day."""
        return day_prefix(prefix, self.run.owner, self.day)

    def line(self) -> dict[str, Any]:
        """Its line of an archive object."""
        parameters = self.run.parameters
        return {
            **self.run.model_dump(mode="json", exclude=set(_INTERNAL)),
            "parameters": None if parameters is None else json.dumps(parameters),
            "logs": list(self.logs),
            "log_objects": list(self.log_objects),
            "version": self.version,
        }


@dataclass(frozen=True)
class ArchivedEntry:
    """An audit entry, as it is archived (its version: its stream record's)."""

    version: str
    entry: AuditEntry

    @property
    def owner(self) -> str:
        return self.entry.owner

    @property
    def id(self) -> str:
        return f"{self.entry.job_id}#{self.entry.key}"

    @property
    def day(self) -> date:
        """The UTC day of its ``at``."""
        return self.entry.at.astimezone(UTC).date()

    def where(self, prefix: str) -> str:
        """The folder of its object: its owner's audit entries of its day."""
        return audit_day_prefix(prefix, self.entry.owner, self.day)

    def line(self) -> dict[str, Any]:
        """Its line: the entry as the API shows it, and its version."""
        return {**self.entry.model_dump(mode="json"), "version": self.version}


@dataclass(frozen=True)
class ArchiveObject:
    """What one object of an owner's day will hold: its key, and its versions' lines."""

    key: str
    owner: str
    day: date
    versions: tuple[str, ...]
    lines: tuple[dict[str, Any], ...]

    def body(self) -> bytes:
        return encode(self.lines)


def objects(prefix: str, batch: Iterable[Archived | ArchivedEntry]) -> list[ArchiveObject]:
    """A batch's objects: one per owner and day (of runs, or of audit entries), its versions
    in order, named by its first and last version (the same batch makes the same objects,
    byte for byte)."""
    groups: dict[tuple[str, str, date], list[Archived | ArchivedEntry]] = {}
    for archived in batch:
        group = (archived.where(prefix), archived.owner, archived.day)
        groups.setdefault(group, []).append(archived)
    found = []
    for (where, owner, day), members in sorted(groups.items()):
        members.sort(key=lambda a: (a.version, a.id))
        first, last = members[0].version, members[-1].version
        found.append(
            ArchiveObject(
                key=f"{where}{first}-{last}{OBJECT_SUFFIX}",
                owner=owner,
                day=day,
                versions=tuple(a.version for a in members),
                lines=tuple(a.line() for a in members),
            )
        )
    return found


def encode(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """gzip JSON Lines (no time in the gzip header: the same lines, the same bytes)."""
    text = "".join(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n" for line in lines)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as zipped:
        zipped.write(text.encode())
    return out.getvalue()


def decode(data: bytes) -> list[dict[str, Any]]:
    """An archive object's lines."""
    text = gzip.decompress(data).decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def latest(lines: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each run's line of its highest version, by run id."""
    kept: dict[str, dict[str, Any]] = {}
    for line in lines:
        run_id = str(line["id"])
        held = kept.get(run_id)
        if held is None or str(line["version"]) > str(held["version"]):
            kept[run_id] = dict(line)
    return kept
