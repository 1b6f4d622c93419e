"""Runner: one attempt of a run's target, invoked by the run state machine. It also serves the
state machine's other questions: after a failed attempt, whether to retry (chronoq.retry);
for a container target, which task definition to run and, once the task stopped, its logs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq.models import ContainerTarget, RetryPolicy
from chronoq.retry import decide, summary
from chronoq.runner import AttemptRequest, CollectRequest, Runner
from chronoq.settings import Settings
from pydantic import BaseModel

logger = Logger(service="chronoq-runner")


class Failure(BaseModel):
    """After a failed attempt, the state machine asks what next."""

    retry: RetryPolicy
    attempt: int
    error: str
    cause: str = ""


class Prepare(BaseModel):
    target: ContainerTarget


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "decide" in event:
        failure = Failure.model_validate(event["decide"])
        decision = decide(failure.retry, failure.attempt, failure.error)
        return {**asdict(decision), "summary": summary(failure.error, failure.cause)}
    runner = Runner(Settings.from_env())
    if "prepare_container" in event:
        return runner.prepare_container(Prepare.model_validate(event["prepare_container"]).target)
    if "collect_container" in event:
        return runner.collect_container(CollectRequest.model_validate(event["collect_container"]))
    request = AttemptRequest.model_validate(event)
    logger.append_keys(job_id=request.job_id, run_id=request.run_id, attempt=request.attempt)
    result = runner.attempt(request)
    logger.info("attempt succeeded", extra={"output_location": result["output_location"]})
    return result
