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
    computed_field,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from chronoq.domain import ids, secrets, windows
from chronoq.domain import limits as lim
from chronoq.domain.base import STORED, Model
from chronoq.domain.labels import Labels
from chronoq.domain.parameters import Parameters
from chronoq.domain.runs import (
    REQUESTED,
    TERMINAL_STATUSES,
    Occurrence,
    Priority,
    Run,
    RunMessage,
    RunStatus,
    Trigger,
)
from chronoq.domain.schedules import Schedule, next_fire
from chronoq.domain.silence import Expect
from chronoq.domain.targets import (
    OUTPUT_LOCATION_PATTERN,
    ContainerTarget,
    HeaderName,
    HttpTarget,
    PythonTarget,
    SecretHeaderValue,
    Target,
    http_url,
    no_secrets,
    one_of_each,
    shown_text,
    visible_text,
)
from chronoq.domain.time import Instant

__all__ = [
    "Concurrency",
    "Expect",
    "Flow",
    "Job",
    "JobPatch",
    "JobSpec",
    "JobState",
    "Notify",
    "OnComplete",
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


class OnComplete(StrEnum):
    """What becomes of a job once it is COMPLETED (its schedule, or max_runs, has no run
    left)."""

    KEEP = "keep"  # it stays, COMPLETED, until deleted
    DELETE = "delete"  # it is deleted once its last run has ended (the runs stay readable)


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
    #: More headers the webhook is sent with (a receiver's credential: a secret's reference
    #: or placeholder, resolved by the notifier when it sends).
    webhook_headers: dict[HeaderName, SecretHeaderValue] = Field(
        default_factory=dict, max_length=lim.MAX_WEBHOOK_HEADERS
    )
    email: str | None = Field(default=None, max_length=254, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

    _webhook = field_validator("webhook")(lambda v: v if v is None else http_url(v))
    _webhook_plain = field_validator("webhook")(no_secrets)

    @field_validator("webhook_headers")
    @classmethod
    def _own_headers(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in one_of_each(value):
            if name.lower() in lim.WEBHOOK_OWN_HEADERS:
                raise ValueError(f"{name} is set by chronoq (the document it signs is JSON)")
        return value

    @model_validator(mode="after")
    def _headers_need_a_webhook(self) -> Notify:
        if self.webhook_headers and not self.webhook:
            raise ValueError("webhook_headers need a webhook")
        return self

    _email = field_validator("email")(lambda v, info: v if v is None else shown_text(v, info))


class Flow(Model):
    """Flow control: the runs of all the owner's jobs with the same ``key`` (say, one
    downstream API) share the limits: at most ``max_running`` under way at once, at most
    ``max_starts_per_second`` starting in any one second. A run over a limit waits, and
    starts as soon as the limits allow."""

    key: str = Field(
        min_length=1, max_length=lim.MAX_FLOW_KEY_LENGTH, pattern=r"^[A-Za-z0-9._:/@-]+$"
    )
    max_running: int | None = Field(default=None, ge=1, le=lim.MAX_FLOW_RUNNING, strict=True)
    max_starts_per_second: int | None = Field(
        default=None, ge=1, le=lim.MAX_FLOW_STARTS_PER_SECOND, strict=True
    )

    @model_validator(mode="after")
    def _limited(self) -> Flow:
        if self.max_running is None and self.max_starts_per_second is None:
            raise ValueError("needs max_running, max_starts_per_second or both")
        return self


# --- Jobs ---------------------------------------------------------------------------------


class JobSpec(Model):
    """What a user asks for: the body of ``POST /jobs``."""

    name: str = Field(min_length=1, max_length=lim.MAX_NAME_LENGTH)
    schedule: Schedule
    target: Target
    priority: Priority = Priority.NORMAL
    timeout_seconds: int = Field(
        default=lim.DEFAULT_TIMEOUT_SECONDS, ge=1, le=lim.MAX_CONTAINER_TIMEOUT_SECONDS, strict=True
    )
    concurrency: Concurrency = Concurrency.ALLOW
    start_deadline_seconds: int = Field(
        default=lim.DEFAULT_START_DEADLINE_SECONDS,
        ge=1,
        le=lim.MAX_START_DEADLINE_SECONDS,
        strict=True,
    )
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    notify: Notify | None = None
    #: Where outputs and logs too large for the run record go: ``s3://bucket/prefix``
    #: (default: the deployment's bucket).
    output_location: str | None = Field(default=None, pattern=OUTPUT_LOCATION_PATTERN)

    _name = field_validator("name")(shown_text)
    _visible_name = field_validator("name")(visible_text)

    # --- run features: flow control ---
    #: Limits its runs share with the owner's other jobs of the same flow key.
    flow: Flow | None = None

    # --- limited runs and labels (docs/api/jobs.md: "Limited runs", "Labels") ---------------------
    #: The job ends COMPLETED after this many scheduled runs (fire times of its schedule it
    #: reached while active, however each ended; manual runs do not count), counted from
    #: when it was set; None: as many as its schedule has.
    max_runs: int | None = Field(default=None, ge=1, le=lim.MAX_RUNS, strict=True)
    #: What becomes of the job once it is COMPLETED.
    on_complete: OnComplete = OnComplete.KEEP
    #: Key/value strings to find the job by (GET /jobs?label=key=value).
    labels: Labels = Field(default_factory=dict)

    # --- silence (docs/api/notifications.md: "Silence") -------------------------------------------
    #: How often a run of it must succeed: if none does within that time of the last success
    #: (or of the job's start), the job is silent and its owner is told (SILENT), once; the
    #: next success tells them it RECOVERED. None: no such promise.
    expect: Expect | None = None

    # --- run parameters (docs/api/secrets.md) ------------------
    #: The parameters of its runs by default: a request's parameters overlay them.
    parameters: Parameters = Field(default_factory=dict)

    def plain_credentials(self) -> list[str]:
        """What looks like a credential written into the job rather than kept as a secret
        (a warning, never a refusal): each field, and why."""
        found: list[str] = []
        target = self.target
        if isinstance(target, HttpTarget):
            found += secrets.credential_warnings({"url": target.url}, "target")
            found += secrets.credential_warnings(target.headers, "target.headers")
        if isinstance(target, PythonTarget | ContainerTarget):
            found += secrets.credential_warnings(target.environment, "target.environment")
        if self.notify is not None:
            found += secrets.credential_warnings(
                self.notify.webhook_headers, "notify.webhook_headers"
            )
        return found

    def secret_names(self) -> frozenset[str]:
        """The secrets the job names: its target's and its webhook's headers'."""
        names = secrets.names_in(self.target)
        if self.notify is not None:
            names |= secrets.names_in(self.notify.webhook_headers)
        return frozenset(names)

    @model_validator(mode="before")
    @classmethod
    def _default_timeout_by_target(cls, data: Any) -> Any:
        """A container's default timeout is longer than other targets' (it starts a task)."""
        if isinstance(data, dict) and "timeout_seconds" not in data:
            target = data.get("target")
            kind = target.get("type") if isinstance(target, dict) else getattr(target, "type", None)
            if kind == "container":
                return {**data, "timeout_seconds": lim.DEFAULT_CONTAINER_TIMEOUT_SECONDS}
        return data

    @field_validator("timeout_seconds")
    @classmethod
    def _within_the_targets_limit(cls, value: int, info: ValidationInfo) -> int:
        target = info.data.get("target")
        if value > lim.MAX_TIMEOUT_SECONDS and not isinstance(target, ContainerTarget):
            raise ValueError(
                f"must be at most {lim.MAX_TIMEOUT_SECONDS} for this target (only container targets"
                f" may run up to {lim.MAX_CONTAINER_TIMEOUT_SECONDS})"
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
    #: Limited runs: the scheduled runs counted towards ``max_runs`` before the current
    #: generation's first occurrence (the stored ``next_run_at``).
    runs_before: int = 0
    #: The fire time of the job's last run when ``max_runs`` is what ends it (None: no
    #: limit, the job is paused, or its schedule ends first).
    final_run_at: Instant | None = None
    #: A job with ``expect``: when a run of it last SUCCEEDED (since ``expect`` was set), and
    #: since when it is silent (None: it is not). Kept in its expectation's item, not in the
    #: job's (see chronoq.domain.silence): shown, never stored with the job.
    last_success_at: Instant | None = None
    silent_since: Instant | None = None
    #: Completion triggers: the ``after`` jobs that follow this one (their ids; kept on the
    #: job's item beside its spec, written by changes of those jobs: see domain.after).
    followed_by: frozenset[str] = frozenset()
    #: Shown, never stored: an ``after`` job's upstream jobs and the jobs following it, each
    #: ``{id, name, state}`` (a deleted upstream: name and state None).
    upstreams: list[dict[str, str | None]] | None = None
    downstreams: list[dict[str, str | None]] | None = None

    def spec(self) -> JobSpec:
        fields = self.model_dump(include=set(JobSpec.model_fields))
        return JobSpec.model_validate(fields, context=STORED)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def next_start_at(self) -> Instant | None:
        """When the run ``next_run_at`` announces starts: its window offset after it."""
        return self.starts_at(self.next_run_at) if self.next_run_at else None

    def is_late(
        self,
        starts_at: datetime,
        now: datetime,
        trigger: Trigger = Trigger.SCHEDULE,
        requested_deadline: int | None = None,
    ) -> bool:
        """Past its start deadline: a run planned to start at ``starts_at`` must not start.
        A scheduled or manual run has the job's; a requested one (a backfill's, a re-run:
        late on purpose, ``starts_at`` is when it was asked for) its own, or the default."""
        return now - starts_at > timedelta(seconds=self.deadline_of(trigger, requested_deadline))

    def deadline_of(self, trigger: Trigger, requested_deadline: int | None = None) -> int:
        """The start deadline of a run of this trigger, in seconds."""
        if trigger in REQUESTED:
            return requested_deadline or lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS
        return self.start_deadline_seconds

    def occurrence_id(self, at: datetime) -> str:
        """The run id of the occurrence of its current schedule at fire time ``at``."""
        offset = windows.offset(self.id, at, windows.window_of(self.schedule))
        return ids.run_id(self.id, at, self.generation, offset)

    def starts_at(self, at: datetime) -> datetime:
        """When the occurrence at fire time ``at`` starts (its window offset after it)."""
        return windows.planned_start(self.id, self.schedule, at)

    def is_current(self, run: Run | Occurrence | RunMessage) -> bool:
        """Does this scheduled occurrence still belong to the job's schedule? (Manual runs,
        backfills and re-runs always do.)"""
        if run.trigger is not Trigger.SCHEDULE:
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
        return self.following(at - timedelta(seconds=1)) == at

    def following(self, after: datetime) -> datetime | None:
        """The job's first fire time after ``after``: its schedule's, up to its last run
        (``final_run_at``, when ``max_runs`` ends it)."""
        found = next_fire(self.schedule, after)
        if found is not None and self.final_run_at is not None and found > self.final_run_at:
            return None
        return found

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
        following = self.following(now - timedelta(seconds=1))
        if following is None:
            return self.model_copy(update={"state": JobState.COMPLETED, "next_run_at": None})
        return self.model_copy(update={"next_run_at": following})

    def missed_reason(
        self, trigger: Trigger = Trigger.SCHEDULE, requested_deadline: int | None = None
    ) -> str:
        seconds = self.deadline_of(trigger, requested_deadline)
        if trigger in REQUESTED:
            return f"could not start within start_deadline_seconds ({seconds} s) of its request"
        return f"could not start within start_deadline_seconds ({seconds} s)"

    # --- limited runs and deletion on completion ---------------------------------------------

    def runs_reached(self, now: datetime) -> int:
        """The scheduled runs counted towards ``max_runs`` by ``now``: those before the
        current generation, and each fire time of it (from the stored ``next_run_at``) that has
        come. (Computed, fire time by fire time, only when a job with ``max_runs`` changes.)"""
        if self.max_runs is None:
            return 0
        count = self.runs_before
        at = self.next_run_at if self.state is JobState.ACTIVE else None
        while at is not None and at <= now and count < self.max_runs:
            count += 1
            at = self.following(at)
        return count

    def with_final_run(self) -> Job:
        """The job with ``final_run_at`` set: the fire time of its last run under ``max_runs``,
        counted from its stored ``next_run_at`` (the current generation's first occurrence)."""
        final: datetime | None = None
        if self.max_runs is not None and self.next_run_at is not None:
            final = self.next_run_at
            for _ in range(self.max_runs - self.runs_before - 1):
                final = next_fire(self.schedule, final)
                if final is None:  # (its schedule ends first)
                    break
        return self.model_copy(update={"final_run_at": final})

    def is_last(self, at: datetime) -> bool:
        """Is the fire time ``at`` the job's last one?"""
        return self.following(at) is None

    def tells_end(self, at: datetime, trigger: Trigger) -> bool:
        """Must the notifier hear of the end of the job's run at ``at``, whatever its
        status? When the job has a ``notify`` block; and for the last scheduled run of a job
        deleted on completion (the notifier deletes it once that run has ended)."""
        if self.notify is not None:
            return True
        return (
            self.on_complete is OnComplete.DELETE
            and trigger is Trigger.SCHEDULE
            and self.is_last(at)
        )


class PatchBase(Model):
    """The body of ``PATCH /jobs/{id}``: any fields of a JobSpec to change, and optionally the
    version the change was made against (409 if the job has moved on since)."""

    version: int | None = Field(default=None, strict=True)

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude={"version"})


def _no_default(schema: dict[str, Any]) -> None:
    """A field that is left out when not given has no default to show."""
    schema.pop("default", None)


def _optional(field: FieldInfo) -> tuple[Any, FieldInfo]:
    """The same field, optional: its constraints kept, left unchanged when not given; null
    only where the job's field takes null (notify, output_location, max_runs, flow, expect:
    null removes it). Elsewhere null is refused (422), and the document does not offer it."""
    optional = FieldInfo.merge_field_infos(field, default=None, json_schema_extra=_no_default)
    optional.default_factory = None
    return field.annotation, optional


if TYPE_CHECKING:
    JobPatch = PatchBase
else:
    JobPatch = create_model(
        "JobPatch",
        __base__=PatchBase,
        __doc__=PatchBase.__doc__,
        **{name: _optional(field) for name, field in JobSpec.model_fields.items()},
    )
