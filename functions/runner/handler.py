"""Runner: one attempt of a run's target, invoked by the run state machine. It also serves the
state machine's other questions: after a failed attempt, whether to retry (chronoq.domain.retry);
for a container target, which task definition to run and, once the task stopped, its logs.
The requests and answers are chronoq.execution.contract's."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq import metrics as chronoq_metrics
from chronoq import resources as r
from chronoq.domain.time import utc_now
from chronoq.execution import contract
from chronoq.origin import refuse_client_context
from chronoq.settings import RunnerSettings, load

logger = Logger(service="chronoq-runner")
metrics = chronoq_metrics.for_function(r.RUNNER_FUNCTION)
runner = compose.runner(load(RunnerSettings))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not the state machine
    contract.check_request(event)
    try:
        return _handle(event)
    finally:
        chronoq_metrics.flush(metrics)  # once per invocation, whatever happened


def _handle(event: dict[str, Any]) -> dict[str, Any]:
    if contract.DECIDE in event:
        request = contract.DecideRequest.model_validate(event[contract.DECIDE])
        decision = runner.decide(request)
        if not decision.retry:
            chronoq_metrics.given_up(metrics, request.error)
        return decision.model_dump()
    if contract.PREPARE_CONTAINER in event:
        prepare = contract.PrepareRequest.model_validate(event[contract.PREPARE_CONTAINER])
        context = prepare.values.context(prepare.run_id, prepare.scheduled_at)
        return runner.prepare_container(prepare.target, prepare.owner, context).model_dump()
    if contract.COLLECT_CONTAINER in event:
        collect = contract.CollectRequest.model_validate(event[contract.COLLECT_CONTAINER])
        collected = runner.collect_container(collect).model_dump()
        chronoq_metrics.attempt_succeeded(metrics, collect.job_id)
        return collected
    attempt = contract.AttemptRequest.model_validate(event)
    logger.append_keys(job_id=attempt.job_id, run_id=attempt.run_id, attempt=attempt.attempt)
    chronoq_metrics.attempt_started(
        metrics, attempt.job_id, attempt.attempt, attempt.scheduled_at, utc_now()
    )
    result = runner.attempt(attempt)
    chronoq_metrics.attempt_succeeded(metrics, attempt.job_id)
    logger.debug("attempt succeeded", extra={"output_location": result.output_location})
    return result.model_dump()
