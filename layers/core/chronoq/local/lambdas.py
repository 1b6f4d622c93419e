"""An in-process Lambda runtime.

A function is executed the way Lambda executes it: its handler file (the same path the CDK
stack deploys) is imported into a fresh module, a "container", which serves one invocation at
a time; concurrent invocations get more containers. moto's Docker-based invocation is
replaced by this, so Step Functions' ``lambda:invoke`` tasks run the real handlers.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from chronoq.resources import Function

logger = logging.getLogger(__name__)
_ids = itertools.count(1)


@dataclass
class LambdaContext:
    """The attributes and method of Lambda's context object that handlers use."""

    function_name: str
    memory_limit_in_mb: int
    timeout_seconds: int
    invoked_function_arn: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        self.log_group_name = f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class FunctionError(Exception):
    """The handler raised: ``payload`` is what Lambda would answer."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(payload.get("errorMessage"))
        self.payload = payload


class LambdaRuntime:
    def __init__(self, functions: dict[str, Function], region: str, account: str) -> None:
        self._functions = functions  # deployed name -> definition
        self._idle: dict[str, list[ModuleType]] = {name: [] for name in functions}
        self._lock = threading.Lock()
        self._region = region
        self._account = account

    def names(self) -> list[str]:
        return list(self._functions)

    def _load(self, name: str) -> ModuleType:
        function = self._functions[name]
        module_name = f"_chronoq_lambda_{function.name}_{next(_ids)}"
        spec = importlib.util.spec_from_file_location(module_name, function.handler_file)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # as an import would: pydantic resolves names there
        spec.loader.exec_module(module)
        return module

    def invoke(self, name: str, event: Any) -> Any:
        """Invoke function ``name`` with ``event``; raises FunctionError if the handler did."""
        function = self._functions[name]
        with self._lock:
            idle = self._idle[name]
            container = idle.pop() if idle else None
        if container is None:
            container = self._load(name)
        context = LambdaContext(
            function_name=name,
            memory_limit_in_mb=function.memory_mb,
            timeout_seconds=function.timeout_seconds,
            invoked_function_arn=f"arn:aws:lambda:{self._region}:{self._account}:function:{name}",
        )
        attr = function.handler.rsplit(".", 1)[1]
        try:
            # Lambda hands over a JSON document: so do we (no shared mutable objects).
            return json.loads(
                json.dumps(getattr(container, attr)(json.loads(json.dumps(event)), context))
            )
        except Exception as error:
            raise FunctionError(
                {
                    "errorMessage": str(error),
                    "errorType": type(error).__name__,
                    "requestId": context.aws_request_id,
                    "stackTrace": traceback.format_tb(error.__traceback__),
                }
            ) from error
        finally:
            with self._lock:
                self._idle[name].append(container)


_active: LambdaRuntime | None = None


def install_into_moto(runtime: LambdaRuntime) -> None:
    """Make moto's Lambda service run functions with ``runtime`` instead of Docker."""
    global _active
    from moto.awslambda.models import LambdaFunction

    _active = runtime

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        assert _active is not None
        try:
            result = _active.invoke(self.function_name, event if event is not None else {})
        except FunctionError as error:
            return json.dumps(error.payload), True, ""
        return json.dumps(result), False, ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
