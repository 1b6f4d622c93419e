"""Each function's settings: exactly the environment variables its definition in
chronoq.resources gives it, required ones checked once, at cold start, with a clear error.

Read from the environment of the process, or, in chronoq local, from the environment of the
function being run (see ``environment``)."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain import notifications
from chronoq.domain.access import OwnResources, TargetPolicy, own_prefix, patterns
from chronoq.domain.limits import Limits
from chronoq.domain.network import NetworkPolicy, OwnEndpoints
from chronoq.domain.runs import RunStatus

_environment: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "chronoq_environment", default=None
)


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Functions' settings read ``values`` instead of the process environment meanwhile (in
    this thread): how chronoq local gives each function exactly its own environment."""
    token = _environment.set(values)
    try:
        yield
    finally:
        _environment.reset(token)


class SettingsError(Exception):
    """A function was deployed without a variable it needs, or with a wrong value."""


_Required = Field(min_length=1)


def _names(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(m.strip() for m in value.split(",") if m.strip())
    return value


def _buckets(value: Any) -> Any:
    if isinstance(value, str):
        if value.strip() == "*":
            return None
        return frozenset(b.strip() for b in value.split(",") if b.strip())
    return value


def _statuses(value: Any) -> Any:
    if isinstance(value, str):
        return notifications.topic_statuses(value)  # unknown or not final: refused
    return value


#: An SSM Parameter Store path: ``/`` and names of letters, digits, ``_``, ``.`` and ``-``.
SECRETS_PATH_PATTERN = r"^(/[A-Za-z0-9_.-]+)+$"


class FunctionSettings(BaseModel):
    """The settings of one function, read from the variables of ``FUNCTION.env``."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")
    FUNCTION: ClassVar[r.Function]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Any:
        env = environ if environ is not None else (_environment.get() or os.environ)
        names = (*cls.FUNCTION.env, *r.LOCAL_ONLY_ENV)
        values = {name: env[name] for name in names if name in env and name in cls.aliases()}
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            problems = "; ".join(
                f"{e['loc'][0]}: {'missing' if e['type'] == 'missing' else e['msg']}"
                for e in error.errors()
            )
            raise SettingsError(f"function {cls.FUNCTION.name}: {problems}") from None

    @classmethod
    def aliases(cls) -> frozenset[str]:
        """The variables this class reads."""
        return frozenset(f.alias or name for name, f in cls.model_fields.items())


S = TypeVar("S", bound=FunctionSettings)


def load(settings: type[S], environ: Mapping[str, str] | None = None) -> S:
    """``settings`` read from ``environ`` (default: this function's environment)."""
    loaded: S = settings.from_env(environ)
    return loaded


def _networks(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(n.strip() for n in value.split(",") if n.strip())
    return value


class _Network(BaseModel):
    """The SSRF guard of http targets and webhooks (on unless turned off; the networks it
    lets through all the same)."""

    block_private_targets: bool = Field(default=True, alias=r.ENV_BLOCK_PRIVATE_TARGETS)
    allowed_target_networks: tuple[str, ...] = Field(
        default=(), alias=r.ENV_ALLOWED_TARGET_NETWORKS
    )

    #: chronoq local's own endpoints (see resources.LOCAL_ONLY_ENV).
    own_ports: tuple[int, ...] = Field(default=(), alias=r.LOCAL_OWN_PORTS)
    own_addresses: tuple[str, ...] = Field(default=(), alias=r.LOCAL_OWN_ADDRESSES)

    _allowed = field_validator(
        "allowed_target_networks", "own_ports", "own_addresses", mode="before"
    )(_networks)

    @field_validator("allowed_target_networks")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        NetworkPolicy.of(True, value)  # raises ValueError for one that is not a network
        return value

    @property
    def network(self) -> NetworkPolicy:
        own = OwnEndpoints.of(self.own_ports, self.own_addresses)
        return NetworkPolicy.of(self.block_private_targets, self.allowed_target_networks, own)


def _patterns(value: Any) -> Any:
    return patterns(value) if isinstance(value, str) else value


class _Targets(BaseModel):
    """What service targets may reach and which images containers may run (each unset or
    empty: none; "*": any), and the caps on containers."""

    lambda_targets: tuple[str, ...] | None = Field(default=(), alias=r.ENV_LAMBDA_TARGETS)
    queue_targets: tuple[str, ...] | None = Field(default=(), alias=r.ENV_QUEUE_TARGETS)
    topic_targets: tuple[str, ...] | None = Field(default=(), alias=r.ENV_TOPIC_TARGETS)
    event_bus_targets: tuple[str, ...] | None = Field(default=(), alias=r.ENV_EVENT_BUS_TARGETS)
    container_images: tuple[str, ...] | None = Field(default=(), alias=r.ENV_CONTAINER_IMAGES)
    max_container_cpu: int = Field(
        default=lim.DEFAULT_MAX_CONTAINER_CPU, alias=r.ENV_MAX_CONTAINER_CPU, ge=256
    )
    max_container_memory: int = Field(
        default=lim.DEFAULT_MAX_CONTAINER_MEMORY, alias=r.ENV_MAX_CONTAINER_MEMORY, ge=512
    )
    max_container_seconds: int = Field(
        default=lim.DEFAULT_MAX_CONTAINER_SECONDS, alias=r.ENV_MAX_CONTAINER_SECONDS, ge=1
    )

    _lists = field_validator(
        "lambda_targets",
        "queue_targets",
        "topic_targets",
        "event_bus_targets",
        "container_images",
        mode="before",
    )(_patterns)

    @property
    def targets(self) -> TargetPolicy:
        return TargetPolicy(
            lambda_functions=self.lambda_targets,
            queues=self.queue_targets,
            topics=self.topic_targets,
            event_buses=self.event_bus_targets,
            container_images=self.container_images,
            max_container_cpu=self.max_container_cpu,
            max_container_memory=self.max_container_memory,
            max_container_seconds=self.max_container_seconds,
        )


class _Queues(BaseModel):
    queue_url_high: str = Field(alias=r.ENV_QUEUE_URLS["high"], min_length=1)
    queue_url_normal: str = Field(alias=r.ENV_QUEUE_URLS["normal"], min_length=1)
    queue_url_low: str = Field(alias=r.ENV_QUEUE_URLS["low"], min_length=1)

    @property
    def queue_urls(self) -> dict[str, str]:
        return {
            "high": self.queue_url_high,
            "normal": self.queue_url_normal,
            "low": self.queue_url_low,
        }


class ApiSettings(FunctionSettings, _Queues, _Network, _Targets):
    FUNCTION = r.API_FUNCTION

    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    schedule_table: str = Field(alias=r.ENV_SCHEDULE_TABLE, min_length=1)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    audit_table: str = Field(alias=r.ENV_AUDIT_TABLE, min_length=1)
    shards: int = Field(alias=r.ENV_SHARDS, ge=1, le=1000)
    state_machine_arn: str = Field(alias=r.ENV_STATE_MACHINE_ARN, min_length=1)
    task_modules: tuple[str, ...] = Field(default=(), alias=r.ENV_TASK_MODULES)
    output_bucket: str = Field(alias=r.ENV_OUTPUT_BUCKET, min_length=1)
    #: Other buckets an output_location may name; None: any.
    output_buckets: frozenset[str] | None = Field(default=frozenset(), alias=r.ENV_OUTPUT_BUCKETS)
    #: The archive's bucket (the owner's objects listed, and links to them signed).
    archive_bucket: str = Field(alias=r.ENV_ARCHIVE_BUCKET, min_length=1)
    signing_secret_arn: str = Field(alias=r.ENV_SIGNING_SECRET_ARN, min_length=1)
    max_jobs_per_owner: int = Field(
        default=lim.DEFAULT_MAX_JOBS_PER_OWNER, alias=r.ENV_MAX_JOBS_PER_OWNER, ge=1
    )
    max_running_backfills_per_job: int = Field(
        default=lim.DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB,
        alias=r.ENV_MAX_RUNNING_BACKFILLS_PER_JOB,
        ge=1,
    )
    max_running_backfills_per_owner: int = Field(
        default=lim.DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER,
        alias=r.ENV_MAX_RUNNING_BACKFILLS_PER_OWNER,
        ge=1,
    )
    max_queued_runs_per_owner: int = Field(
        default=lim.DEFAULT_MAX_QUEUED_RUNS_PER_OWNER, alias=r.ENV_MAX_QUEUED_RUNS_PER_OWNER, ge=1
    )
    max_waiting_triggers_per_job: int = Field(
        default=lim.DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB,
        alias=r.ENV_MAX_WAITING_TRIGGERS_PER_JOB,
        ge=1,
    )
    max_asked_runs_in_flight: int = Field(
        default=lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT, alias=r.ENV_MAX_ASKED_RUNS_IN_FLIGHT, ge=1
    )
    max_runs_in_flight: int = Field(
        default=lim.DEFAULT_MAX_RUNS_IN_FLIGHT, alias=r.ENV_MAX_RUNS_IN_FLIGHT, ge=1
    )
    max_secrets_per_owner: int = Field(
        default=lim.DEFAULT_MAX_SECRETS_PER_OWNER, alias=r.ENV_MAX_SECRETS_PER_OWNER, ge=1
    )
    #: Where owners' secrets' values live (SSM Parameter Store).
    secrets_path: str = Field(alias=r.ENV_SECRETS_PATH, pattern=SECRETS_PATH_PATTERN)

    _task_modules = field_validator("task_modules", mode="before")(_names)
    _output_buckets = field_validator("output_buckets", mode="before")(_buckets)

    @property
    def own_resources(self) -> OwnResources | None:
        """chronoq's own resources, known by the prefix its tables and queues share."""
        names = [self.jobs_table, self.schedule_table, self.runs_table]
        names += [url.rstrip("/").rsplit("/", 1)[-1] for url in self.queue_urls.values()]
        prefix = own_prefix(names)
        return OwnResources(prefix) if prefix else None

    @property
    def targets(self) -> TargetPolicy:
        return replace(super().targets, own=self.own_resources)

    @property
    def limits(self) -> Limits:
        """What each owner's backfills and re-runs may hold at once."""
        return Limits(
            running_backfills_per_job=self.max_running_backfills_per_job,
            running_backfills_per_owner=self.max_running_backfills_per_owner,
            queued_runs_per_owner=self.max_queued_runs_per_owner,
            waiting_triggers_per_job=self.max_waiting_triggers_per_job,
            asked_runs_in_flight=self.max_asked_runs_in_flight,
            runs_in_flight=self.max_runs_in_flight,
            secrets_per_owner=self.max_secrets_per_owner,
        )


class DispatcherSettings(FunctionSettings, _Queues):
    FUNCTION = r.DISPATCHER_FUNCTION

    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    schedule_table: str = Field(alias=r.ENV_SCHEDULE_TABLE, min_length=1)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    shards: int = Field(alias=r.ENV_SHARDS, ge=1, le=1000)


class WorkerSettings(FunctionSettings, _Queues):
    FUNCTION = r.WORKER_FUNCTION

    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    state_machine_arn: str = Field(alias=r.ENV_STATE_MACHINE_ARN, min_length=1)
    express_state_machine_arn: str = Field(alias=r.ENV_EXPRESS_STATE_MACHINE_ARN, min_length=1)
    #: An owner's runs asked for under way at once.
    max_asked_runs_in_flight: int = Field(
        default=lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT, alias=r.ENV_MAX_ASKED_RUNS_IN_FLIGHT, ge=1
    )
    #: An owner's runs of every kind under way at once.
    max_runs_in_flight: int = Field(
        default=lim.DEFAULT_MAX_RUNS_IN_FLIGHT, alias=r.ENV_MAX_RUNS_IN_FLIGHT, ge=1
    )


class RunnerSettings(FunctionSettings, _Network):
    FUNCTION = r.RUNNER_FUNCTION

    task_modules: tuple[str, ...] = Field(default=(), alias=r.ENV_TASK_MODULES)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    output_bucket: str = Field(alias=r.ENV_OUTPUT_BUCKET, min_length=1)
    container_log_group: str = Field(alias=r.ENV_CONTAINER_LOG_GROUP, min_length=1)
    container_execution_role_arn: str = Field(
        alias=r.ENV_CONTAINER_EXECUTION_ROLE_ARN, min_length=1
    )
    container_task_role_arn: str = Field(alias=r.ENV_CONTAINER_TASK_ROLE_ARN, min_length=1)
    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    secrets_path: str = Field(alias=r.ENV_SECRETS_PATH, pattern=SECRETS_PATH_PATTERN)

    _task_modules = field_validator("task_modules", mode="before")(_names)


class NotifierSettings(FunctionSettings, _Network, _Queues):
    FUNCTION = r.NOTIFIER_FUNCTION

    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    #: Where a job with ``expect`` has its next deadline written, as a run of it succeeds.
    schedule_table: str = Field(alias=r.ENV_SCHEDULE_TABLE, min_length=1)
    shards: int = Field(alias=r.ENV_SHARDS, ge=1, le=1000)
    topic_arn: str = Field(alias=r.ENV_TOPIC_ARN, min_length=1)
    #: The final statuses published to the topic.
    topic_statuses: frozenset[RunStatus] = Field(
        default=notifications.topic_statuses(r.DEFAULT_TOPIC_STATUSES),
        alias=r.ENV_TOPIC_STATUSES,
    )
    signing_secret_arn: str = Field(alias=r.ENV_SIGNING_SECRET_ARN, min_length=1)
    secrets_path: str = Field(alias=r.ENV_SECRETS_PATH, pattern=SECRETS_PATH_PATTERN)
    #: The SES identity e-mails come from ("": no e-mail).
    email_sender: str = Field(default="", alias=r.ENV_EMAIL_SENDER)
    #: An owner's runs under way at once (the ends wake the runs it parked).
    max_runs_in_flight: int = Field(
        default=lim.DEFAULT_MAX_RUNS_IN_FLIGHT, alias=r.ENV_MAX_RUNS_IN_FLIGHT, ge=1
    )

    _topic_statuses = field_validator("topic_statuses", mode="before")(_statuses)


class ArchiverSettings(FunctionSettings):
    FUNCTION = r.ARCHIVER_FUNCTION

    #: Where ended runs are archived (under resources.ARCHIVE_PREFIX).
    archive_bucket: str = Field(alias=r.ENV_ARCHIVE_BUCKET, min_length=1)


#: Every function's settings class.
class EraserSettings(FunctionSettings):
    FUNCTION = r.ERASER_FUNCTION

    jobs_table: str = Field(alias=r.ENV_JOBS_TABLE, min_length=1)
    runs_table: str = Field(alias=r.ENV_RUNS_TABLE, min_length=1)
    audit_table: str = Field(alias=r.ENV_AUDIT_TABLE, min_length=1)
    output_bucket: str = Field(alias=r.ENV_OUTPUT_BUCKET, min_length=1)
    archive_bucket: str = Field(alias=r.ENV_ARCHIVE_BUCKET, min_length=1)
    secrets_path: str = Field(alias=r.ENV_SECRETS_PATH, pattern=SECRETS_PATH_PATTERN)
    state_machine_arn: str = Field(alias=r.ENV_STATE_MACHINE_ARN, min_length=1)
    express_state_machine_arn: str = Field(alias=r.ENV_EXPRESS_STATE_MACHINE_ARN, min_length=1)


SETTINGS: tuple[type[FunctionSettings], ...] = (
    ApiSettings,
    DispatcherSettings,
    WorkerSettings,
    RunnerSettings,
    NotifierSettings,
    EraserSettings,
    ArchiverSettings,
)
