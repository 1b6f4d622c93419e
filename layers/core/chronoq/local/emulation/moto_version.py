"""The private moto internals chronoq local's patches reach into, listed in ``PATCHED``:
written for moto ``WRITTEN_FOR_MOTO``; ``check_moto`` says which of them another version
lacks."""

from __future__ import annotations

import importlib
from typing import Any

#: The moto version the patches of this package (and chronoq.local.lambdas) were written for.
WRITTEN_FOR_MOTO = "5.2.5"
#: Every private moto internal chronoq local replaces or calls: (module, attribute path).
PATCHED: tuple[tuple[str, str], ...] = (
    ("moto.awslambda.models", "LambdaFunction._invoke_lambda"),
    ("moto.awslambda.models", "LambdaFunction.invoke"),
    ("moto.core.botocore_stubber", "BotocoreStubber.process_request"),
    ("moto.core.models", "MockAWS._enable_patching"),
    ("moto.core.models", "MockAWS._disable_patching"),
    ("moto.core.models", "botocore_stubber"),  # service_calls.presigned_get
    ("moto.core.base_backend", "BackendDict"),
    ("moto.core.model_instances", "reset_model_data"),
    ("moto.dynamodb.models", "dynamodb_backends"),  # read by chronoq.local.usage
    ("moto.dynamodb.models", "DynamoDBBackend.execute_statement"),
    ("moto.dynamodb.models.dynamo_type", "DynamoType"),
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
    (  # stepfunctions.container_checks_every
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service"
        ".state_task_service_callback",
        "_DELAY_SECONDS_SYNC_CONDITION_CHECK",
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


def installed_moto() -> str:
    """The version of the installed moto."""
    from moto import __version__

    version: str = __version__
    return version


def check_moto() -> None:
    """Fail, naming the versions and what is missing, when chronoq local's patches do not fit
    the installed moto."""
    missing = missing_moto_internals()
    if missing:
        raise UnsupportedMoto(
            f"chronoq local patches moto internals written for moto {WRITTEN_FOR_MOTO}; "
            f"moto {installed_moto()} is installed and lacks: {', '.join(missing)}. "
            f"Install moto=={WRITTEN_FOR_MOTO} (pyproject pins it) or update the patches in "
            "chronoq/local/emulation/."
        )
