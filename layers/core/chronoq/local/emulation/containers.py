"""Container targets locally: ECS on moto records tasks but runs nothing, so a task's command
runs as a host process (only with ``chronoq local --allow-host-commands``), with ``docker
run`` (a Docker daemon answers), or not at all; ``docker run`` is built from validated parts
only."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from chronoq.local.emulation.ecs import pass_ecs_parameters_as_the_api_names_them
from chronoq.local.emulation.state import HOST_PROCESSES, IN_DOCKER, NOWHERE, active

#: What an attempt says when containers run nowhere (state.NOWHERE).
NOT_ENABLED = (
    "container targets do not run on this machine: start chronoq local with"
    " --allow-host-commands to run their commands as host processes (trusted users only), or"
    " start a Docker daemon to run them in their images"
)
#: The exit code of an attempt that could not run (as ``docker run`` answers when the command
#: cannot be invoked).
NOT_RUN_EXIT_CODE = 126


def find_docker() -> str | None:
    """The absolute path of ``docker`` on chronoq local's own PATH, if there is one."""
    import shutil

    found = shutil.which("docker", path=os.environ.get("PATH", os.defpath))
    return os.path.abspath(found) if found else None


def answering_docker(timeout: float = 5.0) -> str | None:
    """The docker program (``find_docker``) if a Docker daemon answers it here."""
    import subprocess

    docker = find_docker()
    if docker is None:
        return None
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
        return None
    return docker if answered else None


def container_mode(allow_host_commands: bool) -> tuple[str, str | None]:
    """How container targets run here, and the docker program that runs them: as host
    processes only when allowed; otherwise in Docker when a daemon answers; else not at all."""
    if allow_host_commands:
        return HOST_PROCESSES, None
    docker = answering_docker()
    return (IN_DOCKER, docker) if docker is not None else (NOWHERE, None)


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
    mode: str,
    docker: str | None,
    name: str,
    image: str,
    command: list[str],
    environment: dict[str, str],
) -> list[str] | None:
    """The host command running a task's container in ``mode`` (None: it may not run; in
    Docker, with the program ``docker``: see ``docker_run``)."""
    if mode == HOST_PROCESSES:
        return command
    if mode == IN_DOCKER:
        if docker is None:
            raise RefusedContainer("no docker program was found when chronoq local started")
        return docker_run(docker, name, image, command, environment)
    return None


class SecretsUnavailable(Exception):
    """A task's secrets could not be read: ECS does not start the task."""


def secrets_of(
    secrets: list[dict[str, str]], parameters: Callable[[list[str]], dict[str, str]] | None
) -> dict[str, str]:
    """The variables a task definition's ``secrets`` give its container (each ``name`` the
    value of the parameter ``valueFrom`` names), read as ECS reads them as the task starts;
    raises SecretsUnavailable, naming the parameters (never a value), as ECS stops a task
    whose secrets it cannot read."""
    if not secrets:
        return {}
    wanted = list(dict.fromkeys(s["valueFrom"] for s in secrets))
    try:
        found = parameters(wanted) if parameters is not None else {}
    except Exception as error:  # access denied, throttled: the task does not start
        code = getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)
        raise SecretsUnavailable(
            "ResourceInitializationError: unable to pull secrets or registry auth: unable to"
            f" retrieve secrets from ssm: {code}"
        ) from None
    missing = [arn for arn in wanted if arn not in found]
    if missing:
        raise SecretsUnavailable(
            "ResourceInitializationError: unable to pull secrets or registry auth: unable to"
            f" retrieve secrets from ssm: invalid parameters: {', '.join(missing)}"
        )
    return {s["name"]: found[s["valueFrom"]] for s in secrets}


def run_containers_as_subprocesses(region: str) -> None:
    """ECS on moto records tasks but runs nothing. Locally a task runs as the active state's
    ``containers`` says (see chronoq.local.emulation.state): its command as a host process
    (the image is not used), or ``docker run --rm image command``, or not at all (the attempt
    fails, saying how to enable them). The variables its definition's ``secrets`` name are
    read as ECS reads them (the active state's ``parameters``) into the process's environment
    alone; a task whose secrets cannot be read does not start. Its output goes to the task's
    awslogs stream in CloudWatch Logs, its exit code to the task's container, and the task
    stops when the process ends, when it is stopped, or at ``CHRONOQ_TIMEOUT_SECONDS``
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
    #: Each task's process, and the docker program and the name of its container if it runs
    #: in Docker.
    processes: dict[str, tuple[subprocess.Popen[bytes], tuple[str, str] | None]] = {}

    def remove(container: tuple[str, str] | None) -> None:
        if container:  # killing the docker client leaves its container running
            docker, name = container
            subprocess.run(  # noqa: S603 - fixed arguments, the name chronoq gave it
                [docker, "rm", "-f", "--", name],
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
        container: tuple[str, str] | None,
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
        group = (
            (container.get("logConfiguration") or {}).get("options", {}).get("awslogs-group", "")
        )
        emulation = active()

        def not_run(message: str) -> None:
            """The task stops without running, saying why (in its log and stopped reason)."""
            threading.Thread(
                target=finish,
                args=(task, group, [message], NOT_RUN_EXIT_CODE, message),
                daemon=True,
            ).start()

        job_env: dict[str, str] = {}
        for pair in container.get("environment") or []:
            job_env[pair["name"]] = pair["value"]
        try:
            # (the values go to the process's environment only: never to the task, its
            # definition, its overrides or its log)
            job_env.update(secrets_of(container.get("secrets") or [], emulation.parameters))
        except SecretsUnavailable as unavailable:
            not_run(str(unavailable))
            return
        for pair in override.get("environment") or []:
            job_env[pair["name"]] = pair["value"]
        mode, docker = emulation.containers, emulation.docker
        name = f"chronoq-{task.task_arn.rsplit('/', 1)[-1]}"
        try:
            command = container_command(
                mode,
                docker,
                name,
                str(container.get("image", "")),
                [str(a) for a in override.get("command") or container.get("command") or []],
                job_env,
            )
        except RefusedContainer as refused:
            not_run(f"the container was not run: {refused}")
            return
        if command is None:
            not_run(NOT_ENABLED)
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
        in_docker = (docker, name) if mode == IN_DOCKER and docker is not None else None
        processes[task.task_arn] = (process, in_docker)
        timeout = float(job_env.get("CHRONOQ_TIMEOUT_SECONDS", "3600"))
        threading.Thread(
            target=supervise,
            args=(task, process, in_docker, timeout, group),
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
    pass_ecs_parameters_as_the_api_names_them()
