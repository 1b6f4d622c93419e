"""Runner: one attempt of a run's target, invoked by the run state machine; after a failed
attempt, the state machine asks it whether to retry (chronoq.retry)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq.models import HttpTarget, RetryPolicy, Target
from chronoq.retry import decide
from chronoq.targets import run_http, run_python
from chronoq.tasks import RunContext
from pydantic import BaseModel, ConfigDict

logger = Logger(service="chronoq-runner")


class Attempt(BaseModel):
    model_config = ConfigDict(extra="ignore")

    job_id: str
    run_id: str
    scheduled_at: str
    timeout_seconds: int
    attempt: int = 1
    target: Target


class Failure(BaseModel):
    """After a failed attempt, the state machine asks what next."""

    retry: RetryPolicy
    attempt: int
    error: str


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "decide" in event:
        failure = Failure.model_validate(event["decide"])
        return asdict(decide(failure.retry, failure.attempt, failure.error))
    attempt = Attempt.model_validate(event)
    logger.append_keys(job_id=attempt.job_id, run_id=attempt.run_id)
    if isinstance(attempt.target, HttpTarget):
        headers = {
            "X-Chronoq-Job-Id": attempt.job_id,
            "X-Chronoq-Run-Id": attempt.run_id,
            "X-Chronoq-Scheduled-At": attempt.scheduled_at,
        }
        result = run_http(attempt.target, attempt.timeout_seconds, headers)
        logger.info("target answered", extra={"status_code": result["status_code"]})
        return result
    context_ = RunContext(attempt.job_id, attempt.run_id, attempt.attempt, attempt.scheduled_at)
    return {"result": run_python(attempt.target, context_)}
