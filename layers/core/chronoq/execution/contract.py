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

from chronoq.domain.jobs import Job, RetryPolicy
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

    @classmethod
    def of(cls, job: Job, run_id: str, scheduled_at: datetime) -> ExecutionInput:
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
        )

    def document(self) -> dict[str, Any]:
        """The JSON document the execution starts with."""
        return self.model_dump(mode="json")


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
    """One attempt of a target the runner runs itself (http, python, lambda): state RunTarget."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    run_id: str
    scheduled_at: str
    timeout_seconds: int
    attempt: int = 1
    target: Target
    output_location: str | None = None


class CollectRequest(BaseModel):
    """After a container task stopped: state CollectContainer (``collect_container``)."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    run_id: str
    attempt: int
    output_location: str | None = None
    task: dict[str, Any]


class PrepareRequest(BaseModel):
    """Which task definition runs a container target: state PrepareContainer
    (``prepare_container``)."""

    target: ContainerTarget


class DecideRequest(BaseModel):
    """After a failed attempt, what next: state Decide (``decide``)."""

    retry: RetryPolicy
    attempt: int
    error: str
    cause: str = ""


class AttemptResult(_Contract):
    """The runner's answer to an attempt or a collect: the output inline, or where it is kept
    (the other field ``""``: the ASL writes both as they are)."""

    output: str
    output_location: str


class PrepareResult(_Contract):
    task_definition: str


class DecideResult(_Contract):
    retry: bool
    wait_seconds: int
    reason: str
    summary: str


#: The key of each kind of request in the runner's event (an attempt has none).
PREPARE_CONTAINER = "prepare_container"
COLLECT_CONTAINER = "collect_container"
DECIDE = "decide"


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
