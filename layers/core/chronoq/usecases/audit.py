"""Jobs' audit trails (docs/api/audit.md): an entry added once a change is stored (one
write per change: nothing per run), and the trail read back, newest first.

The use cases that change a job (jobs, backfills, reruns) each add one entry per change they
made, after it is stored; a refused or failed change adds none. The caller (who, from what,
which request) comes from the request, as the API resolves it (chronoq.domain.audit.Caller);
a use case called without one (a script, a test) records the owner as the caller, from the
API, under a request id of its own."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.domain import audit
from chronoq.domain.audit import Action, AuditEntry, Caller
from chronoq.domain.errors import NotFound
from chronoq.domain.jobs import Job
from chronoq.usecases.pages import Listing, PageTokens
from chronoq.usecases.ports import AuditTrail, JobStore

logger = logging.getLogger(__name__)


def record(
    trail: AuditTrail,
    at: datetime,
    owner: str,
    job_id: str,
    action: Action,
    by: Caller | None,
    changes: list[audit.Change] | None = None,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Add the entry of a change made (and stored) at ``at``. The change stands whatever
    becomes of its entry: an entry that cannot be kept (the table unavailable after the SDK's
    retries) is logged, whole, as an error, rather than answering an error for a change that
    was made (which a client might make again)."""
    caller = by or Caller(subject=owner, request_id=f"chronoq-{uuid.uuid4()}")
    entry = AuditEntry(
        job_id=job_id,
        owner=owner,
        at=at,
        request_id=caller.request_id,
        action=action,
        by=caller.subject,
        by_name=caller.name,
        source=caller.source,
        changes=changes or [],
        detail=dict(detail or {}),
    )
    try:
        trail.append(entry)
    except Exception:
        logger.exception("audit entry not kept: %s", entry.model_dump_json())


def spec_change(before: Job | None, after: Job) -> list[audit.Change]:
    """The fields of a job's spec a change changed; of a new job (``before`` None), those it
    was given (the others have their defaults)."""
    if before is None:
        return audit.changes(None, after.spec().model_dump(mode="json", exclude_defaults=True))
    return audit.changes(
        before.spec().model_dump(mode="json"), after.spec().model_dump(mode="json")
    )


def state_change(before: Job | None, after: Job | None, now: datetime) -> list[audit.Change]:
    """The change of a job's state (None: no job)."""
    return audit.changes(
        {"state": before.as_of(now).state.value} if before else None,
        {"state": after.as_of(now).state.value} if after else None,
    )


@dataclass
class AuditOperations:
    """The API's reading of a job's audit trail."""

    trail: AuditTrail
    jobs: JobStore
    pages: PageTokens

    def page(
        self,
        owner: str,
        job_id: str,
        limit: int = r.DEFAULT_PAGE_LIMIT,
        next_token: str | None = None,
    ) -> Listing[AuditEntry]:
        """A page of the job's entries, newest first, also once the job is deleted (until they
        expire): one query of the job's partition. A job none of whose entries is the owner's
        is not found, unless it is the owner's own (one made before its trail began)."""
        listing = f"audit:{job_id}"
        after = self.pages.open(owner, listing, next_token)
        page = self.trail.page(job_id, owner, limit, after)
        if not page.items and after is None:
            job = self.jobs.get_job(job_id)
            if job is None or job.owner != owner:
                raise NotFound(f"job {job_id} not found")
        return self.pages.listing(owner, listing, page)
