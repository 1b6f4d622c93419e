"""The runner's side of a run: one attempt of a target, its log and output kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from chronoq import aws, targets
from chronoq.artifacts import Artifacts
from chronoq.models import ContainerTarget, HttpTarget, LambdaTarget, PythonTarget, Target
from chronoq.settings import Settings


class AttemptRequest(BaseModel):
    """What the state machine hands the runner for one attempt."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    run_id: str
    scheduled_at: str
    timeout_seconds: int
    attempt: int = 1
    target: Target
    output_location: str | None = None


class CollectRequest(BaseModel):
    """After a container task stopped."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    run_id: str
    attempt: int
    output_location: str | None = None
    task: dict[str, Any]


class Runner:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.artifacts = Artifacts(
            aws.dynamodb(), aws.client("s3"), settings.runs_table, settings.output_bucket
        )

    def attempt(self, request: AttemptRequest) -> dict[str, str]:
        """Run the target once; keep its log whatever happens, and its output if it
        succeeded. Raises when the attempt failed."""
        return self._keeping(request, lambda log: self._run(request, log))

    def _keeping(
        self, request: AttemptRequest | CollectRequest, work: Callable[[targets.Log], Any]
    ) -> dict[str, str]:
        """Do ``work``, then keep the lines it logged (whatever happened) and its result."""
        lines, log = targets.lines_collector(request.attempt)
        try:
            result = work(log)
        finally:
            self.artifacts.append_logs(
                request.job_id, request.run_id, request.attempt, lines, request.output_location
            )
        return self.artifacts.save_output(
            request.job_id,
            request.run_id,
            request.attempt,
            json.dumps(result, separators=(",", ":")),
            request.output_location,
        )

    def _run(self, request: AttemptRequest, log: targets.Log) -> Any:
        target = request.target
        if isinstance(target, HttpTarget):
            headers = {
                "X-Chronoq-Job-Id": request.job_id,
                "X-Chronoq-Run-Id": request.run_id,
                "X-Chronoq-Scheduled-At": request.scheduled_at,
                "X-Chronoq-Attempt": str(request.attempt),
            }
            return targets.run_http(target, request.timeout_seconds, headers, log)
        if isinstance(target, PythonTarget):
            return {
                "result": targets.run_python(
                    target,
                    request.job_id,
                    request.run_id,
                    request.attempt,
                    request.scheduled_at,
                    request.timeout_seconds,
                    log,
                )
            }
        if isinstance(target, LambdaTarget):
            context = request.model_dump(
                include={"job_id", "run_id", "scheduled_at", "attempt"}, mode="json"
            )
            return targets.run_lambda(aws.lambda_invoker(), target, context, log)
        raise TypeError(f"the state machine delivers {target.type} targets itself")

    def prepare_container(self, target: ContainerTarget) -> dict[str, str]:
        ecs = aws.client("ecs")
        arn = targets.prepare_container(
            ecs,
            target,
            self.settings.container_log_group,
            ecs.meta.region_name,
            self.settings.container_execution_role_arn,
            self.settings.container_task_role_arn,
        )
        return {"task_definition": arn}

    def collect_container(self, request: CollectRequest) -> dict[str, str]:
        logs, group = aws.client("logs"), self.settings.container_log_group
        return self._keeping(
            request, lambda log: targets.collect_container(logs, request.task, group, log)
        )
