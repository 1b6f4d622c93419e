"""Pausing and resuming many jobs at once: the caller's jobs that carry every label of a
selector, a page at a time.

A request takes one page of the owner's jobs that match (the listing of ``GET /jobs?label=``:
the owner index, in order of creation, at most ``limit`` jobs, a sealed ``next_token`` to go
on) and pauses (resumes) each with the single job's own use case (JobOperations.pause_job,
resume_job): the same rules (the run ``next_run_at`` announces runs exactly once;
occurrences that fell in the pause are not made up), the same audit entry per job, and
nothing more. A job that needs no change is skipped, and the answer says why: already paused
(not paused), completed, or changed or deleted between the listing and the change (a
conflict: ask again). Pausing or resuming is idempotent by nature: the same request again
changes nothing more, and says so.

A selector is required: without one nothing is done (422 naming ``label``), so that nobody
pauses every job by mistake. The token of a page is sealed for the owner, the action and
the selector: it continues that request only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from chronoq import resources as r
from chronoq.domain.audit import Caller
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import Job, JobState
from chronoq.domain.labels import Selector, matches
from chronoq.usecases.jobs import JobOperations
from chronoq.usecases.pages import Listing
from chronoq.usecases.ports import Page


class Action(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"


class Skip(StrEnum):
    """Why a matching job was left as it was."""

    #: (pause) it is paused already
    ALREADY_PAUSED = "already_paused"
    #: (resume) it is not paused
    NOT_PAUSED = "not_paused"
    #: its schedule has no run left
    COMPLETED = "completed"
    #: it changed meanwhile (another request): ask again
    CONFLICT = "conflict"
    #: it was deleted meanwhile
    DELETED = "deleted"


@dataclass(frozen=True)
class Outcome:
    """One matching job: as it is after the request, and why it was skipped (None: it was
    paused, or resumed, by this request)."""

    job: Job
    skipped: Skip | None = None
    message: str | None = None

    def view(self) -> dict[str, object]:
        """The API's form: the job's id, name, state and next run (as GET /jobs shows them),
        and for a job skipped, why."""
        shown: dict[str, object] = self.job.model_dump(mode="json", include=_SHOWN)
        if self.skipped is not None:
            shown["reason"] = self.skipped.value
            shown["message"] = self.message
        return shown


_SHOWN = {"id", "name", "state", "next_run_at"}


def act_on_labelled(
    jobs: JobOperations,
    action: Action,
    owner: str,
    selectors: tuple[Selector, ...],
    limit: int = r.DEFAULT_PAGE_LIMIT,
    next_token: str | None = None,
    by: Caller | None = None,
) -> Listing[Outcome]:
    """Pause (resume) one page of ``owner``'s jobs carrying every label of ``selectors``:
    each job's outcome, in order of creation, and the token of the next page."""
    if not selectors:
        raise InvalidRequest(
            "label",
            f"give at least one selector key=value (e.g. label=team=data): {action.value} acts"
            " on the jobs that carry every label given, never on all of them by default",
        )
    listing = f"jobs/{action.value}?" + "&".join(f"label={k}={v}" for k, v in selectors)
    after = jobs.pages.open(owner, listing, next_token)
    page = jobs.store.page_jobs(owner, limit, after, lambda job: matches(job.labels, selectors))
    act = _pause if action is Action.PAUSE else _resume
    outcomes = [act(jobs, owner, job, by) for job in page.items]
    return jobs.pages.listing(owner, listing, Page(outcomes, page.after))


def _pause(jobs: JobOperations, owner: str, job: Job, by: Caller | None) -> Outcome:
    shown = job.as_of(jobs.clock())
    if shown.state is JobState.PAUSED:
        return Outcome(shown, Skip.ALREADY_PAUSED, "the job is paused already")
    if shown.state is JobState.COMPLETED:
        return Outcome(shown, Skip.COMPLETED, "the job is COMPLETED: it has no runs left")
    return _changed(shown, lambda: jobs.pause_job(owner, job.id, by))


def _resume(jobs: JobOperations, owner: str, job: Job, by: Caller | None) -> Outcome:
    shown = job.as_of(jobs.clock())
    if shown.state is JobState.COMPLETED:
        return Outcome(shown, Skip.COMPLETED, "the job is COMPLETED: it has no runs left")
    if shown.state is not JobState.PAUSED:
        return Outcome(shown, Skip.NOT_PAUSED, f"the job is {shown.state.value}, not paused")
    return _changed(shown, lambda: jobs.resume_job(owner, job.id, by))


def _changed(shown: Job, change: Callable[[], Job]) -> Outcome:
    """The single job's use case applied (its own fresh read, conditional write and audit
    entry); a job changed or deleted since it was listed, skipped and said so. (A job that
    another request paused between the listing and this read is reported paused: it is, and
    the single-job use case left it as it was, with no entry.)"""
    try:
        return Outcome(change())
    except NotFound:
        return Outcome(shown, Skip.DELETED, "the job was deleted meanwhile")
    except Conflict as conflict:
        return Outcome(shown, Skip.CONFLICT, f"{conflict} (ask again to act on it)")
