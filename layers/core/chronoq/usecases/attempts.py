"""The runner: one attempt of a run's target, its log and output kept (the state machine
records the rest: status, attempts, times); and the state machine's other questions to it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from chronoq.domain.retry import decide
from chronoq.domain.runs import log_size
from chronoq.domain.targets import ContainerTarget, HttpTarget, LambdaTarget, PythonTarget
from chronoq.execution import targets
from chronoq.execution.contract import (
    AttemptRequest,
    AttemptResult,
    CollectRequest,
    DecideRequest,
    DecideResult,
    PrepareResult,
    summary,
)
from chronoq.execution.egress import Egress
from chronoq.usecases.ports import Artifacts
from chronoq.usecases.secrets import Resolver

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_logs import CloudWatchLogsClient


@dataclass(frozen=True)
class ContainerSettings:
    """Where container targets' task definitions send their logs, and the roles they use."""

    log_group: str
    execution_role_arn: str
    task_role_arn: str


@dataclass
class Runner:
    artifacts: Artifacts
    #: Clients built on first use (a runner that never meets a container needs no ECS).
    lambda_client: Callable[[], LambdaClient]
    ecs_client: Callable[[], ECSClient]
    logs_client: Callable[[], CloudWatchLogsClient]
    containers: ContainerSettings
    #: The deployment's own task modules (see chronoq.tasks).
    task_modules: tuple[str, ...] = ()
    #: How http targets are called (the SSRF guard).
    egress: Egress = field(default_factory=Egress)
    #: The values of the secrets a target names (None: a deployment without secrets).
    secrets: Resolver | None = None

    def attempt(self, request: AttemptRequest) -> AttemptResult:
        """Run the target once; keep its log whatever happens, and its output if it
        succeeded. Raises when the attempt failed."""
        return self._keeping(request, lambda log: self._run(request, log))

    def decide(self, request: DecideRequest) -> DecideResult:
        """After a failed attempt: retry (after how long) or give up."""
        decision = decide(request.retry, request.attempt, request.error)
        return DecideResult(**asdict(decision), summary=summary(request.error, request.cause))

    def prepare_container(self, target: ContainerTarget) -> PrepareResult:
        ecs = self.ecs_client()
        arn = targets.prepare_container(
            ecs,
            target,
            self.containers.log_group,
            ecs.meta.region_name,
            self.containers.execution_role_arn,
            self.containers.task_role_arn,
        )
        return PrepareResult(task_definition=arn)

    def collect_container(self, request: CollectRequest) -> AttemptResult:
        logs, group = self.logs_client(), self.containers.log_group
        return self._keeping(
            request, lambda log: targets.collect_container(logs, request.task, group, log)
        )

    def _keeping(
        self, request: AttemptRequest | CollectRequest, work: Callable[[targets.Log], Any]
    ) -> AttemptResult:
        """Do ``work`` and keep its result. The lines it logged are kept here if it failed,
        or if the request says so (STANDARD); else (EXPRESS) they go back with the result and
        the state machine writes them with the run's outcome: one write fewer per run."""
        lines, log = targets.lines_collector(request.attempt)
        try:
            result = work(log)
        except BaseException:
            self.artifacts.append_logs(
                request.job_id, request.run_id, request.attempt, lines, request.output_location
            )
            raise
        if not request.logs_with_outcome:
            self.artifacts.append_logs(
                request.job_id, request.run_id, request.attempt, lines, request.output_location
            )
            lines = []
        kept = self.artifacts.save_output(
            request.job_id,
            request.run_id,
            request.attempt,
            json.dumps(result, separators=(",", ":")),
            request.output_location,
        )
        location = self.artifacts.log_object(
            request.job_id, request.run_id, request.attempt, lines, request.output_location
        )
        inline = [] if location else list(lines)
        return AttemptResult(
            **kept,
            logs=AttemptResult.typed(inline),
            log_objects=AttemptResult.typed([location] if location else []),
            log_bytes=log_size(inline),
        )

    def _run(self, request: AttemptRequest, log: targets.Log) -> Any:
        target = request.target
        deadline = targets.runner_deadline(request.timeout_seconds)
        if isinstance(target, HttpTarget):
            headers = {
                "X-Chronoq-Job-Id": request.job_id,
                "X-Chronoq-Run-Id": request.run_id,
                "X-Chronoq-Scheduled-At": request.scheduled_at,
                "X-Chronoq-Attempt": str(request.attempt),
            }
            return targets.run_http(target, deadline, headers, log, self.egress)
        if isinstance(target, PythonTarget):
            return {
                "result": targets.run_python(
                    target,
                    self.task_modules,
                    request.job_id,
                    request.run_id,
                    request.attempt,
                    request.scheduled_at,
                    deadline,
                    log,
                )
            }
        if isinstance(target, LambdaTarget):
            context = request.model_dump(
                include={"job_id", "run_id", "scheduled_at", "attempt"}, mode="json"
            )
            return targets.run_lambda(self.lambda_client(), target, context, log)
        raise TypeError(f"the state machine delivers {target.type} targets itself")
