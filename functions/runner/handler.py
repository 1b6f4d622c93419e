"""Runner: one attempt of a run's target, invoked by the run state machine. It also serves the
state machine's other questions: after a failed attempt, whether to retry (chronoq.domain.retry);
for a container target, which task definition to run and, once the task stopped, its logs.
The requests and answers are chronoq.execution.contract's."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.execution import contract
from chronoq.origin import refuse_client_context
from chronoq.settings import RunnerSettings, load

logger = Logger(service="chronoq-runner")
runner = compose.runner(load(RunnerSettings))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not the state machine
    contract.check_request(event)
    if contract.DECIDE in event:
        decision = runner.decide(contract.DecideRequest.model_validate(event[contract.DECIDE]))
        return decision.model_dump()
    if contract.PREPARE_CONTAINER in event:
        request = contract.PrepareRequest.model_validate(event[contract.PREPARE_CONTAINER])
        return runner.prepare_container(request.target).model_dump()
    if contract.COLLECT_CONTAINER in event:
        collect = contract.CollectRequest.model_validate(event[contract.COLLECT_CONTAINER])
        return runner.collect_container(collect).model_dump()
    attempt = contract.AttemptRequest.model_validate(event)
    logger.append_keys(job_id=attempt.job_id, run_id=attempt.run_id, attempt=attempt.attempt)
    result = runner.attempt(attempt)
    logger.debug("attempt succeeded", extra={"output_location": result.output_location})
    return result.model_dump()
