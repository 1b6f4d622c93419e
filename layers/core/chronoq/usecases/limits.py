"""What an owner's backfills and re-runs hold, read without counting anything that grows
(see domain.limits): what the API checks a backfill or re-run against, and what a
``GET /limits`` shows."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from chronoq.domain import flow, inflight
from chronoq.domain import limits as lim
from chronoq.domain.backfills import BackfillState
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Limits, Usage
from chronoq.usecases.ports import (
    BackfillStore,
    CalendarStore,
    FlowStore,
    JobStore,
    SecretStore,
    UsageStore,
)


class OwnerUsageStore(BackfillStore, UsageStore, Protocol):
    """What an owner's usage is read from and given back to: its usage item, its backfills."""


def owner_usage(store: OwnerUsageStore, owner: str) -> Usage:
    """The owner's usage: its item (one consistent read), and the fire times its RUNNING
    backfills have not ended yet, read from those backfills (one batch read of at most
    ``running_backfills_per_owner`` items; none when none runs). A backfill the usage names
    that is gone (expired) or no longer RUNNING is taken out of it."""
    usage = store.get_usage(owner)
    keys = usage.keys()
    if not keys:
        return usage
    found = {(b.job_id, b.id): b for b in store.get_backfills(keys)}
    remaining = 0
    for job_id, backfill_id in keys:
        backfill = found.get((job_id, backfill_id))
        if backfill is None or backfill.state is not BackfillState.RUNNING:
            store.release_backfill(owner, job_id, backfill_id)
            usage = usage.left(job_id, backfill_id)
            continue
        remaining += max(backfill.total - (backfill.ended or 0), 0)
    return replace(usage, backfill_runs=remaining)


class OwnerLimitsStore(OwnerUsageStore, CalendarStore, FlowStore, JobStore, SecretStore, Protocol):
    """What ``GET /limits`` reads: the owner's usage, job count, flow item, secrets, calendars."""


def owner_limits(
    store: OwnerLimitsStore, owner: str, limits: Limits, max_jobs: int, now: datetime
) -> dict[str, Any]:
    """Each of the owner's limits and how much of it is used (``GET /limits``): its jobs (one
    read of its count), its backfills and re-runs (see ``owner_usage``), its runs asked for
    under way (one read of its flow item), all its runs in flight (one read of its count),
    its secrets (one read), its calendars (one read); a job's triggers waiting are counted
    per job, as a trigger asks (its limit only)."""
    in_flight = store.get_flow(flow.owner_item_key(owner))
    running = store.get_in_flight(inflight.item_key(owner)).live(now)
    return {
        "owner": owner,
        "jobs": {"limit": max_jobs, "used": store.job_count(owner)},
        **owner_usage(store, owner).view(limits),
        "asked_runs_in_flight": {
            "limit": limits.asked_runs_in_flight,
            "used": len(in_flight.holders),
        },
        "runs_in_flight": {"limit": limits.runs_in_flight, "used": max(running, 0)},
        "waiting_triggers_per_job": {"limit": limits.waiting_triggers_per_job},
        "secrets_per_owner": {
            "limit": limits.secrets_per_owner,
            "used": len(store.get_secrets(owner)),
        },
        # business calendars: a fixed limit (lim.DEFAULT_MAX_CALENDARS_PER_OWNER)
        "calendars_per_owner": {
            "limit": lim.DEFAULT_MAX_CALENDARS_PER_OWNER,
            "used": len(store.get_calendars(owner)),
        },
    }


def end_backfills_of(store: OwnerUsageStore, job: Job, now: datetime) -> None:
    """Cancel the RUNNING backfills of a job that is gone (their later fire times would never
    be made): each ended and taken out of its owner's usage. One read of the usage, and one
    read and one transaction per backfill running (at most running_backfills_per_job)."""
    for backfill_id in sorted(store.get_usage(job.owner).running.get(job.id, frozenset())):
        backfill = store.get_backfill(job.id, backfill_id)
        if backfill is None:
            store.release_backfill(job.owner, job.id, backfill_id)
        else:
            store.end_backfill(backfill, BackfillState.CANCELLED, now)
