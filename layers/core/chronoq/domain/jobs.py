"""Jobs: what a user asks for (JobSpec), what chronoq keeps (Job), and the rules of a job's
runs: which occurrences still belong to it, when one is too late to start."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from chronoq import resources as r
from chronoq.domain.base import Model
from chronoq.domain.runs import TERMINAL_STATUSES, Occurrence, Run, RunStatus, Trigger
from chronoq.domain.schedules import Schedule, next_fire
from chronoq.domain.targets import (
    OUTPUT_LOCATION_PATTERN,
    STORED,
    ContainerTarget,
    Target,
    http_url,
    shown_text,
)
from chronoq.domain.time import Instant
from chronoq.resources import Priority

__all__ = [
    "Concurrency",
    "Job",
    "JobPatch",
    "JobSpec",
    "JobState",
    "Notify",
    "Priority",
    "RetryPolicy",
]


class JobState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"


class Concurrency(StrEnum):
    """What happens when a run is due while an earlier run of the same job is active."""

    ALLOW = "allow"  # both run
    FORBID = "forbid"  # the new run is SKIPPED
    REPLACE = "replace"  # the active run is CANCELLED, then the new one starts


def _terminal(status: RunStatus) -> RunStatus:
    if status not in TERMINAL_STATUSES:
        raise ValueError(f"must be a final status: {', '.join(sorted(TERMINAL_STATUSES))}")
    return status


#: A status a run ends in.
FinalStatus = Annotated[RunStatus, AfterValidator(_terminal)]


def _default_notify_on() -> list[RunStatus]:
    return [RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.MISSED]


class RetryPolicy(Model):
    """How a failed attempt is retried: up to ``max_attempts`` attempts in all, waiting
    ``interval_seconds`` after the first failure, ``backoff_rate`` times longer after each
    next one, at most ``max_interval_seconds``; with ``jitter`` each wait is drawn between
    half and all of that, so that many failing runs do not retry in step."""

    max_attempts: int = Field(default=3, ge=1, le=20, strict=True)
    interval_seconds: int = Field(default=10, ge=1, le=3600, strict=True)
    backoff_rate: float = Field(default=2.0, ge=1.0, le=10.0, strict=True, allow_inf_nan=False)
    max_interval_seconds: int = Field(default=300, ge=1, le=3600, strict=True)
    jitter: bool = Field(default=True, strict=True)


class Notify(Model):
    """Whom to tell when a run ends with one of the statuses in ``on``."""

    on: list[FinalStatus] = Field(default_factory=_default_notify_on, min_length=1, max_length=10)
    webhook: str | None = Field(default=None, max_length=2048)
    email: str | None = Field(default=None, max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

    _webhook = field_validator("webhook")(lambda v: v if v is None else http_url(v))
    _email = field_validator("email")(lambda v, info: v if v is None else shown_text(v, info))


# --- Jobs ---------------------------------------------------------------------------------


class JobSpec(Model):
    """What a user asks for: the body of ``POST /jobs``."""

    name: str = Field(min_length=1, max_length=r.MAX_NAME_LENGTH)
    schedule: Schedule
    target: Target
    priority: Priority = Priority.NORMAL
    timeout_seconds: int = Field(
        default=r.DEFAULT_TIMEOUT_SECONDS, ge=1, le=r.MAX_CONTAINER_TIMEOUT_SECONDS, strict=True
    )
    concurrency: Concurrency = Concurrency.ALLOW
    start_deadline_seconds: int = Field(
        default=r.DEFAULT_START_DEADLINE_SECONDS, ge=1, le=r.MAX_START_DEADLINE_SECONDS, strict=True
    )
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    notify: Notify | None = None
    #: Where outputs and logs too large for the run record go: ``s3://bucket/prefix``
    #: (default: the deployment's bucket).
    output_location: str | None = Field(default=None, pattern=OUTPUT_LOCATION_PATTERN)

    _name = field_validator("name")(shown_text)

    @model_validator(mode="before")
    @classmethod
    def _default_timeout_by_target(cls, data: Any) -> Any:
        """A container's default timeout is longer than other targets' (it starts a task)."""
        if isinstance(data, dict) and "timeout_seconds" not in data:
            target = data.get("target")
            kind = target.get("type") if isinstance(target, dict) else getattr(target, "type", None)
            if kind == "container":
                return {**data, "timeout_seconds": r.DEFAULT_CONTAINER_TIMEOUT_SECONDS}
        return data

    @field_validator("timeout_seconds")
    @classmethod
    def _within_the_targets_limit(cls, value: int, info: ValidationInfo) -> int:
        target = info.data.get("target")
        if value > r.MAX_TIMEOUT_SECONDS and not isinstance(target, ContainerTarget):
            raise ValueError(
                f"must be at most {r.MAX_TIMEOUT_SECONDS} for this target (only container targets"
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
    next_run_at: Instant | None = None
    version: int
    created_at: Instant
    updated_at: Instant
    #: Runs claimed and not yet finished.
    active_runs: frozenset[str] = frozenset()
    #: Bumped whenever the sequence of scheduled occurrences is replaced (a schedule change,
    #: pause, resume): occurrences planned under an older generation never start.
    generation: int = 1

    def spec(self) -> JobSpec:
        fields = self.model_dump(include=set(JobSpec.model_fields))
        return JobSpec.model_validate(fields, context=STORED)

    def is_late(self, scheduled_at: datetime, now: datetime) -> bool:
        """Past the job's start deadline: a run due at ``scheduled_at`` must not start."""
        return now - scheduled_at > timedelta(seconds=self.start_deadline_seconds)

    def is_current(self, run: Run | Occurrence) -> bool:
        """Does this scheduled occurrence still belong to the job's schedule? (Manual runs
        always do.)"""
        if isinstance(run, Run) and run.trigger is Trigger.MANUAL:
            return True
        return (
            self.state is not JobState.PAUSED
            and run.generation == self.generation
            and self.fires_at(run.scheduled_at)
        )

    def fires_at(self, at: datetime) -> bool:
        """Is ``at`` one of the fire times of the job's schedule? (An occurrence written for
        a change that lost to a concurrent one carries the same generation as the winner's,
        but not its fire times.)"""
        return next_fire(self.schedule, at - timedelta(seconds=1)) == at

    def as_of(self, now: datetime) -> Job:
        """The job as it stands at ``now``: ``next_run_at`` brought up to it, and COMPLETED
        once its schedule has no fire time left. The stored job holds the first occurrence
        planned for its current schedule: the dispatcher chains occurrences in the time
        index without writing the job (a write per run) nor its end."""
        if self.state is not JobState.ACTIVE or self.next_run_at is None:
            return self
        if self.next_run_at >= now:
            return self
        # the last due second is still "next" until its run has had a second to start
        following = next_fire(self.schedule, now - timedelta(seconds=1))
        if following is None:
            return self.model_copy(update={"state": JobState.COMPLETED, "next_run_at": None})
        return self.model_copy(update={"next_run_at": following})

    def missed_reason(self) -> str:
        return f"could not start within start_deadline_seconds ({self.start_deadline_seconds} s)"


class PatchBase(Model):
    """The body of ``PATCH /jobs/{id}``: any fields of a JobSpec to change, and optionally the
    version the change was made against (409 if the job has moved on since)."""

    version: int | None = Field(default=None, strict=True)

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude={"version"})


def _optional(field: FieldInfo) -> tuple[Any, FieldInfo]:
    """The same field, optional: its constraints kept, its default None."""
    optional = FieldInfo.merge_field_infos(field, default=None)
    optional.default_factory = None
    return field.annotation | None, optional  # type: ignore[operator]


if TYPE_CHECKING:
    JobPatch = PatchBase
else:
    JobPatch = create_model(
        "JobPatch",
        __base__=PatchBase,
        __doc__=PatchBase.__doc__,
        **{name: _optional(field) for name, field in JobSpec.model_fields.items()},
    )
