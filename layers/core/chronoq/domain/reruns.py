"""Re-runs: a run that ended, run again as a new run of the same job and fire time
(``trigger: "rerun"``, ``rerun_of`` its id); or every run of a range that ended so."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import Field, field_validator

from chronoq.domain import limits as lim
from chronoq.domain.base import Model
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import FinalStatus
from chronoq.domain.parameters import Parameters
from chronoq.domain.runs import RunStatus
from chronoq.domain.schedules import bounded_instant
from chronoq.domain.time import IsoInstant


def _default_statuses() -> list[RunStatus]:
    return [RunStatus.FAILED, RunStatus.TIMED_OUT]


class RerunRequest(Model):
    """The body of ``POST /jobs/{id}/rerun``: the runs scheduled from ``from`` (inclusive)
    to ``to`` (exclusive) that ended with one of ``statuses``."""

    start: IsoInstant = Field(alias="from")
    to: IsoInstant
    statuses: list[FinalStatus] = Field(
        default_factory=_default_statuses, min_length=1, max_length=len(RunStatus)
    )
    #: Each re-run must start within this many seconds of the request (MISSED if not).
    start_deadline_seconds: int = Field(
        default=lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS,
        ge=1,
        le=lim.MAX_START_DEADLINE_SECONDS,
        strict=True,
    )

    #: Completion triggers: the re-runs' ends trigger the jobs following this one again.
    cascade: bool = Field(default=False, strict=True)
    # --- run parameters (docs/api/secrets.md) ------------------
    #: Each re-run's parameters overlay the job's defaults and its original run's.
    parameters: Parameters | None = None

    @field_validator("start", "to")
    @classmethod
    def _whole_seconds(cls, value: datetime) -> datetime:
        return bounded_instant(value)


def check_range(request: RerunRequest) -> None:
    """A range of at most MAX_RERUN_DAYS (it may reach into the future: only runs that have
    ended are re-run)."""
    if request.start >= request.to:
        raise InvalidRequest("to", "must be after from")
    if request.to - request.start > timedelta(days=lim.MAX_RERUN_DAYS):
        raise InvalidRequest("to", f"must be at most {lim.MAX_RERUN_DAYS} days after from")
