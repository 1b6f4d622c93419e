"""The domain models: what a job is, what a run is. Pure pydantic, no I/O."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, computed_field, field_validator

from chronoq.resources import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS


class Priority(StrEnum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class JobState(StrEnum):
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"


class RunStatus(StrEnum):
    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"


TERMINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT})


def utc_second(value: datetime) -> datetime:
    """``value`` in UTC, rounded up to the whole second (chronoq's precision)."""
    value = value.astimezone(UTC)
    if value.microsecond:
        value = value.replace(microsecond=0) + timedelta(seconds=1)
    return value


def format_instant(value: datetime) -> str:
    """The wire format of an instant: ISO 8601 in UTC with a ``Z``, milliseconds if any."""
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + "Z"


def parse_instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def describe_error(error: str | None, cause: str | None) -> str | None:
    """One line for a failed attempt, from Step Functions' error name and cause (for a
    function error the cause is Lambda's JSON error document)."""
    if not error:
        return None
    if error == "States.Timeout":
        return "States.Timeout: the run exceeded its timeout_seconds"
    try:
        document = json.loads(cause or "")
        return f"{document['errorType']}: {document['errorMessage']}"
    except (ValueError, KeyError, TypeError):
        return f"{error}: {cause}" if cause else error


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- Schedules ----------------------------------------------------------------------------


class AtSchedule(_Model):
    """Once, at an instant. Fractions of a second are rounded up to the next whole second."""

    type: Literal["at"]
    at: AwareDatetime

    @field_validator("at")
    @classmethod
    def _to_utc_second(cls, value: datetime) -> datetime:
        return utc_second(value)


class CronSchedule(_Model):
    """Recurring by a five-field cron expression evaluated in an IANA time zone."""

    type: Literal["cron"]
    expression: str
    timezone: str = "UTC"

    @field_validator("expression")
    @classmethod
    def _valid_expression(cls, value: str) -> str:
        value = " ".join(value.split())
        if len(value.split(" ")) != 5:
            raise ValueError("must have five fields: minute hour day-of-month month day-of-week")
        if not croniter.is_valid(value):
            raise ValueError(f"is not a valid cron expression: {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _valid_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"is not a known IANA time zone: {value!r}") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


Schedule = Annotated[AtSchedule | CronSchedule, Field(discriminator="type")]


# --- Targets ------------------------------------------------------------------------------


class HttpTarget(_Model):
    """Call an HTTP endpoint; a 2xx answer is success."""

    type: Literal["http"]
    url: str = Field(max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an absolute http:// or https:// URL")
        return value


Target = Annotated[HttpTarget, Field(discriminator="type")]


# --- Jobs and runs ------------------------------------------------------------------------


class JobSpec(_Model):
    """What a user asks for: the body of ``POST /jobs``."""

    name: str = Field(min_length=1, max_length=200)
    schedule: Schedule
    target: Target
    priority: Priority = Priority.NORMAL
    timeout_seconds: int = Field(default=DEFAULT_TIMEOUT_SECONDS, ge=1, le=MAX_TIMEOUT_SECONDS)


class Job(JobSpec):
    """A stored job: the spec plus what chronoq keeps about it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    owner: str
    state: JobState
    next_run_at: datetime | None = None
    version: int
    created_at: datetime
    updated_at: datetime

    def spec(self) -> JobSpec:
        return JobSpec.model_validate(self.model_dump(include=set(JobSpec.model_fields)))


class Run(BaseModel):
    """One execution of a job, scheduled or triggered."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    job_id: str
    owner: str
    status: RunStatus
    priority: Priority
    scheduled_at: datetime
    queued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    output: str | None = None
    error: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lag_ms(self) -> int | None:
        if self.started_at is None:
            return None
        return math.floor((self.started_at - self.scheduled_at).total_seconds() * 1000)


class RunMessage(BaseModel):
    """The SQS message that asks a worker to start one run."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    run_id: str
    scheduled_at: datetime
    queued_at: datetime


class Occurrence(BaseModel):
    """One fire time of one job, as kept in the schedule table."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    run_id: str
    scheduled_at: datetime
    priority: Priority
