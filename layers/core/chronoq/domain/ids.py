"""Identifiers and keys: job ids, deterministic run ids, shards and minute buckets."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from chronoq import resources as r

_RUN_STAMP = "%Y%m%dT%H%M%SZ"
_BUCKET_MINUTE = "%Y%m%d%H%M"


def new_job_id() -> str:
    return "job_" + secrets.token_hex(8)


def run_stamp(at: datetime) -> str:
    """The time part of a run id: ``at``'s second, in UTC (what run ids sort by)."""
    return at.astimezone(UTC).strftime(_RUN_STAMP)


def run_id(job_id: str, scheduled_at: datetime, generation: int = 1) -> str:
    """The id of the run of ``job_id`` scheduled at ``scheduled_at`` by the job's schedule
    ``generation``: the same inputs always give the same id, so writing or dispatching an
    occurrence twice is harmless, while the same instant planned again after a change of
    the job (a new generation) is another run, never confused with one dispatched before
    the change. Ids of one job sort by time."""
    stamp = f"{job_id}_{run_stamp(scheduled_at)}"
    return stamp if generation == 1 else f"{stamp}-g{generation}"


def manual_run_id(job_id: str, at: datetime) -> str:
    """The id of a run triggered by hand: time-ordered like the others, never equal to a
    scheduled occurrence's id."""
    return f"{run_id(job_id, at)}-m{secrets.token_hex(3)}"


def job_id_of_run(run_id_: str) -> str:
    job_id, sep, stamp = run_id_.partition("-")[0].rpartition("_")
    if not sep or not job_id.startswith("job_") or len(stamp) != 16:
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
    return minute_of(minute) - timedelta(seconds=r.DISPATCH_AHEAD_SECONDS)


def first_unopened(instant: datetime) -> datetime:
    """The first minute no dispatcher tick up to ``instant`` has opened."""
    return minute_of(instant + timedelta(seconds=r.DISPATCH_AHEAD_SECONDS)) + timedelta(minutes=1)
