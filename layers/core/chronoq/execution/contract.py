"""The run state machine's contract, written once: what an execution is started with, what the
runner is asked (an attempt, a retry decision, a container to prepare or collect) and answers,
and how Step Functions' error descriptions read. The worker builds ``ExecutionInput``; the ASL
passes its fields on; the runner parses the requests below. tests/unit check the ASL against
these models.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chronoq import resources as r
from chronoq.domain import after, inflight, silence
from chronoq.domain.jobs import Concurrency, Job, RetryPolicy
from chronoq.domain.retry import worst_case_seconds
from chronoq.domain.runs import Priority, Trigger
from chronoq.domain.secrets import RunContext
from chronoq.domain.targets import (
    ContainerTarget,
    EventBridgeTarget,
    SnsTarget,
    SqsTarget,
    Target,
)
from chronoq.domain.time import format_instant


class _Contract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AttemptNumber(_Contract):
    number: int = Field(ge=1)


class RunValues(_Contract):
    """What a run's own placeholders read besides its id and fire time (docs/api/secrets.md,
    "Run parameters and placeholders"): its job's name, its parameters and, for after jobs, the
    small outputs of its upstream runs (by upstream job name)."""

    job_name: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    upstream: dict[str, str] = Field(default_factory=dict)

    def context(self, run_id: str, scheduled_at: str) -> RunContext:
        return RunContext(scheduled_at, run_id, self.job_name, self.params, self.upstream)


class ExecutionInput(_Contract):
    """The input of the run state machine: everything one run needs, and nothing that changes
    between two deliveries of the same run (so that starting it is idempotent)."""

    job_id: str
    run_id: str
    owner: str
    scheduled_at: str
    timeout_seconds: int
    target: Target
    retry: RetryPolicy
    attempt: AttemptNumber = AttemptNumber(number=1)
    #: ``""`` for the deployment's bucket (the ASL passes strings on as they are).
    output_location: str = ""
    #: What the state machine's own service integrations send (sqs/sns/eventbridge targets),
    #: prepared as those APIs want it: ``{"message": text}`` or ``{"detail": text}``.
    delivery: dict[str, str] = Field(default_factory=dict)
    #: What the state machine's first state writes when it records the run (the run item may
    #: not exist yet: a scheduled run is recorded when it starts).
    priority: str = Priority.NORMAL.value
    trigger: str = Trigger.SCHEDULE.value
    generation: int = 1
    queued_at: str = ""
    #: When the run's record expires (epoch seconds): RUN_RETENTION_SECONDS after its time.
    expires_at: int = 0
    #: The job keeps its active runs (concurrency forbid or replace): the state machine
    #: takes the run off them at its end.
    exclusive: bool = False
    #: The job has a ``notify`` block: the run's end goes to the notifier whatever its status.
    notify: bool = False
    #: When the run starts (its first state waits for it): its planned start, or the second
    #: its flow reserved for it.
    starts_at: str = ""
    #: The flow items in which the run holds a ``max_running`` slot: the state machine gives
    #: each back at the run's end (none: it takes no step for it).
    flows: list[str] = Field(default_factory=list)
    #: ``flows`` space-separated: the first state writes it on the run's record, where the
    #: notifier finds it when the run ends, to wake the runs parked on those flows (see
    #: chronoq.usecases.wake); ``""`` for a run that holds no slot. With them, the owner's
    #: count of runs in flight (below), and, for a job with ``expect``, its expectation (a
    #: success moves it on: chronoq.usecases.silence).
    slots: str = ""
    #: The item counting the owner's runs in flight, and the run's bucket in it (see
    #: chronoq.domain.inflight); ``""``: not counted. The count is given back as the run's
    #: end reaches the notifier (``slots`` names it), or by the state machine if the run
    #: turns out to have started already (a second delivery).
    in_flight: str = ""
    in_flight_bucket: str = ""
    #: What the target's placeholders read (the runner expands them, with its secrets, in
    #: one pass at each attempt).
    values: RunValues = RunValues()
    #: The parameters the run runs with, as its record keeps them (JSON text; ``""``: none):
    #: MarkRunning writes them on a record that has none (a scheduled run's: its job's
    #: defaults), so that every run records what it ran with.
    parameters: str = ""

    @classmethod
    def of(
        cls,
        job: Job,
        run_id: str,
        scheduled_at: datetime,
        *,
        generation: int | None = None,
        trigger: Trigger = Trigger.SCHEDULE,
        queued_at: datetime | None = None,
        starts_at: datetime | None = None,
        flows: list[str] | None = None,
        in_flight: tuple[str, str] | None = None,
        parameters: dict[str, Any] | None = None,
        upstream: dict[str, str] | None = None,
    ) -> ExecutionInput:
        params = job.parameters if parameters is None else parameters
        slots = [
            *(flows or ()),
            *([inflight.slot(*in_flight)] if in_flight else []),
            *([silence.slot(job.id)] if job.expect is not None else []),
            # completion triggers: the jobs following it hear of its end
            *([after.slot(job.followed_by)] if job.followed_by else []),
        ]
        return cls(
            job_id=job.id,
            run_id=run_id,
            owner=job.owner,
            scheduled_at=format_instant(scheduled_at),
            timeout_seconds=job.timeout_seconds,
            target=job.target,
            retry=job.retry,
            output_location=job.output_location or "",
            delivery=delivery(job.target),
            priority=job.priority.value,
            trigger=trigger.value,
            generation=job.generation if generation is None else generation,
            queued_at=format_instant(queued_at or scheduled_at),
            expires_at=int(scheduled_at.timestamp()) + r.RUN_RETENTION_SECONDS,
            exclusive=job.concurrency is not Concurrency.ALLOW,
            notify=job.tells_end(scheduled_at, trigger),
            starts_at=format_instant(starts_at or scheduled_at),
            flows=list(flows or ()),
            slots=" ".join(slots),
            in_flight=in_flight[0] if in_flight else "",
            in_flight_bucket=in_flight[1] if in_flight else "",
            values=RunValues(job_name=job.name, params=params, upstream=upstream or {}),
            parameters=json.dumps(params, separators=(",", ":")) if params else "",
        )

    def document(self) -> dict[str, Any]:
        """The JSON document the execution starts with."""
        return self.model_dump(mode="json")

    def fits_express(self) -> bool:
        """Can this run execute on the EXPRESS state machine? Not a container (its ``.sync``
        integration needs STANDARD), and every attempt at its timeout plus every retry wait
        within ``EXPRESS_BUDGET_SECONDS`` (an Express execution lasts 5 minutes at most)."""
        return (
            not isinstance(self.target, ContainerTarget)
            and worst_case_seconds(self.retry, self.timeout_seconds) <= r.EXPRESS_BUDGET_SECONDS
        )


def message_text(message: Any) -> str:
    """What a queue or topic receives: a string as it is, anything else as JSON."""
    return message if isinstance(message, str) else json.dumps(message)


def delivery(target: Target) -> dict[str, str]:
    """What the state machine's service integrations send for ``target``."""
    if isinstance(target, SqsTarget | SnsTarget):
        return {"message": message_text(target.message)}
    if isinstance(target, EventBridgeTarget):
        return {"detail": json.dumps(target.detail)}
    return {}


# --- What the state machine asks the runner ---------------------------------------------------


class AttemptRequest(BaseModel):
    """One attempt of a target the runner runs itself (http, python, lambda): state RunTarget.
    The requests are exactly what the ASL sends: anything else is refused."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    run_id: str
    #: Whose secrets the target may name.
    owner: str = ""
    scheduled_at: str
    timeout_seconds: int
    attempt: int = 1
    target: Target
    output_location: str | None = None
    #: What its placeholders read (see RunValues).
    values: RunValues = RunValues()
    #: The state machine writes the attempt's log lines with the outcome (EXPRESS, whose
    #: executions are never stopped); else the runner keeps them itself (STANDARD: a stopped
    #: execution records nothing the runner answers).
    logs_with_outcome: bool = False


class CollectRequest(BaseModel):
    """After a container task stopped: state CollectContainer (``collect_container``)."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    run_id: str
    attempt: int
    output_location: str | None = None
    task: dict[str, Any]
    logs_with_outcome: bool = False
    #: The owner and the target: the values of the secrets it names are scrubbed from the
    #: container's logs.
    owner: str = ""
    target: ContainerTarget | None = None


class PrepareRequest(BaseModel):
    """Which task definition runs a container target: state PrepareContainer
    (``prepare_container``)."""

    model_config = ConfigDict(extra="forbid")

    target: ContainerTarget
    #: Whose secrets the target's environment names (ECS hands them to the task).
    owner: str = ""
    #: The run, and what its placeholders read: the command and environment are expanded
    #: here, and the command goes back for RunTask.
    run_id: str = ""
    scheduled_at: str = ""
    values: RunValues = RunValues()


class DecideRequest(BaseModel):
    """After a failed attempt, what next: state Decide (``decide``)."""

    model_config = ConfigDict(extra="forbid")

    retry: RetryPolicy
    attempt: int
    error: str
    cause: str = ""


#: A list of strings as DynamoDB types it.
TypedList = dict[str, list[dict[str, str]]]


def _typed(strings: list[str]) -> TypedList:
    return {"L": [{"S": text} for text in strings]}


class AttemptResult(_Contract):
    """The runner's answer to an attempt or a collect that succeeded: the output inline, or
    where it is kept (the other field ``""``: the ASL writes both as they are); and the
    attempt's log lines, which the state machine writes with the outcome: inline
    (``logs``, ``log_bytes``) or the S3 object holding them (``log_objects``). The lists are
    DynamoDB-typed (``{"L": [{"S": line}, ...]}``), as the ASL's DynamoDB tasks write them."""

    output: str
    output_location: str
    logs: TypedList = Field(default_factory=lambda: _typed([]))
    log_objects: TypedList = Field(default_factory=lambda: _typed([]))
    log_bytes: int = 0

    @staticmethod
    def typed(strings: list[str]) -> TypedList:
        return _typed(strings)

    def lines(self) -> list[str]:
        return [entry["S"] for entry in self.logs["L"]]

    def objects(self) -> list[str]:
        return [entry["S"] for entry in self.log_objects["L"]]


class PrepareResult(_Contract):
    task_definition: str
    #: The container's command, its placeholders expanded.
    command: list[str] = Field(default_factory=list)


class DecideResult(_Contract):
    retry: bool
    wait_seconds: int
    reason: str
    summary: str


#: The key of each kind of request in the runner's event (an attempt has none).
PREPARE_CONTAINER = "prepare_container"
COLLECT_CONTAINER = "collect_container"
DECIDE = "decide"


class NotARunnerRequest(ValueError):
    """The runner was sent something the state machine never sends."""


def check_request(event: Any) -> None:
    """Raise NotARunnerRequest unless ``event`` is a JSON object that is one request of the
    state machine's (an attempt, or exactly one of the keyed requests)."""
    if not isinstance(event, dict):
        raise NotARunnerRequest("the runner takes a JSON object from the run state machine")
    keyed = [key for key in (PREPARE_CONTAINER, COLLECT_CONTAINER, DECIDE) if key in event]
    if keyed and len(event) != 1:
        raise NotARunnerRequest(f"a {keyed[0]} request has no other keys")


# --- What Step Functions says of a failure --------------------------------------------------


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


#: The longest error description kept per attempt (a run keeps up to 20 attempts).
MAX_SUMMARY_CHARS = 1000


def summary(error: str, cause: str) -> str:
    """One bounded line for a failed attempt, from Step Functions' error name and cause."""
    text = describe_error(error, cause) or error
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"
