"""Jobs stored before a rule of the API was made stricter (a label ending in a newline, a
name that shows nothing, ...) still read back and run (domain.base.STORED); this lists them,
each with what the API would refuse today, so that their owners change them: a change must
pass today's rules."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from chronoq.domain.jobs import Job, JobSpec
from chronoq.http_api import field_path
from chronoq.usecases.ports import JobStore


@dataclass(frozen=True)
class Problem:
    #: Where, as the API's errors name it (``labels.team\n``).
    field: str
    message: str


@dataclass(frozen=True)
class NeedsChange:
    owner: str
    job_id: str
    name: str
    problems: tuple[Problem, ...]


def problems_of(job: Job) -> tuple[Problem, ...]:
    """What today's rules refuse in the job's spec (none: it would be created as it is)."""
    try:
        JobSpec.model_validate(job.spec().model_dump(mode="json", by_alias=True))
    except ValidationError as error:
        return tuple(
            Problem(field_path(e["loc"]) or "", e["msg"].removeprefix("Value error, "))
            for e in error.errors()
        )
    return ()


def jobs_needing_change(store: JobStore) -> list[NeedsChange]:
    """Every stored job today's rules would refuse (one scan of the jobs table), by owner."""
    found = [
        NeedsChange(job.owner, job.id, job.name, problems)
        for job in store.all_jobs()
        if (problems := problems_of(job))
    ]
    return sorted(found, key=lambda n: (n.owner, n.job_id))
