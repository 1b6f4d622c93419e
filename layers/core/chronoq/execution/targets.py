"""What a run does: one attempt of a job's target (the runner's part of it).

sqs, sns and eventbridge targets need no code here: the state machine delivers them itself.
Each function records what it did in ``log`` (a list of lines, see chronoq.domain.runs.log_line).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import urllib3
from botocore.exceptions import ClientError

from chronoq import resources as r
from chronoq import tasks
from chronoq.domain.errors import PermanentError, TargetError
from chronoq.domain.runs import log_line
from chronoq.domain.targets import ContainerTarget, HttpTarget, LambdaTarget, PythonTarget
from chronoq.execution import waits
from chronoq.execution.egress import BlockedTarget, Egress
from chronoq.origin import target_client_context

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_ecs.type_defs import ContainerDefinitionTypeDef
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_logs import CloudWatchLogsClient

Log = Callable[[str], None]


def run_http(
    target: HttpTarget,
    timeout_seconds: float,
    headers: dict[str, str],
    log: Log,
    egress: Egress | None = None,
) -> dict[str, Any]:
    """Call the endpoint once: no redirects followed, no retries (the run's policy decides),
    the whole call bounded by ``timeout_seconds``, the host checked by the deployment's
    network policy (``egress``). Success is a 2xx answer; the result keeps the status code
    and the first bytes of the body."""
    egress = egress or Egress()
    body: bytes | None = None
    log(f"{target.method} {target.url}")
    started = time.monotonic()
    # chronoq's own headers last: a job cannot override them (nor can it name them at all)
    given = {k: v for k, v in target.headers.items() if isinstance(v, str)}
    if len(given) != len(target.headers):
        raise PermanentError("a header names a secret that was not resolved")
    all_headers = {"User-Agent": "chronoq", **given, **headers}
    if target.body is not None:
        body = json.dumps(target.body).encode()
        if not any(k.lower() == "content-type" for k in all_headers):
            all_headers["Content-Type"] = "application/json"
    try:
        response = egress.request(
            target.method,
            target.url,
            body=body,
            headers=all_headers,
            timeout=urllib3.Timeout(total=timeout_seconds),
            preload_content=False,
        )
        excerpt = response.read(r.OUTPUT_EXCERPT_BYTES, decode_content=True)
        response.release_conn()
    except BlockedTarget as error:
        log(f"refused: {error}")
        raise PermanentError(f"{target.method} {target.url} refused: {error}") from None
    except urllib3.exceptions.NewConnectionError as error:  # (a TimeoutError in urllib3 2)
        log(f"failed: {error}")
        raise TargetError(f"{target.method} {target.url} failed: {error}") from None
    except urllib3.exceptions.TimeoutError as error:
        log(f"no answer within {timeout_seconds:g} s: {error}")
        raise AttemptTimedOut(f"{target.method} {target.url}: no answer in time") from None
    except urllib3.exceptions.HTTPError as error:
        log(f"failed: {error}")
        raise TargetError(f"{target.method} {target.url} failed: {error}") from None
    text = excerpt.decode("utf-8", errors="replace")
    log(f"answered HTTP {response.status} in {(time.monotonic() - started) * 1000:.0f} ms")
    if 400 <= response.status < 500 and response.status not in (408, 429):
        raise PermanentError(
            f"{target.method} {target.url} answered HTTP {response.status}: {text}"
        )
    if not 200 <= response.status < 300:
        raise TargetError(f"{target.method} {target.url} answered HTTP {response.status}: {text}")
    return {"status_code": response.status, "body": text}


class _Lines(logging.Handler):
    def __init__(self, log: Log) -> None:
        super().__init__()
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        self._log(f"{record.levelname} {record.getMessage()}")


@contextmanager
def task_logger(run_id: str, log: Log) -> Iterator[logging.Logger]:
    """A logger for one attempt of a task: its records go to ``log`` (and on to the
    function's own log). Not registered with logging, so nothing piles up."""
    logger = logging.Logger(f"chronoq.task.{run_id}", logging.INFO)
    logger.parent = logging.getLogger("chronoq.task")
    handler = _Lines(log)
    logger.addHandler(handler)
    try:
        yield logger
    finally:
        logger.removeHandler(handler)


class AttemptTimedOut(TargetError):
    """The target was still running at the job's timeout_seconds (the state machine records
    the attempt TIMED_OUT, as it does a timeout of its own)."""


def runner_deadline(timeout_seconds: float) -> float:
    """When the runner gives up on an attempt: a little before the state machine's own
    timeout, so that the runner still answers, and keeps the attempt's log, in time."""
    return timeout_seconds - min(r.RUNNER_DEADLINE_MARGIN_SECONDS, timeout_seconds / 10)


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``, given up with AttemptTimedOut after ``seconds``. In a process's main thread
    (where Lambda runs handlers) the call is interrupted, so that a task the runner gave up
    on does not run on beside the next attempt; elsewhere (chronoq local runs functions in
    threads) it is left to finish in a thread of its own, its result unused."""
    if threading.current_thread() is threading.main_thread():
        return _interrupted_after(seconds, call)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as error:  # handed to the caller below
            outcome["error"] = error

    worker = threading.Thread(target=run, name="chronoq-attempt", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise AttemptTimedOut(f"still running after {seconds:g} s: given up")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def _interrupted_after(seconds: float, call: Callable[[], Any]) -> Any:
    def expire(signum: int, frame: Any) -> None:
        raise AttemptTimedOut(f"still running after {seconds:g} s: stopped")

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # someone else's timer was running: give it back what it has left
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - started)))


def run_python(
    target: PythonTarget,
    modules: tuple[str, ...],
    job_id: str,
    run_id: str,
    attempt: int,
    scheduled_at: str,
    timeout_seconds: float,
    log: Log,
    environment: dict[str, str] | None = None,
) -> Any:
    """Call the registered task once, for at most ``timeout_seconds``; its return value is
    the attempt's output. ``environment``: what the task reads as ``context.environment``."""
    function = tasks.lookup(target.task, modules)
    if function is None:
        raise PermanentError(f"{target.task} is not a registered task")
    log(f"calling {target.task}")
    with task_logger(run_id, log) as logger:
        context = tasks.RunContext(
            job_id, run_id, attempt, scheduled_at, logger, dict(environment or {})
        )
        try:
            with waits.waiting():
                result = within(timeout_seconds, lambda: function(dict(target.args), context))
        except PermanentError as error:
            log(f"{target.task} raised {type(error).__name__}: {error}")
            if type(error) is PermanentError:
                raise
            # the class the state machine knows, whatever the task subclassed it as
            raise PermanentError(f"{type(error).__name__}: {error}") from error
        except Exception as error:
            log(f"{target.task} raised {type(error).__name__}: {error}")
            raise
    json.dumps(result)  # the output must be JSON: fail here, not in the state machine
    return result


def run_lambda(
    client: LambdaClient, target: LambdaTarget, default_payload: dict[str, Any], log: Log
) -> Any:
    """Invoke the function once and wait for it; its answer is the output and the tail of
    its log joins the run's log. A function error fails the attempt."""
    payload = default_payload if target.payload is None else target.payload
    log(f"invoking {target.function_arn}")
    try:
        with waits.waiting():
            answer = client.invoke(
                FunctionName=target.function_arn,
                InvocationType="RequestResponse",
                LogType="Tail",
                Payload=json.dumps(payload).encode(),
                # marks the invocation as a target's: chronoq's own functions refuse it
                ClientContext=target_client_context(
                    str(default_payload.get("job_id", "")), str(default_payload.get("run_id", ""))
                ),
            )
    except client.exceptions.ResourceNotFoundException as error:
        raise PermanentError(f"{target.function_arn}: {error}") from None
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "AccessDeniedException":
            raise
        log(f"refused: {error}")  # (chronoq's own functions, say: trying again cannot help)
        raise PermanentError(f"{target.function_arn}: {error}") from None
    for line in base64.b64decode(answer.get("LogResult", "")).decode(errors="replace").splitlines():
        log(f"| {line}")
    body = answer["Payload"].read().decode()
    if answer.get("FunctionError"):
        try:
            document = json.loads(body)
            message = f"{document.get('errorType')}: {document.get('errorMessage')}"
        except (ValueError, AttributeError):
            message = body[: r.OUTPUT_EXCERPT_BYTES]
        log(f"function error: {message}")
        raise TargetError(f"{target.function_arn} failed: {message}")
    log(f"function answered {len(body)} bytes")
    return json.loads(body) if body else None


# --- containers ---------------------------------------------------------------------------


def task_family(
    target: ContainerTarget,
    owner: str = "",
    secrets: Sequence[tuple[str, str]] = (),
    deployment: Sequence[str] = (),
) -> str:
    """One task definition family per image, size and environment, and per deployment
    (``deployment``: what its task definitions name of it, its roles and log group: two
    stacks of one account never run each other's, with each other's roles); a target whose
    variables name secrets (``secrets``: each variable and the ARN of the parameter ECS reads
    it from), one per owner and those too, so that two owners' task definitions never mix."""
    plain = sorted((k, v) for k, v in target.environment.items() if isinstance(v, str))
    parts: list[Any] = [target.image, target.cpu, target.memory, plain]
    if deployment:
        parts.append(list(deployment))
    if secrets:
        parts += [owner, sorted(secrets)]
    key = json.dumps(parts)
    return "chronoq-" + hashlib.sha256(key.encode()).hexdigest()[:20]


def prepare_container(
    client: ECSClient,
    target: ContainerTarget,
    log_group: str,
    region: str,
    execution_role_arn: str,
    task_role_arn: str,
    owner: str = "",
    secret_parameter: Callable[[str, str], str] | None = None,
) -> str:
    """The ARN of the task definition that runs ``target`` (registered on first use).

    Plain variables go in its ``environment``; a variable that is a secret
    (``{"secret": name}``) goes in its ``secrets``, read by ECS from the parameter of
    ``owner``'s secret as it starts the task (its latest version), never written anywhere
    else. ``secret_parameter(owner, name)`` names that parameter (SsmSecretValues.parameter:
    its name, made an ARN here in ``region`` and the account of the execution role; or its
    ARN)."""
    references = sorted(
        (k, v.secret) for k, v in target.environment.items() if not isinstance(v, str)
    )
    secrets: list[tuple[str, str]] = []
    if references:
        if secret_parameter is None or not owner:
            raise PermanentError(
                "this container's environment names secrets, which this runner cannot hand to"
                " ECS (no owner or secrets' store given)"
            )
        # arn:<partition>:iam::<account>:role/...: the task runs in the role's account
        partition, account = execution_role_arn.split(":")[1], execution_role_arn.split(":")[4]
        for variable, name in references:
            parameter = secret_parameter(owner, name)
            if not parameter.startswith("arn:"):
                slash = "" if parameter.startswith("/") else "/"
                parameter = f"arn:{partition}:ssm:{region}:{account}:parameter{slash}{parameter}"
            secrets.append((variable, parameter))
    family = task_family(target, owner, secrets, (execution_role_arn, task_role_arn, log_group))
    try:
        found = client.describe_task_definition(taskDefinition=family)["taskDefinition"]
        if found.get("status") == "ACTIVE":
            return found["taskDefinitionArn"]
    except client.exceptions.ClientException:
        pass  # not registered yet
    container: ContainerDefinitionTypeDef = {
        "name": r.CONTAINER_NAME,
        "image": target.image,
        "essential": True,
        "memory": target.memory,
        "environment": [
            {"name": k, "value": v}
            for k, v in sorted(target.environment.items())
            if isinstance(v, str)
        ],
        "logConfiguration": {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": log_group,
                "awslogs-region": region,
                "awslogs-stream-prefix": r.CONTAINER_LOG_PREFIX,
            },
        },
    }
    if secrets:
        container["secrets"] = [{"name": k, "valueFrom": arn} for k, arn in secrets]
    registered = client.register_task_definition(
        family=family,
        requiresCompatibilities=["FARGATE"],
        networkMode="awsvpc",
        cpu=str(target.cpu),
        memory=str(target.memory),
        executionRoleArn=execution_role_arn,
        taskRoleArn=task_role_arn,
        containerDefinitions=[container],
    )
    return registered["taskDefinition"]["taskDefinitionArn"]


def container_log_stream(task_arn: str) -> str:
    """The awslogs stream of a task's container: prefix/container-name/task-id."""
    return f"{r.CONTAINER_LOG_PREFIX}/{r.CONTAINER_NAME}/{task_arn.rsplit('/', 1)[-1]}"


def collect_container(
    logs: CloudWatchLogsClient, task: dict[str, Any], log_group: str, log: Log
) -> dict[str, Any]:
    """After the task stopped: its log lines join the run's log; exit code 0 is success."""
    task_arn = str(task.get("TaskArn", ""))
    log(f"task {task_arn} stopped: {task.get('StoppedReason') or task.get('StopCode') or ''}")
    token: str | None = None
    try:
        while True:
            stream = container_log_stream(task_arn)
            page = (
                logs.get_log_events(
                    logGroupName=log_group,
                    logStreamName=stream,
                    startFromHead=True,
                    nextToken=token,
                )
                if token
                else logs.get_log_events(
                    logGroupName=log_group, logStreamName=stream, startFromHead=True
                )
            )
            for event in page["events"]:
                log(f"| {event['message']}")
            if not page["events"] or page.get("nextForwardToken") == token:
                break
            token = page.get("nextForwardToken")
    except logs.exceptions.ResourceNotFoundException:
        log("the container wrote no log")
    containers = task.get("Containers") or [{}]
    exit_code = containers[0].get("ExitCode")
    if exit_code != 0:
        reason = containers[0].get("Reason") or task.get("StoppedReason") or "no exit code"
        raise TargetError(f"the container exited with code {exit_code} ({reason})")
    return {"exit_code": exit_code, "task_arn": task_arn}


def lines_collector(attempt: int) -> tuple[list[str], Log]:
    """A list of log lines and the function that adds a message (one line per line of it,
    each with the attempt's prefix)."""
    lines: list[str] = []

    def log(message: str) -> None:
        lines.extend(log_line(attempt, part) for part in message.splitlines() or [""])

    return lines, log
