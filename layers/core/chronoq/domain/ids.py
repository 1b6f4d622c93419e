"""Identifiers and keys: job ids, deterministic run ids, shards and minute buckets."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from chronoq.domain import keys
from chronoq.domain import limits as lim

_RUN_STAMP = "%Y%m%dT%H%M%SZ"
_BUCKET_MINUTE = "%Y%m%d%H%M"


def new_job_id() -> str:
    return keys.JOB + secrets.token_hex(8)


def run_stamp(at: datetime) -> str:
    """The time part of a run id: ``at``'s second, in UTC (what run ids sort by)."""
    return at.astimezone(UTC).strftime(_RUN_STAMP)


def run_id(job_id: str, scheduled_at: datetime, generation: int = 1, offset: int = 0) -> str:
    """The id of the run of ``job_id`` scheduled at ``scheduled_at`` by the job's schedule
    ``generation``: the same inputs always give the same id, so writing or dispatching an
    occurrence twice is harmless, while the same instant planned again after a change of
    the job (a new generation) is another run, never confused with one dispatched before
    the change. Ids of one job sort by time. ``offset``: the seconds after its fire time the
    run is planned to start at, within its schedule's window (``-w<offset>``: derived from
    the job and the instant, so the id stays the same whoever plans it)."""
    stamp = f"{job_id}_{run_stamp(scheduled_at)}"
    if generation != 1:
        stamp += f"-g{generation}"
    return f"{stamp}-w{offset}" if offset else stamp


def window_offset_of(run_id_: str) -> int:
    """The seconds after its fire time a scheduled run is planned to start at (see
    ``run_id``); 0 for a run without a window."""
    for part in run_id_.split("-")[1:]:
        if part.startswith("w") and part[1:].isdigit():
            return int(part[1:])
    return 0


def new_backfill_id(now: datetime) -> str:
    """The id of a new backfill: ``bf`` and its creation in milliseconds (hexadecimal: ids
    of one job's backfills sort by creation), then random characters."""
    return f"bf{round(now.timestamp() * 1000):011x}{secrets.token_hex(2)}"


def backfill_run_id(job_id: str, fire: datetime, backfill_id: str) -> str:
    """The id of a backfill's run of fire time ``fire``: the same for the same backfill and
    fire time (creating it twice is harmless), never equal to a scheduled occurrence's."""
    return f"{run_id(job_id, fire)}-{backfill_id}"


def backfill_id_of(run_id_: str) -> str | None:
    """The backfill a run belongs to (see ``backfill_run_id``), or None."""
    for part in run_id_.split("-")[1:]:
        if part.startswith("bf"):
            return part
    return None


def is_asked(run_id_: str) -> bool:
    """Was the run asked for (a manual trigger, a re-run, a backfill's run), rather than
    planned by its job's schedule? (Its id says: see the ids above and below.)"""
    return any(part[:1] in ("m", "r") or part.startswith("bf") for part in run_id_.split("-")[1:])


def rerun_run_id(job_id: str, scheduled_at: datetime) -> str:
    """The id of a re-run of a run scheduled at ``scheduled_at``: time-ordered with it,
    never equal to another run's."""
    return f"{run_id(job_id, scheduled_at)}-r{secrets.token_hex(3)}"


def manual_run_id(job_id: str, at: datetime) -> str:
    """The id of a run triggered by hand: time-ordered like the others, never equal to a
    scheduled occurrence's id."""
    return f"{run_id(job_id, at)}-m{secrets.token_hex(3)}"


def job_id_of_run(run_id_: str) -> str:
    job_id, sep, stamp = run_id_.partition("-")[0].rpartition("_")
    if not sep or not job_id.startswith(keys.JOB) or len(stamp) != 16:
        raise ValueError(f"not a run id: {run_id_!r}")
    return job_id


def shard_of(job_id: str, shards: int) -> int:
    digest = hashlib.blake2b(job_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def minute_of(instant: datetime) -> datetime:
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


def bucket(minute: datetime, shard: int) -> str:
    """Partition key of the schedule table: ``YYYYMMDDHHMM#SS``."""
    return f"{minute_of(minute).strftime(_BUCKET_MINUTE)}#{shard:02d}"


def minute_of_bucket(key: str) -> datetime:
    return datetime.strptime(key.partition("#")[0], _BUCKET_MINUTE).replace(tzinfo=UTC)


def minutes(first: datetime, last: datetime) -> list[datetime]:
    """Every minute from ``first`` to ``last`` inclusive."""
    out, current = [], minute_of(first)
    while current <= last:
        out.append(current)
        current += timedelta(minutes=1)
    return out


def opened_at(minute: datetime) -> datetime:
    """The first instant a dispatcher tick opens ``minute`` at (see DISPATCH_AHEAD_SECONDS)."""
    return minute_of(minute) - timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS)


def first_unopened(instant: datetime) -> datetime:
    """The first minute no dispatcher tick up to ``instant`` has opened."""
    return minute_of(instant + timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS)) + timedelta(minutes=1)


# --- completion triggers (see domain.after) ---------------------------------------------------


def after_run_id(job_id: str, instant: datetime) -> str:
    """The id of ``after`` job ``job_id``'s run for the instant ``instant`` (its upstreams'
    ``scheduled_at``): the same whoever creates it, however often an upstream's end is heard,
    and never equal to a scheduled, manual or backfill run's id."""
    return f"{run_id(job_id, instant)}-a"


def cascaded_run_id(job_id: str, instant: datetime, cascading_run_id: str) -> str:
    """The id of ``after`` job ``job_id``'s run for ``instant`` caused by a re-run or a
    backfill's run that asked to cascade (``cascading_run_id``): derived from that run, so
    never the original downstream run's, and the same however often its end is heard."""
    digest = hashlib.blake2b(cascading_run_id.encode(), digest_size=5).hexdigest()
    return f"{run_id(job_id, instant)}-a{digest}"
