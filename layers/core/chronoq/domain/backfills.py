"""Backfills: a job's schedule run over a past range, each fire time as a run of its own
(``trigger: "backfill"``), paced: at most ``max_in_flight`` of them under way at once.

A backfill keeps the schedule it was asked with. Its first ``max_in_flight`` runs are made
when it is asked for; each run that starts (or ends without starting) makes the run
``max_in_flight`` fire times after its own (see usecases.start): so at most that many of its
runs are under way and at most that many wait, however long its range. Its runs' ids are
derived from the backfill and the fire time: making one twice is harmless.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chronoq.domain import keys
from chronoq.domain import limits as lim
from chronoq.domain.base import Model
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.parameters import Parameters
from chronoq.domain.schedules import AnySchedule, Schedule, bounded_instant, next_fire
from chronoq.domain.time import Instant, IsoInstant, format_instant

#: Prefix of a backfill's item in its job's partition of the runs table (see domain.keys).
ITEM_PREFIX = keys.BACKFILL


class BackfillState(StrEnum):
    RUNNING = "RUNNING"  # runs still to make, or under way
    COMPLETED = "COMPLETED"  # every run made has ended
    CANCELLED = "CANCELLED"  # POST .../cancel: no further run; those not ended, cancelled


class BackfillRequest(Model):
    """The body of ``POST /jobs/{id}/backfill``: every fire time from ``from`` (inclusive)
    to ``to`` (exclusive), both in the past."""

    start: IsoInstant = Field(alias="from")
    to: IsoInstant
    #: Each of its runs must start within this many seconds of being made (MISSED if not).
    start_deadline_seconds: int = Field(
        default=lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS,
        ge=1,
        le=lim.MAX_START_DEADLINE_SECONDS,
        strict=True,
    )
    #: Completion triggers: its runs' ends trigger the jobs following this one again.
    cascade: bool = Field(default=False, strict=True)

    # --- run parameters (docs/api/secrets.md) ------------------
    #: Its runs' parameters: they overlay the job's defaults.
    parameters: Parameters | None = None

    @field_validator("start", "to")
    @classmethod
    def _whole_seconds(cls, value: datetime) -> datetime:
        return bounded_instant(value)


class Backfill(BaseModel):
    """A backfill as kept."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    job_id: str
    owner: str
    start: Instant
    to: Instant
    state: BackfillState
    #: Fire times in the range.
    total: int
    max_in_flight: int
    #: The job's schedule when the backfill was asked for (its fire times are those).
    schedule: Schedule
    created_at: Instant
    finished_at: Instant | None = None
    #: Each of its runs must start within this many seconds of being made.
    start_deadline_seconds: int = lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS
    #: Completion triggers: its runs' ends trigger the jobs following its job again.
    cascade: bool = False
    #: How many of its runs have ended, each counted once as it ends (usecases.progress);
    #: None: a backfill made before run ends were counted (its progress is read from its
    #: runs).
    ended: int | None = None
    #: How many of its runs ended in each final status (as counted).
    runs: dict[str, int] = Field(default_factory=dict)
    #: Its runs' parameters (the job's defaults overlaid by the request's); None: none.
    parameters: dict[str, Any] | None = None

    @property
    def counted(self) -> bool:
        """Are its runs' ends counted on it (``ended``, ``runs``)?"""
        return self.ended is not None

    def view(self) -> dict[str, Any]:
        """The API's JSON form."""
        data = self.model_dump(mode="json", exclude={"start", "schedule"})
        return {"id": data.pop("id"), "from": format_instant(self.start), **data}

    def later(self, fire: datetime, steps: int) -> datetime | None:
        """The fire time of the range ``steps`` after ``fire`` (None: past the range)."""
        current: datetime | None = fire
        for _ in range(steps):
            current = next_fire(self.schedule, current) if current else None
        return current if current is not None and current < self.to else None


def fire_times(schedule: AnySchedule, start: datetime, to: datetime, most: int) -> list[datetime]:
    """The schedule's fire times from ``start`` (inclusive) to ``to`` (exclusive): at most
    ``most`` + 1 of them (one more than allowed says there are too many)."""
    found: list[datetime] = []
    current = next_fire(schedule, start - timedelta(seconds=1))
    while current is not None and current < to and len(found) <= most:
        found.append(current)
        current = next_fire(schedule, current)
    return found


def check_range(request: BackfillRequest, now: datetime) -> None:
    """A past range, not too far back."""
    if request.start >= request.to:
        raise InvalidRequest("to", "must be after from")
    if request.to > now:
        raise InvalidRequest("to", "must not be in the future (a backfill runs past fire times)")
    if request.start < now - timedelta(days=lim.MAX_BACKFILL_DAYS):
        raise InvalidRequest("from", f"must be within the last {lim.MAX_BACKFILL_DAYS} days")
