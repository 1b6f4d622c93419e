"""The domain models: what a job is, what a run is. Pure pydantic, no I/O."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    computed_field,
    field_validator,
)

from chronoq import resources as r
from chronoq.resources import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS


class Priority(StrEnum):
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class JobState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"


class Trigger(StrEnum):
    SCHEDULE = "schedule"  # an occurrence of the job's schedule
    MANUAL = "manual"  # POST /jobs/{id}/trigger


class Concurrency(StrEnum):
    """What happens when a run is due while an earlier run of the same job is active."""

    ALLOW = "allow"  # both run
    FORBID = "forbid"  # the new run is SKIPPED
    REPLACE = "replace"  # the active run is CANCELLED, then the new one starts


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


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    return value


# --- Schedules ----------------------------------------------------------------------------


class AtSchedule(_Model):
    """Once, at an instant. Fractions of a second are rounded up to the next whole second."""

    type: Literal["at"]
    at: AwareDatetime

    @field_validator("at")
    @classmethod
    def _to_utc_second(cls, value: datetime) -> datetime:
        return utc_second(value)


class _Recurring(_Model):
    """Optional bounds of a recurring schedule: it fires at or after ``start_at`` and at or
    before ``end_at``."""

    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None

    @field_validator("start_at")
    @classmethod
    def _start_to_utc_second(cls, value: datetime | None) -> datetime | None:
        return utc_second(value) if value else None

    @field_validator("end_at")
    @classmethod
    def _end_after_start(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        start = info.data.get("start_at")
        if start is not None and value <= start:
            raise ValueError("must be after start_at")
        return value


_SINGLE_VALUE_RANGE = re.compile(r"^(\w+)-\1(?:/\d+)?$", re.IGNORECASE)


class CronSchedule(_Recurring):
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
        # croniter reads a range whose ends are equal ("5-5") as the whole field; cron
        # means the single value.
        value = " ".join(
            ",".join(_SINGLE_VALUE_RANGE.sub(r"\1", term) for term in field.split(","))
            for field in value.split(" ")
        )
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


_RATE = re.compile(r"^(\d+)\s+(minute|minutes|hour|hours|day|days)$")
_UNIT = {"minute": 60, "hour": 3600, "day": 86400}


class RateSchedule(_Recurring):
    """Recurring every fixed interval: ``"every": "5 minutes"`` (minutes, hours or days; at
    least one minute). It fires at ``start_at`` and every interval after; without a
    ``start_at``, the first run is one interval after the job is created."""

    type: Literal["rate"]
    every: str

    @field_validator("every")
    @classmethod
    def _valid_every(cls, value: str) -> str:
        value = " ".join(value.lower().split())
        match = _RATE.match(value)
        if not match:
            raise ValueError('must be "<n> minutes", "<n> hours" or "<n> days" (at least 1 minute)')
        count, unit = int(match[1]), match[2].rstrip("s")
        if count < 1:
            raise ValueError("must be at least 1 minute")
        if count * _UNIT[unit] > r.MAX_RATE_SECONDS:
            raise ValueError("must be at most 365 days")
        return f"{count} {unit}{'s' if count != 1 else ''}"

    @property
    def period(self) -> timedelta:
        count, unit = self.every.split(" ")
        return timedelta(seconds=int(count) * _UNIT[unit.rstrip("s")])

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo("UTC")


Schedule = Annotated[AtSchedule | CronSchedule | RateSchedule, Field(discriminator="type")]


def anchored(
    schedule: AtSchedule | CronSchedule | RateSchedule, now: datetime
) -> AtSchedule | CronSchedule | RateSchedule:
    """The schedule as stored: a rate without a ``start_at`` starts one interval from now."""
    if isinstance(schedule, RateSchedule) and schedule.start_at is None:
        return schedule.model_copy(update={"start_at": utc_second(now + schedule.period)})
    return schedule


#: ``s3://bucket`` or ``s3://bucket/prefix``.
OUTPUT_LOCATION_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[\w!\-.*'()/]*)?$"

# --- Targets ------------------------------------------------------------------------------


class HttpTarget(_Model):
    """Call an HTTP endpoint; a 2xx answer is success."""

    type: Literal["http"]
    url: str = Field(max_length=2048)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None

    _url = field_validator("url")(lambda v: _http_url(v))


class PythonTarget(_Model):
    """Call a registered Python task (see chronoq.tasks) with JSON arguments."""

    type: Literal["python"]
    task: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)


def _json_size(value: Any) -> int:
    return len(json.dumps(value).encode())


def _bounded_json(value: Any) -> Any:
    if _json_size(value) > r.MAX_MESSAGE_BYTES:
        raise ValueError(f"must be at most {r.MAX_MESSAGE_BYTES} bytes of JSON")
    return value


class LambdaTarget(_Model):
    """Invoke an existing Lambda function (synchronously); a function error fails the
    attempt. ``payload`` is the event (default: the run's ids, time and attempt)."""

    type: Literal["lambda"]
    function_arn: str = Field(
        pattern=r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}"
        r"(:[A-Za-z0-9_$-]{1,128})?$"
    )
    payload: Any = None

    _payload = field_validator("payload")(_bounded_json)


class SqsTarget(_Model):
    """Send ``message`` to an SQS queue (a string as it is, anything else as JSON)."""

    type: Literal["sqs"]
    queue_url: str = Field(pattern=r"^https?://[^\s/]+/\d{12}/[A-Za-z0-9_-]{1,80}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)


class SnsTarget(_Model):
    """Publish ``message`` to an SNS topic (a string as it is, anything else as JSON)."""

    type: Literal["sns"]
    topic_arn: str = Field(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")
    message: Any = None

    _message = field_validator("message")(_bounded_json)


class EventBridgeTarget(_Model):
    """Put one event on an EventBridge bus."""

    type: Literal["eventbridge"]
    event_bus: str = Field(default="default", min_length=1, max_length=1600)
    source: str = Field(default="chronoq", max_length=256, pattern=r"^[A-Za-z0-9_.\-/]+$")
    detail_type: str = Field(default="chronoq.run", min_length=1, max_length=128)
    detail: dict[str, Any] = Field(default_factory=dict)

    _detail = field_validator("detail")(_bounded_json)

    @field_validator("source")
    @classmethod
    def _not_aws(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("must not start with aws. (reserved for AWS services)")
        return value


class ContainerTarget(_Model):
    """Run a command in a container image on Fargate (locally: as a subprocess). Exit code
    0 is success. With ``heartbeat_seconds`` the container must call Step Functions'
    SendTaskHeartbeat with the token in ``CHRONOQ_TASK_TOKEN`` at least that often."""

    type: Literal["container"]
    image: str = Field(min_length=1, max_length=1024, pattern=r"^\S+$")
    command: list[str] = Field(min_length=1, max_length=100)
    cpu: Literal[256, 512, 1024, 2048, 4096] = 256
    memory: int = Field(default=512, ge=512, le=30720)
    environment: dict[str, str] = Field(default_factory=dict, max_length=50)
    #: The clock starts at RunTask: the first heartbeat must come this soon after the task
    #: was asked for, image pull and start-up included.
    heartbeat_seconds: int | None = Field(default=None, ge=60, le=r.MAX_CONTAINER_TIMEOUT_SECONDS)

    @field_validator("environment")
    @classmethod
    def _no_reserved_names(cls, value: dict[str, str]) -> dict[str, str]:
        reserved = sorted(k for k in value if k.startswith("CHRONOQ_"))
        if reserved:
            raise ValueError(f"names starting with CHRONOQ_ are reserved: {', '.join(reserved)}")
        return value


Target = Annotated[
    HttpTarget
    | PythonTarget
    | LambdaTarget
    | SqsTarget
    | SnsTarget
    | EventBridgeTarget
    | ContainerTarget,
    Field(discriminator="type"),
]

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


NotifyOn = Literal["SUCCEEDED", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"]


def _default_notify_on() -> list[NotifyOn]:
    return ["FAILED", "TIMED_OUT", "MISSED"]


class Notify(_Model):
    """Whom to tell when a run ends with one of the statuses in ``on``."""

    on: list[NotifyOn] = Field(default_factory=_default_notify_on, min_length=1)
    webhook: str | None = Field(default=None, max_length=2048)
    email: str | None = Field(default=None, max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

    _webhook = field_validator("webhook")(lambda v: v if v is None else _http_url(v))


# --- Jobs and runs ------------------------------------------------------------------------


class RetryPolicy(_Model):
    """How a failed attempt is retried: up to ``max_attempts`` attempts in all, waiting
    ``interval_seconds`` after the first failure, ``backoff_rate`` times longer after each
    next one, at most ``max_interval_seconds``; with ``jitter`` each wait is drawn between
    half and all of that, so that many failing runs do not retry in step."""

    max_attempts: int = Field(default=3, ge=1, le=20)
    interval_seconds: int = Field(default=10, ge=1, le=3600)
    backoff_rate: float = Field(default=2.0, ge=1.0, le=10.0)
    max_interval_seconds: int = Field(default=300, ge=1, le=3600)
    jitter: bool = True


class JobSpec(_Model):
    """What a user asks for: the body of ``POST /jobs``."""

    name: str = Field(min_length=1, max_length=200)
    schedule: Schedule
    target: Target
    priority: Priority = Priority.NORMAL
    timeout_seconds: int = Field(
        default=DEFAULT_TIMEOUT_SECONDS, ge=1, le=r.MAX_CONTAINER_TIMEOUT_SECONDS
    )
    concurrency: Concurrency = Concurrency.ALLOW
    start_deadline_seconds: int = Field(
        default=r.DEFAULT_START_DEADLINE_SECONDS, ge=1, le=r.MAX_START_DEADLINE_SECONDS
    )
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    notify: Notify | None = None
    #: Where outputs and logs too large for the run record go: ``s3://bucket/prefix``
    #: (default: the deployment's bucket).
    output_location: str | None = Field(default=None, pattern=OUTPUT_LOCATION_PATTERN)

    @field_validator("timeout_seconds")
    @classmethod
    def _within_the_targets_limit(cls, value: int, info: ValidationInfo) -> int:
        target = info.data.get("target")
        if value > MAX_TIMEOUT_SECONDS and not isinstance(target, ContainerTarget):
            raise ValueError(
                f"must be at most {MAX_TIMEOUT_SECONDS} for this target (only container targets"
                f" may run up to {r.MAX_CONTAINER_TIMEOUT_SECONDS})"
            )
        heartbeat = target.heartbeat_seconds if isinstance(target, ContainerTarget) else None
        if heartbeat is not None and heartbeat >= value:
            raise ValueError(f"must be longer than target.heartbeat_seconds ({heartbeat})")
        return value


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
    #: Runs claimed and not yet finished.
    active_runs: frozenset[str] = frozenset()
    #: Bumped whenever the sequence of scheduled occurrences is replaced (a schedule change,
    #: pause, resume): occurrences planned under an older generation never start.
    generation: int = 1

    def spec(self) -> JobSpec:
        return JobSpec.model_validate(self.model_dump(include=set(JobSpec.model_fields)))


class JobPatch(_Model):
    """The body of ``PATCH /jobs/{id}``: the fields to change, and optionally the version
    the change was made against (409 if the job has moved on since)."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    schedule: Schedule | None = None
    target: Target | None = None
    priority: Priority | None = None
    timeout_seconds: int | None = Field(default=None, ge=1, le=r.MAX_CONTAINER_TIMEOUT_SECONDS)
    concurrency: Concurrency | None = None
    start_deadline_seconds: int | None = Field(default=None, ge=1, le=r.MAX_START_DEADLINE_SECONDS)
    retry: RetryPolicy | None = None
    notify: Notify | None = None
    output_location: str | None = Field(default=None, pattern=OUTPUT_LOCATION_PATTERN)
    version: int | None = None

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude={"version"})


class Run(BaseModel):
    """One execution of a job, scheduled or triggered."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    job_id: str
    owner: str
    status: RunStatus
    priority: Priority
    trigger: Trigger = Trigger.SCHEDULE
    scheduled_at: datetime
    queued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lag_ms(self) -> int | None:
        if self.started_at is None:
            return None
        return math.floor((self.started_at - self.scheduled_at).total_seconds() * 1000)


class Attempt(BaseModel):
    """One attempt of a run."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    attempt: int
    started_at: datetime
    finished_at: datetime
    outcome: str  # SUCCEEDED, or the error's name
    error: str | None = None


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
    generation: int = 1
