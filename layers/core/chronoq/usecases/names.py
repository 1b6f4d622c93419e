"""Job names are unique per owner: each name is held by an item of the jobs table, taken by
the API with a conditional write when a job is created or renamed. Jobs stored before names
were unique hold none: this claims their names, once, for the oldest job of each name, and
reports the names that more than one job of an owner still has (to be renamed or deleted)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from chronoq.domain.jobs import Job
from chronoq.usecases.ports import JobStore


@dataclass(frozen=True)
class Duplicate:
    owner: str
    name: str
    #: Oldest first: the first holds the name.
    job_ids: tuple[str, ...]


@dataclass
class NamesReport:
    #: Names held now by one of their jobs (each owner's names, once).
    names: int = 0
    #: Names more than one job of an owner has.
    duplicates: list[Duplicate] = field(default_factory=list)


def claim_existing_names(store: JobStore, now: datetime) -> NamesReport:
    """Claim the name of every stored job that holds none (one scan of the jobs table, a
    conditional write per name): the oldest job of a name gets it. Safe to run again, and
    while the API serves."""
    by_name: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in store.all_jobs():
        by_name[(job.owner, job.name)].append(job)
    report = NamesReport()
    for (owner, name), jobs in sorted(by_name.items()):
        jobs.sort(key=lambda j: (j.created_at, j.id))
        ids = tuple(j.id for j in jobs)
        holder = store.claim_name(owner, name, ids[0], now)
        if holder is None or holder in ids:
            report.names += 1
        if len(jobs) > 1:
            report.duplicates.append(Duplicate(owner, name, ids))
    return report
