"""The runner: one attempt of a run's target, its log and output kept (the state machine
records the rest: status, attempts, times); and the state machine's other questions to it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from chronoq.domain import placeholders, secrets
from chronoq.domain.errors import PermanentError, TargetError
from chronoq.domain.retry import decide
from chronoq.domain.runs import log_size
from chronoq.domain.secrets import RunContext, SecretUnavailable
from chronoq.domain.targets import (
    ContainerTarget,
    HttpTarget,
    LambdaTarget,
    PythonTarget,
)
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
    #: The parameter holding an owner's secret (owner, name -> its name or ARN): what a task
    #: definition's ``secrets`` name (None: a deployment without secrets).
    secret_parameter: Callable[[str, str], str] | None = None


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
        succeeded. Raises when the attempt failed. The values of the secrets it names are
        read now, and scrubbed from its log, its output and its error."""
        resolved: dict[str, str] = {}
        return self._keeping(request, lambda log: self._run(request, log, resolved), resolved)

    def decide(self, request: DecideRequest) -> DecideResult:
        """After a failed attempt: retry (after how long) or give up."""
        decision = decide(request.retry, request.attempt, request.error)
        return DecideResult(**asdict(decision), summary=summary(request.error, request.cause))

    def prepare_container(
        self, target: ContainerTarget, owner: str = "", context: RunContext | None = None
    ) -> PrepareResult:
        """The task definition of ``target`` (its secrets: ``owner``'s, read by ECS), and its
        command: its placeholders and its environment's expanded with the run's values
        (``context``), and checked (see ``placeholders.expand_container``)."""
        if context is not None:
            target = _expanded(lambda: placeholders.expand_container(target, context))
        ecs = self.ecs_client()
        arn = targets.prepare_container(
            ecs,
            target,
            self.containers.log_group,
            ecs.meta.region_name,
            self.containers.execution_role_arn,
            self.containers.task_role_arn,
            owner,
            self.containers.secret_parameter,
        )
        return PrepareResult(task_definition=arn, command=list(target.command))

    def collect_container(self, request: CollectRequest) -> AttemptResult:
        logs, group = self.logs_client(), self.containers.log_group
        resolved: dict[str, str] = {}

        def collect(log: targets.Log) -> Any:
            if request.target is not None:  # (its secrets: scrubbed from what it logged)
                resolved.update(self._values(request.owner, request.target))
            return targets.collect_container(logs, request.task, group, log)

        return self._keeping(request, collect, resolved)

    def _values(self, owner: str, target: Any) -> dict[str, str]:
        """The values of the secrets ``target`` names: a secret gone or denied fails the
        attempt for good, one that could not be read now fails it (it is tried again)."""
        names = secrets.names_in(target)
        if not names:
            return {}
        if self.secrets is None:
            raise PermanentError("this deployment keeps no secrets")
        try:
            return self.secrets.values_of(owner, names)
        except SecretUnavailable as error:
            if error.retryable:
                raise TargetError(str(error)) from None
            raise PermanentError(str(error)) from None

    def _keeping(
        self,
        request: AttemptRequest | CollectRequest,
        work: Callable[[targets.Log], Any],
        resolved: Mapping[str, str],
    ) -> AttemptResult:
        """Do ``work`` and keep its result. The lines it logged are kept here if it failed,
        or if the request says so (STANDARD); else (EXPRESS) they go back with the result and
        the state machine writes them with the run's outcome: one write fewer per run. Every
        value in ``resolved`` (the secrets ``work`` used, as it finds them) is scrubbed from
        them, from its result and from its error first."""
        lines, log = targets.lines_collector(request.attempt)
        try:
            result = work(log)
        except BaseException as error:
            lines[:] = [secrets.scrub(line, resolved.values()) for line in lines]
            self.artifacts.append_logs(
                request.job_id, request.run_id, request.attempt, lines, request.output_location
            )
            scrubbed = _scrubbed(error, resolved.values())
            if scrubbed is error:
                raise
            raise scrubbed from None
        if resolved:
            lines[:] = [secrets.scrub(line, resolved.values()) for line in lines]
            result = secrets.scrub_json(result, resolved.values())
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

    def _run(self, request: AttemptRequest, log: targets.Log, resolved: dict[str, str]) -> Any:
        target = request.target
        deadline = targets.runner_deadline(request.timeout_seconds)
        resolved.update(self._values(request.owner, target))
        values = request.values.context(request.run_id, request.scheduled_at)
        target = _expanded(lambda: placeholders.expand(target, resolved, values))
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
                    environment=resolved_environment(target),
                )
            }
        if isinstance(target, LambdaTarget):
            context = request.model_dump(
                include={"job_id", "run_id", "scheduled_at", "attempt"}, mode="json"
            )
            return targets.run_lambda(self.lambda_client(), target, context, log)
        raise TypeError(f"the state machine delivers {target.type} targets itself")


def _scrubbed(error: BaseException, values: Iterable[str]) -> BaseException:
    """``error``, or, if its message holds a secret's value, the same error without it (its
    message reaches the state machine's history)."""
    shown = str(error)
    clean = secrets.scrub(shown, values)
    if clean == shown:
        return error
    if isinstance(error, PermanentError | TargetError):
        return type(error)(clean)
    return TargetError(f"{type(error).__name__}: {clean}")


def _expanded(expand: Callable[[], Any]) -> Any:
    """A target expanded: a placeholder without a value, or a value the target's checks
    refuse, fails the attempt for good (trying again would put in the same values)."""
    try:
        return expand()
    except (secrets.MissingValue, placeholders.Refused) as error:
        raise PermanentError(str(error)) from None


def resolved_environment(target: PythonTarget) -> dict[str, str]:
    """A python task's environment as its task reads it (``context.environment``)."""
    return {k: v for k, v in target.environment.items() if isinstance(v, str)}
