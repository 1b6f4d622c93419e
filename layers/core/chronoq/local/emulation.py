"""Where moto's emulation differs from AWS in a way chronoq depends on, align it."""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any


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
        if request.url.endswith("/invocations"):
            return original(self, request)
        with lock:
            return original(self, request)

    process_request.serialized = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]


def parse_each_definition_once() -> None:
    """moto parses a state machine's ASL anew for every execution (about 0.1 s of CPU for
    chronoq's); Step Functions starts executions of a stored definition. Parse each
    definition once: the parsed program is immutable, executions keep their state in their
    own environment."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    if getattr(ExecutionWorker._get_evaluation_entrypoint, "cached", False):
        return

    @functools.lru_cache(maxsize=64)
    def program(definition: str) -> Any:
        return AmazonStateLanguageParser.parse(definition)[0]

    def entrypoint(self: Any) -> Any:
        return program(self._evaluation_details.state_machine_details.definition)

    entrypoint.cached = True  # type: ignore[attr-defined]
    ExecutionWorker._get_evaluation_entrypoint = entrypoint  # type: ignore[method-assign]
