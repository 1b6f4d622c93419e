"""Runs: one execution of a job, its attempts, and the occurrences that become runs."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from chronoq.domain.ids import window_offset_of
from chronoq.domain.time import Instant, format_instant


class Priority(StrEnum):
    """A run's priority; one SQS queue each, highest first."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


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
    BACKFILL = "backfill"  # a past fire time, run by POST /jobs/{id}/backfill
    RERUN = "rerun"  # a run that ended, run again: POST /runs/{id}/rerun, /jobs/{id}/rerun
    AFTER = "after"  # its upstream jobs' runs of one instant ended (schedule type ``after``)


#: Runs asked for now for an earlier fire time: they start when they are asked for (their
#: ``queued_at``), and no start deadline applies to them.
REQUESTED = frozenset({Trigger.BACKFILL, Trigger.RERUN, Trigger.AFTER})


def planned_start(
    run_id: str, trigger: Trigger, scheduled_at: datetime, queued_at: datetime | None
) -> datetime:
    """When a run is planned to start: a scheduled run at its fire time plus its window
    offset (in its id); a backfill or re-run when it was asked for; a manual run at its
    second."""
    if trigger is Trigger.SCHEDULE:
        return scheduled_at + timedelta(seconds=window_offset_of(run_id))
    if trigger in REQUESTED and queued_at is not None:
        return queued_at
    return scheduled_at


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
    #: A re-run: the run it runs again.
    rerun_of: str | None = None
    #: A backfill's run: the backfill.
    backfill_id: str | None = None
    #: A run of an ``after`` job: the upstream runs that made it (see domain.after).
    triggered_by: list[str] | None = None
    #: A re-run, a backfill's run, or a run they made, whose end triggers the ``after`` jobs
    #: following its job again (the request asked ``cascade: true``).
    cascade: bool = False
    #: Shown, never stored: the runs of ``after`` jobs this run's end made.
    triggered: list[str] | None = None
    #: A requested run's own start deadline (seconds after it was asked for: see
    #: Job.is_late); None: the default one.
    start_deadline_seconds: int | None = None
    #: When it first had to wait for its job's flow limits (or its backfill's pacing): it
    #: waited from then until ``started_at``.
    held_at: Instant | None = None
    #: Why it waits, noted by the worker while it holds it back (a flow's slot, a flow's
    #: rate); shown as ``waiting_for``.
    wait_reason: str | None = Field(default=None, exclude=True)
    #: The parameters it runs with (docs/api/secrets.md): a requested
    #: run's, its job's defaults overlaid by the request's; None: none (nothing is kept).
    parameters: dict[str, Any] | None = None

    @field_validator("parameters", mode="before")
    @classmethod
    def _kept_as_json(cls, value: Any) -> Any:
        """As the run's record keeps them: JSON text (``""``: none, as the state machine's
        first write records a run without parameters)."""
        if isinstance(value, str):
            return json.loads(value) if value else None
        return value or None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def waiting_for(self) -> str | None:
        """Why a run that has not started waits: what holds it back, else its turn."""
        if self.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            return None
        return self.wait_reason or "its turn: due, or queued behind runs due before it"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def starts_at(self) -> Instant:
        """When it was planned to start: its fire time plus its window offset, or, for a
        backfill or re-run, when it was asked for."""
        return planned_start(self.id, self.trigger, self.scheduled_at, self.queued_at)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lag_ms(self) -> int | None:
        """How long after its planned start it started."""
        if self.started_at is None:
            return None
        return math.floor((self.started_at - self.starts_at).total_seconds() * 1000)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flow_wait_ms(self) -> int | None:
        """How long it waited for its flow's limits (or its backfill's pacing)."""
        if self.held_at is None or self.started_at is None:
            return None
        return max(0, math.floor((self.started_at - self.held_at).total_seconds() * 1000))


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
    #: Its job's owner, when known (not kept in the time index: the dispatcher has the job).
    owner: str = ""
    #: A requested run's own start deadline (not kept in the time index: no scheduled run
    #: has one).
    start_deadline_seconds: int | None = None

    @property
    def starts_at(self) -> datetime:
        """Its planned start (the fire time plus its window offset): where the time index
        keeps it, and when it is sent for."""
        return planned_start(self.run_id, self.trigger, self.scheduled_at, None)

    @classmethod
    def of(cls, run: Run) -> Occurrence:
        return cls(
            job_id=run.job_id,
            run_id=run.id,
            scheduled_at=run.scheduled_at,
            priority=run.priority,
            generation=run.generation,
            trigger=run.trigger,
            owner=run.owner,
            start_deadline_seconds=run.start_deadline_seconds,
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
    #: A run its flow held back: when it first had to wait.
    held_at: Instant | None = None
    #: Not to be taken before then: a held run's next look at its flow, or (``reserved``)
    #: the second its flow reserved for its start.
    not_before: Instant | None = None
    reserved: bool = False
    #: The job's owner: the message's group on its queue (queues are keyed by owner as well
    #: as by priority), not part of its body.
    owner: str = ""
    #: A requested run's own start deadline (in the body only when it has one).
    start_deadline_seconds: int | None = None
    #: Sent by a wake: a slot of the flow it was parked on was given back (in the body only
    #: then).
    woken: bool = False

    @classmethod
    def of(cls, run: Run, queued_at: datetime) -> RunMessage:
        """The message that asks for ``run`` (queued at ``queued_at`` if it never was)."""
        return cls(
            job_id=run.job_id,
            run_id=run.id,
            scheduled_at=run.scheduled_at,
            queued_at=run.queued_at or queued_at,
            generation=run.generation,
            trigger=run.trigger,
            owner=run.owner,
            start_deadline_seconds=run.start_deadline_seconds,
        )

    @property
    def starts_at(self) -> datetime:
        """The run's planned start (see ``planned_start``)."""
        return planned_start(self.run_id, self.trigger, self.scheduled_at, self.queued_at)

    @property
    def due_at(self) -> datetime:
        """When a worker should have it: its planned start, or when its flow lets it."""
        return self.not_before or self.starts_at

    def body(self) -> str:
        """The message as sent (JSON): the flow's fields only when a flow held the run."""
        unused = {"held_at", "not_before", "reserved"} if self.held_at is None else set()
        if self.start_deadline_seconds is None:
            unused.add("start_deadline_seconds")
        if not self.woken:
            unused.add("woken")
        return self.model_dump_json(exclude={"owner", *unused})


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
