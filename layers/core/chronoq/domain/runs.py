"""Runs: one execution of a job, its attempts, and the occurrences that become runs."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, computed_field

from chronoq.domain.time import Instant, format_instant
from chronoq.resources import Priority


class RunStatus(StrEnum):
    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    SKIPPED = "SKIPPED"
    MISSED = "MISSED"
    CANCELLED = "CANCELLED"


#: The statuses a run ends in.
TERMINAL_STATUSES = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.TIMED_OUT,
        RunStatus.SKIPPED,
        RunStatus.MISSED,
        RunStatus.CANCELLED,
    }
)
#: The statuses of a run that has not ended yet.
ACTIVE_STATUSES = frozenset(RunStatus) - TERMINAL_STATUSES


class Trigger(StrEnum):
    SCHEDULE = "schedule"  # an occurrence of the job's schedule
    MANUAL = "manual"  # POST /jobs/{id}/trigger


class Attempt(BaseModel):
    """One attempt of a run."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    attempt: int
    started_at: Instant
    finished_at: Instant
    outcome: str  # SUCCEEDED, or the error's name
    error: str | None = None


class Run(BaseModel):
    """One execution of a job, scheduled or triggered."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    job_id: str
    owner: str
    status: RunStatus
    priority: Priority
    trigger: Trigger = Trigger.SCHEDULE
    scheduled_at: Instant
    queued_at: Instant | None = None
    started_at: Instant | None = None
    finished_at: Instant | None = None
    #: The output (JSON text) when it is small enough for the record; else ``output_location``.
    output: str | None = None
    output_location: str | None = None
    error: str | None = None
    #: Why a run ended without executing (SKIPPED, MISSED, CANCELLED).
    reason: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    #: How each notification of the run's end went, per channel (sns, webhook, email).
    notifications: dict[str, str] = Field(default_factory=dict)
    generation: int = 1
    #: Its job had a ``notify`` block when the run was created: the notifier hears of its end
    #: whatever the status (otherwise only of the statuses the SNS topic is told about).
    notify: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lag_ms(self) -> int | None:
        if self.started_at is None:
            return None
        return math.floor((self.started_at - self.scheduled_at).total_seconds() * 1000)


class Occurrence(BaseModel):
    """One fire time of one job, as kept in the schedule table (the time index)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    run_id: str
    scheduled_at: Instant
    priority: Priority
    generation: int = 1
    #: (The time index holds scheduled occurrences only; a manual run is sent at once.)
    trigger: Trigger = Trigger.SCHEDULE

    @classmethod
    def of(cls, run: Run) -> Occurrence:
        return cls(
            job_id=run.job_id,
            run_id=run.id,
            scheduled_at=run.scheduled_at,
            priority=run.priority,
            generation=run.generation,
            trigger=run.trigger,
        )


class RunMessage(BaseModel):
    """The SQS message that asks a worker to start one run."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    run_id: str
    scheduled_at: Instant
    queued_at: Instant
    #: The job's generation the occurrence was planned under (see Job.is_current).
    generation: int = 1
    trigger: Trigger = Trigger.SCHEDULE


# --- Log lines --------------------------------------------------------------------------------

_ATTEMPT = re.compile(r"\[attempt (\d+)\]")


def log_line(attempt: int, message: str, at: datetime | None = None) -> str:
    """One log line as kept: instant, attempt, message."""
    return f"{format_instant(at or datetime.now(UTC))} [attempt {attempt}] {message}"


def log_size(lines: list[str]) -> int:
    """What log lines weigh in a run record (``log_bytes``): their bytes and a separator each."""
    return sum(len(line.encode()) + 1 for line in lines)


def attempt_of_line(line: str) -> int:
    """The attempt a kept log line belongs to (0 if it names none)."""
    match = _ATTEMPT.search(line)
    return int(match.group(1)) if match else 0
