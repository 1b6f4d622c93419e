"""Where moto's emulation differs from AWS in a way chronoq depends on, align it.

These patches reach into moto's private internals, listed in ``PATCHED``: written for moto
``WRITTEN_FOR_MOTO``; ``check_moto`` says which of them another version lacks."""

from __future__ import annotations

import datetime
import functools
import importlib
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from chronoq.local.clock import WALL, LocalClock

if TYPE_CHECKING:
    from chronoq.local.usage import Meter

#: The moto version the patches of this module (and chronoq.local.lambdas) were written for.
WRITTEN_FOR_MOTO = "5.2.5"
#: Every private moto internal chronoq local replaces or calls: (module, attribute path).
PATCHED: tuple[tuple[str, str], ...] = (
    ("moto.awslambda.models", "LambdaFunction._invoke_lambda"),
    ("moto.awslambda.models", "LambdaFunction.invoke"),
    ("moto.core.botocore_stubber", "BotocoreStubber.process_request"),
    ("moto.core.models", "MockAWS._enable_patching"),
    ("moto.core.models", "MockAWS._disable_patching"),
    ("moto.core.base_backend", "BackendDict"),
    ("moto.core.model_instances", "reset_model_data"),
    ("moto.dynamodb.models", "dynamodb_backends"),  # read by chronoq.local.usage
    ("moto.stepfunctions.parser.asl.utils.boto_client", "boto_client_for"),
    ("moto.stepfunctions.parser.asl.component.state.exec.state_task", "__path__"),
    ("moto.stepfunctions.parser.asl.parse.asl_parser", "AmazonStateLanguageParser.parse"),
    (
        "moto.stepfunctions.parser.backend.execution_worker",
        "ExecutionWorker._get_evaluation_entrypoint",
    ),
    ("moto.stepfunctions.parser.models", "StepFunctionsParserBackend._validate_definition"),
    ("moto.stepfunctions.parser.models", "StepFunctionsParserBackend.start_execution"),
    (
        "moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp",
        "Timestamp._get_wait_seconds",
    ),
    (
        "moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp",
        "Timestamp._wait_interval",
    ),
    (
        "moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function",
        "WaitFunction._wait_interval",
    ),
    ("moto.stepfunctions.parser.asl.component.state.state", "datetime"),
    ("moto.sqs.models", "unix_time"),
    ("moto.sqs.models", "unix_time_millis"),
    ("moto.stepfunctions.parser.models", "StepFunctionsParserBackend.stop_execution"),
    ("moto.ecs.models", "EC2ContainerServiceBackend.run_task"),
    ("moto.ecs.models", "EC2ContainerServiceBackend.stop_task"),
    ("moto.moto_api", "state_manager.set_transition"),
    (
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
        ".state_task_service_ecs",
        "StateTaskServiceEcs._eval_service_task",
    ),
    (
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
        ".state_task_service_ecs",
        "StateTaskServiceEcs._build_sync_resolver",
    ),
    (
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
        ".state_task_service_ecs",
        "StateTaskServiceEcs._eval_sync",
    ),
)


class UnsupportedMoto(RuntimeError):
    """The installed moto lacks internals chronoq local patches."""


def missing_moto_internals() -> list[str]:
    """The entries of ``PATCHED`` the installed moto does not have."""
    missing = []
    for module_name, path in PATCHED:
        try:
            found: Any = importlib.import_module(module_name)
            for part in path.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{path}")
    return missing


def check_moto() -> None:
    """Fail, naming the versions and what is missing, when chronoq local's patches do not fit
    the installed moto."""
    from moto import __version__

    missing = missing_moto_internals()
    if missing:
        raise UnsupportedMoto(
            f"chronoq local patches moto internals written for moto {WRITTEN_FOR_MOTO}; "
            f"moto {__version__} is installed and lacks: {', '.join(missing)}. "
            f"Install moto=={WRITTEN_FOR_MOTO} (pyproject pins it) or update "
            "chronoq/local/emulation.py."
        )


def reuse_state_machine_clients() -> None:
    """moto's interpreter builds a new boto3 client for every task it runs, which costs
    more than the task itself when hundreds of runs start together; Step Functions' own
    service calls cost nothing of the sort. Reuse one client per region and service."""
    import importlib
    import pkgutil

    from moto.stepfunctions.parser.asl.component.state.exec import state_task
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    if getattr(original, "reused", False):
        return

    @functools.cache
    def shared(region: str, service: str) -> Any:
        return original(region=region, service=service)

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        return shared(region, service)

    boto_client_for.reused = True  # type: ignore[attr-defined]
    for info in pkgutil.walk_packages(state_task.__path__, state_task.__name__ + "."):
        importlib.import_module(info.name)
    for name, module in list(sys.modules.items()):
        if (
            name.startswith("moto.stepfunctions.")
            and getattr(module, "boto_client_for", None) is original
        ):
            module.boto_client_for = boto_client_for  # type: ignore[attr-defined]


def serve_sdk_calls_only() -> None:
    """moto intercepts AWS calls twice: in botocore (every SDK call: chronoq's, the state
    machine's, the embedded endpoint's) and in the ``requests`` library, for which each start
    registers some 6,000 URL patterns afresh (a tenth of a second per start, paid by every
    test that starts chronoq local's AWS). Nothing chronoq runs calls AWS through
    ``requests``: start and stop the botocore part only."""
    from moto.core.base_backend import BackendDict
    from moto.core.models import MockAWS, botocore_stubber

    if getattr(MockAWS._enable_patching, "sdk_only", False):
        return

    def enable(self: Any, reset: bool = True) -> None:
        botocore_stubber.enabled = True
        if reset:
            BackendDict.reset()

    def disable(self: Any, remove_data: bool) -> None:
        from moto.core.model_instances import reset_model_data

        botocore_stubber.enabled = False
        if remove_data:
            BackendDict.reset()
            reset_model_data()

    enable.sdk_only = True  # type: ignore[attr-defined]
    MockAWS._enable_patching = enable  # type: ignore[method-assign]
    MockAWS._disable_patching = disable  # type: ignore[method-assign]


#: The usage meter requests go through (chronoq local sets it when it starts).
METER: list[Meter | None] = [None]
#: The prefix of chronoq's own resources, which its roles may not reach as targets (see
#: chronoq.local.denials; chronoq local sets it when it starts).
OWN_PREFIX: list[str | None] = [None]


def _denied(request: Any) -> Any:
    """AWS's answer if IAM would deny this request to its caller (chronoq.local.denials)."""
    prefix = OWN_PREFIX[0]
    if prefix is None:
        return None
    from chronoq.local.denials import denial, denied_answer
    from chronoq.local.usage import _body, current_caller, operation_of

    body = _body(request.body)
    operation = operation_of(request.method, request.url, request.headers, body)
    why = denial(prefix, current_caller(), operation, request.url, body)
    return None if why is None else denied_answer(operation, why)


def serialize_service_calls() -> None:
    """moto's backends are not thread-safe (a DynamoDB transaction, for one, copies tables
    that other threads are writing), while the local runtime calls them from many threads,
    as AWS is called from many Lambdas. Handle one request at a time, as a service would
    handle each atomically. Lambda invocations are let through: they run handlers that call
    the other services themselves."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request
    if getattr(original, "serialized", False):
        return
    lock = threading.RLock()  # a service call may make nested ones in the same thread

    def process_request(self: Any, request: Any) -> Any:
        denied = _denied(request)
        if denied is not None:
            return denied
        call = functools.partial(original, self, request)
        meter = METER[0]
        if request.url.endswith("/invocations"):
            return meter.around(request, call) if meter else call()
        with lock:
            answer = meter.around(request, call) if meter else call()
        _tell_pollers_of_sends(request)
        return answer

    process_request.serialized = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]


_SENDS = ("AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch")


def _tell_pollers_of_sends(request: Any) -> None:
    """A send to SQS: the queue pollers hear of it and of when its messages become visible
    (so that idle ones need not keep looking: chronoq.local.drivers.Pace)."""
    target = request.headers.get("X-Amz-Target") or b""
    if isinstance(target, bytes):
        target = target.decode(errors="replace")
    if target not in _SENDS:
        return
    try:
        body = json.loads(request.body or b"{}")
        entries = body.get("Entries") or [body]
        delays = [float(entry.get("DelaySeconds") or 0) for entry in entries]
    except (ValueError, TypeError, AttributeError):
        delays = [0.0]
    from chronoq.local.drivers import messages_sent

    messages_sent(delays)


def parse_each_definition_once() -> None:
    """moto parses a state machine's ASL anew for every execution (about 0.1 s of CPU for
    chronoq's), and once more to validate it when the state machine is created; Step
    Functions starts executions of a stored definition. Parse each definition once, for
    both, and keep it for the next start (chronoq.local.parsed): the parsed program is
    immutable, executions keep their state in their own environment (a definition that
    fails to parse is not kept: it fails again)."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    if getattr(AmazonStateLanguageParser.parse, "cached", False):
        return
    from chronoq.local import parsed

    parse = AmazonStateLanguageParser.parse

    @functools.lru_cache(maxsize=64)
    def once(definition: str) -> tuple[Any, Any]:
        return parsed.program(definition, parse)

    once.cached = True  # type: ignore[attr-defined]
    AmazonStateLanguageParser.parse = staticmethod(once)  # type: ignore[method-assign]


def express_executions_as_on_aws() -> None:
    """moto treats EXPRESS state machines as STANDARD ones. On AWS, starting an EXPRESS
    execution is not idempotent (the same name again starts another execution) and
    StopExecution refuses EXPRESS executions: so locally too, so that nothing chronoq does
    locally leans on what AWS would not do."""
    import uuid

    from moto.stepfunctions.exceptions import ValidationException
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start = StepFunctionsParserBackend.start_execution
    if getattr(start, "express_as_on_aws", False):
        return

    def _express(machine: Any) -> bool:
        return (
            str(getattr(machine, "type", "")).upper() == "EXPRESS"
        )  # (sm_type is always STANDARD)

    @functools.wraps(start)
    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *a: Any, **k: Any
    ) -> Any:
        if name is not None and _express(self.describe_state_machine(state_machine_arn)):
            name = f"{name}-{uuid.uuid4().hex[:12]}"  # a new execution, whatever the name
        return start(self, state_machine_arn, name, *a, **k)

    start_execution.express_as_on_aws = True  # type: ignore[attr-defined]
    StepFunctionsParserBackend.start_execution = start_execution  # type: ignore[method-assign]

    stop = StepFunctionsParserBackend.stop_execution

    @functools.wraps(stop)
    def stop_execution(self: Any, execution_arn: str, *a: Any, **k: Any) -> Any:
        execution = self.describe_execution(execution_arn)
        if _express(getattr(execution, "state_machine", None)):
            raise ValidationException("This operation is not supported by EXPRESS state machines")
        return stop(self, execution_arn, *a, **k)

    StepFunctionsParserBackend.stop_execution = stop_execution  # type: ignore[method-assign]


#: The clock the state machine's Wait states and state entry times follow (chronoq local sets
#: its own when it starts: see chronoq.local.clock).
CLOCK: list[LocalClock] = [WALL]


class _StateDatetime:
    """The ``datetime`` module as moto's state evaluation sees it: ``datetime.now`` is the
    local clock's (a state's ``$$.State.EnteredTime``)."""

    timezone = datetime.timezone

    class datetime:
        @staticmethod
        def now(tz: datetime.tzinfo | None = None) -> datetime.datetime:
            instant = CLOCK[0].now()
            return instant.astimezone(tz) if tz is not None else instant.replace(tzinfo=None)


def waits_follow_the_clock() -> None:
    """moto's Wait states wait by the wall clock, a Timestamp whole seconds truncated (one
    0.7 s away is not waited for at all), and its states enter at the wall clock's time. Make
    them follow chronoq local's clock (CLOCK): a Timestamp waited for to the millisecond, as
    Step Functions does; Seconds and SecondsPath waits, and state entry times, by that clock
    too (a test's clock may skip the waits, or hold them until it moves)."""
    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
        WaitFunction,
    )

    if getattr(Timestamp._wait_interval, "precise", False):
        return

    def seconds(self: Any, env: Any) -> float:
        self.string.eval(env=env)
        text: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=text)
        if timestamp is None:
            from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
                FailureEventException,
            )

            raise FailureEventException(self._create_failure_event(env, text))
        now = CLOCK[0].now().replace(tzinfo=None)  # (moto reads the timestamp as naive UTC)
        return float((timestamp - now).total_seconds())

    def wait(self: Any, env: Any, wait_seconds: float) -> None:
        CLOCK[0].wait(wait_seconds, env.program_state_event, env.is_running)

    wait.precise = True  # type: ignore[attr-defined]
    Timestamp._get_wait_seconds = seconds  # type: ignore[method-assign,assignment]
    Timestamp._wait_interval = wait  # type: ignore[method-assign]
    WaitFunction._wait_interval = wait  # type: ignore[method-assign]
    state.datetime = _StateDatetime  # type: ignore[attr-defined,assignment]


def queues_follow_the_clock() -> None:
    """moto's SQS times message delays, visibility timeouts and retention by the wall clock:
    make it follow chronoq local's clock (CLOCK) too, so that a run sent with a delay reaches
    a worker when that clock says, as everything else in chronoq local sees it."""
    from moto.sqs import models

    if getattr(models.unix_time, "clocked", False):  # type: ignore[attr-defined]
        return

    def unix_time(dt: datetime.datetime | None = None) -> float:
        instant = CLOCK[0].now() if dt is None else dt.replace(tzinfo=datetime.UTC)
        return instant.timestamp()

    def unix_time_millis(dt: datetime.datetime | None = None) -> float:
        return unix_time(dt) * 1000.0

    unix_time.clocked = True  # type: ignore[attr-defined]
    models.unix_time = unix_time  # type: ignore[attr-defined]
    models.unix_time_millis = unix_time_millis  # type: ignore[attr-defined]


#: The network the local state machine names for container tasks; they run in moto's default
#: VPC, looked up when the first task runs (creating it costs more than starting the rest).
LOCAL_SUBNET = "subnet-chronoq-local"
LOCAL_SECURITY_GROUP = "sg-chronoq-local"


#: How container targets run locally (set by LocalAWS.start): HOST_PROCESSES (only with
#: ``chronoq local --allow-host-commands``), IN_DOCKER (a Docker daemon answers), or NOWHERE:
#: each attempt fails with NOT_ENABLED.
HOST_PROCESSES = "host"
IN_DOCKER = "docker"
NOWHERE = "none"
CONTAINERS = [NOWHERE]
NOT_ENABLED = (
    "container targets do not run on this machine: start chronoq local with"
    " --allow-host-commands to run their commands as host processes (trusted users only), or"
    " start a Docker daemon to run them in their images"
)
#: The exit code of an attempt that could not run (as ``docker run`` answers when the command
#: cannot be invoked).
NOT_RUN_EXIT_CODE = 126


#: The docker program, resolved once from chronoq's own PATH when chronoq local starts (an
#: absolute path: a job's environment never decides which program runs).
DOCKER: list[str | None] = [None]


def find_docker() -> str | None:
    """The absolute path of ``docker`` on chronoq local's own PATH, if there is one."""
    import shutil

    found = shutil.which("docker", path=os.environ.get("PATH", os.defpath))
    return os.path.abspath(found) if found else None


def docker_available(timeout: float = 5.0) -> bool:
    """Does a Docker daemon answer here? (``DOCKER`` is set to the program that answered.)"""
    import subprocess

    docker = find_docker()
    if docker is None:
        return False
    try:
        answered = (
            subprocess.run(  # noqa: S603 - docker by absolute path, fixed arguments
                [docker, "info", "--format", "{{.ServerVersion}}"],
                capture_output=True,
                timeout=timeout,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if answered:
        DOCKER[0] = docker
    return answered


def container_mode(allow_host_commands: bool) -> str:
    """How container targets run here: as host processes only when allowed; otherwise in
    Docker when a daemon answers; else not at all."""
    if allow_host_commands:
        return HOST_PROCESSES
    return IN_DOCKER if docker_available() else NOWHERE


class RefusedContainer(ValueError):
    """A container task whose parts ``docker run`` cannot take safely."""


#: Variables the docker program itself (or the loader, or the helpers it runs) reads: a
#: job's environment may not set them for the docker client, which passes the job's values
#: on from its own environment (``-e NAME``).
DOCKER_CLIENT_VARIABLES = frozenset(
    {"PATH", "HOME", "TMPDIR", "SHELL", "IFS", "ENV", "BASH_ENV", "GODEBUG", "GOTRACEBACK"}
)
DOCKER_CLIENT_PREFIXES = ("DOCKER_", "LD_", "DYLD_", "GCONV_", "MALLOC_", "SSL_", "CURL_")
_PROXIES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"})


def _docker_client_variable(name: str) -> bool:
    return (
        name in DOCKER_CLIENT_VARIABLES
        or name.upper() in _PROXIES
        or name.startswith(DOCKER_CLIENT_PREFIXES)
    )


def docker_run(
    docker: str, name: str, image: str, command: list[str], environment: dict[str, str]
) -> list[str]:
    """``docker run`` for one task, from validated parts only: ``docker`` an absolute path,
    ``image`` a reference by its grammar, the environment by name only (``-e NAME``: the
    values reach the container from docker's own environment, never a command line another
    user could read), ``--`` before the image, the command after it. Raises
    RefusedContainer for parts it cannot take."""
    from chronoq.domain.targets import ENVIRONMENT_NAME, IMAGE_REFERENCE

    if not os.path.isabs(docker):
        raise RefusedContainer(f"the docker program must be an absolute path, not {docker!r}")
    if image.startswith("-") or not IMAGE_REFERENCE.match(image):
        raise RefusedContainer(f"{image!r} is not an image reference")
    invalid = sorted(k for k in environment if not ENVIRONMENT_NAME.match(k))
    if invalid:
        raise RefusedContainer(f"{invalid[0]!r} is not an environment variable's name")
    clashing = sorted(k for k in environment if _docker_client_variable(k))
    if clashing:
        raise RefusedContainer(
            f"the environment names {', '.join(clashing)}, which the docker program itself"
            " reads: locally in Docker a job's environment may not set them"
        )
    names = [arg for key in sorted(environment) for arg in ("-e", key)]
    return [docker, "run", "--rm", "--name", name, *names, "--", image, *command]


def container_command(
    mode: str, name: str, image: str, command: list[str], environment: dict[str, str]
) -> list[str] | None:
    """The host command running a task's container in ``mode`` (None: it may not run; in
    Docker, see ``docker_run``)."""
    if mode == HOST_PROCESSES:
        return command
    if mode == IN_DOCKER:
        docker = DOCKER[0]
        if docker is None:
            raise RefusedContainer("no docker program was found when chronoq local started")
        return docker_run(docker, name, image, command, environment)
    return None


def run_containers_as_subprocesses(region: str) -> None:
    """ECS on moto records tasks but runs nothing. Locally a task runs as CONTAINERS says: its
    command as a host process (the image is not used), or ``docker run --rm image command``,
    or not at all (the attempt fails, saying how to enable them). Its output goes to the
    task's awslogs stream in CloudWatch Logs, its exit code to the task's container, and the
    task stops when the process ends, when it is stopped, or at ``CHRONOQ_TIMEOUT_SECONDS``
    (killed)."""
    import subprocess

    import boto3
    from moto.ecs.models import EC2ContainerServiceBackend
    from moto.moto_api import state_manager

    from chronoq.execution.targets import container_log_stream

    original_run = EC2ContainerServiceBackend.run_task
    if getattr(original_run, "subprocesses", False):
        return
    original_stop = EC2ContainerServiceBackend.stop_task
    # Tasks stay RUNNING until their process ends (moto would report them stopped at once).
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": sys.maxsize})
    processes: dict[str, tuple[subprocess.Popen[bytes], str | None]] = {}

    def remove(container: str | None) -> None:
        docker = DOCKER[0]
        if container and docker:  # killing the docker client leaves its container running
            subprocess.run(  # noqa: S603 - fixed arguments, the name chronoq gave it
                [docker, "rm", "-f", "--", container],
                capture_output=True,
                timeout=30,
                check=False,
            )

    def finish(task: Any, group: str, lines: list[str], code: int, reason: str) -> None:
        stream = container_log_stream(task.task_arn)
        try:
            if group:
                logs = boto3.client("logs", region_name=region)
                logs.create_log_stream(logGroupName=group, logStreamName=stream)
                if lines:
                    now = int(time.time() * 1000)
                    logs.put_log_events(
                        logGroupName=group,
                        logStreamName=stream,
                        logEvents=[{"timestamp": now, "message": line} for line in lines],
                    )
        except Exception:  # the local AWS was stopped meanwhile: nobody is left to read them
            return
        task.containers[0].exitCode = code
        if task.stopped_reason == "":
            task.stopped_reason = reason
        task.desired_status = "STOPPED"
        task.last_status = "STOPPED"

    def supervise(
        task: Any,
        process: subprocess.Popen[bytes],
        container: str | None,
        timeout: float,
        group: str,
    ) -> None:
        reason = "Essential container in task exited"
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            remove(container)
            output, _ = process.communicate()
            reason = "Task stopped at its timeout"
        processes.pop(task.task_arn, None)
        lines = output.decode(errors="replace").splitlines()
        finish(task, group, lines, process.returncode, reason)

    def start(task: Any, definition: Any) -> None:
        container = definition.container_definitions[0]
        override = (task.overrides.get("containerOverrides") or [{}])[0]
        job_env: dict[str, str] = {}
        for pair in (container.get("environment") or []) + (override.get("environment") or []):
            job_env[pair["name"]] = pair["value"]
        group = (
            (container.get("logConfiguration") or {}).get("options", {}).get("awslogs-group", "")
        )
        mode = CONTAINERS[0]
        name = f"chronoq-{task.task_arn.rsplit('/', 1)[-1]}"
        try:
            command = container_command(
                mode,
                name,
                str(container.get("image", "")),
                [str(a) for a in override.get("command") or container.get("command") or []],
                job_env,
            )
        except RefusedContainer as refused:
            message = f"the container was not run: {refused}"
            threading.Thread(
                target=finish,
                args=(task, group, [message], NOT_RUN_EXIT_CODE, message),
                daemon=True,
            ).start()
            return
        if command is None:
            threading.Thread(
                target=finish,
                args=(task, group, [NOT_ENABLED], NOT_RUN_EXIT_CODE, NOT_ENABLED),
                daemon=True,
            ).start()
            return
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
        env.update(job_env)
        if mode == IN_DOCKER:  # (the job's names were checked not to clash with these)
            env.update({k: v for k, v in os.environ.items() if k.startswith("DOCKER_")})
        try:
            process = subprocess.Popen(  # noqa: S603 - the job's own command, as Fargate runs it
                command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        except OSError as error:  # no such program
            message = f"the command could not be started: {error}"
            threading.Thread(
                target=finish,
                args=(task, group, [message], NOT_RUN_EXIT_CODE, message),
                daemon=True,
            ).start()
            return
        processes[task.task_arn] = (process, name if mode == IN_DOCKER else None)
        timeout = float(job_env.get("CHRONOQ_TIMEOUT_SECONDS", "3600"))
        threading.Thread(
            target=supervise,
            args=(task, process, name if mode == IN_DOCKER else None, timeout, group),
            daemon=True,
        ).start()

    def run_task(self: Any, *args: Any, **kwargs: Any) -> Any:
        tasks = original_run(self, *args, **kwargs)
        for task in tasks:
            start(task, self.describe_task_definition(task.task_definition_arn))
        return tasks

    def stop_task(self: Any, cluster_str: str, task_str: str, reason: str) -> Any:
        for arn, (process, container) in list(processes.items()):
            if arn.endswith(task_str.rsplit("/", 1)[-1]):
                process.kill()
                remove(container)
        return original_stop(self, cluster_str, task_str, reason)

    run_task.subprocesses = True  # type: ignore[attr-defined]
    EC2ContainerServiceBackend.run_task = run_task  # type: ignore[method-assign]
    EC2ContainerServiceBackend.stop_task = stop_task  # type: ignore[method-assign]
    _pass_ecs_parameters_as_the_api_names_them()


def default_network(ec2: Any) -> dict[str, list[str]]:
    """The embedded AWS's default VPC, where container tasks run (the ASL's values name
    LOCAL_SUBNET and LOCAL_SECURITY_GROUP locally): its first subnet and default group."""
    return {
        "subnets": [ec2.describe_subnets()["Subnets"][0]["SubnetId"]],
        "securityGroups": [
            ec2.describe_security_groups(GroupNames=["default"])["SecurityGroups"][0]["GroupId"]
        ],
    }


def lower_camel(value: Any) -> Any:
    """ECS's parameters as its API names them (Step Functions passes them PascalCase)."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: lower_camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [lower_camel(v) for v in value]
    return value


def upper_camel(value: Any) -> Any:
    """ECS's answer as Step Functions hands it on (PascalCase; instants as text)."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: upper_camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [upper_camel(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _pass_ecs_parameters_as_the_api_names_them() -> None:
    """Step Functions takes ECS parameters in PascalCase (``Cluster``), calls the API with its
    own names (``cluster``) and answers with the stopped task in PascalCase (``ExitCode``);
    moto's interpreter passes the names through unchanged both ways, which the SDK refuses.
    Translate them as Step Functions does."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_ecs as ecs,
    )

    def client(resource_runtime_part: Any, state_credentials: Any) -> Any:
        return ecs.boto_client_for(  # type: ignore[attr-defined]
            region=resource_runtime_part.region,
            service="ecs",
            state_credentials=state_credentials,
        )

    def _eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> None:
        parameters = lower_camel(normalised_parameters)
        network = parameters.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
        if network.get("subnets") == [LOCAL_SUBNET]:
            ec2: Any = ecs.boto_client_for(  # type: ignore[attr-defined]
                region=resource_runtime_part.region, service="ec2", state_credentials=None
            )
            network.update(default_network(ec2))
        answer = client(resource_runtime_part, state_credentials).run_task(**parameters)
        if answer.get("failures") or not answer.get("tasks"):
            raise RuntimeError(f"ECS RunTask failed: {answer.get('failures')}")
        env.stack.append(upper_camel({"Tasks": answer["tasks"]}))

    def _build_sync_resolver(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> Any:
        submitted = env.stack.pop()["Tasks"][0]
        ecs_client = client(resource_runtime_part, state_credentials)

        def resolve() -> Any:
            task = ecs_client.describe_tasks(
                cluster=submitted["ClusterArn"], tasks=[submitted["TaskArn"]]
            )["tasks"][0]
            return upper_camel(task) if task["lastStatus"] == "STOPPED" else None

        def stop() -> None:
            ecs_client.stop_task(
                cluster=submitted["ClusterArn"],
                task=submitted["TaskArn"],
                reason="Step Functions execution stopped",
            )

        resolve.stop = stop  # type: ignore[attr-defined]
        return resolve

    original_eval_sync = ecs.StateTaskServiceEcs._eval_sync

    def _eval_sync(self: Any, env: Any, sync_resolver: Any, **kwargs: Any) -> Any:
        """As Step Functions does, stop the task when the execution is stopped or the wait
        for it fails (a missed heartbeat, say)."""
        try:
            outcome = original_eval_sync(self, env=env, sync_resolver=sync_resolver, **kwargs)
        except Exception:
            if hasattr(sync_resolver, "stop"):
                sync_resolver.stop()
            raise
        if not env.is_running() and hasattr(sync_resolver, "stop"):
            sync_resolver.stop()
        return outcome

    ecs.StateTaskServiceEcs._eval_service_task = _eval_service_task  # type: ignore[method-assign]
    ecs.StateTaskServiceEcs._build_sync_resolver = _build_sync_resolver  # type: ignore[method-assign]
    ecs.StateTaskServiceEcs._eval_sync = _eval_sync  # type: ignore[method-assign,assignment]
