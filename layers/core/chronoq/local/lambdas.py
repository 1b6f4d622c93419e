"""An in-process Lambda runtime.

A function is executed the way Lambda executes it: its handler file (the same path the CDK
stack deploys) is imported into a fresh module, a "container", which serves one invocation at
a time; concurrent invocations get more containers. moto's Docker-based invocation is
replaced by this, so Step Functions' ``lambda:invoke`` tasks run the real handlers.

Other Python functions created in the local AWS (a ``lambda`` target's, say) run from their
deployment package the same way, and what they print or log is their log (``LogType=Tail``).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import hashlib
import importlib.util
import io
import itertools
import json
import logging
import sys
import tempfile
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from chronoq.execution import waits
from chronoq.local import durations
from chronoq.local.usage import Usage, calling_as
from chronoq.resources import DISPATCHER_FUNCTION, Function
from chronoq.settings import environment

logger = logging.getLogger(__name__)
_ids = itertools.count(1)

#: Functions invoked one at a time in this process: none. (The API function's resolver keeps
#: the event it resolves to its thread, see chronoq.resolver: requests are served at once.)
ONE_AT_A_TIME: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ClientContext:
    """The client context of an invocation, as Lambda's Python runtime gives it."""

    custom: dict[str, Any] | None = None
    env: dict[str, Any] | None = None
    client: dict[str, Any] | None = None

    @classmethod
    def read(cls, header: str | None) -> ClientContext | None:
        """The ``X-Amz-Client-Context`` header (base64 JSON) read; None if there is none."""
        if not header:
            return None
        try:
            document = json.loads(base64.b64decode(header))
        except ValueError:
            document = {}
        if not isinstance(document, dict):
            document = {}
        return cls(document.get("custom"), document.get("env"), document.get("client"))


#: The client context of the invocation being handled in this thread (set by moto's Invoke).
_client_context: contextvars.ContextVar[ClientContext | None] = contextvars.ContextVar(
    "chronoq_client_context", default=None
)


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
    #: What the invoker passed as ``ClientContext`` (None: nothing, as AWS's event sources).
    client_context: ClientContext | None = None
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
    def __init__(
        self,
        functions: dict[str, Function],
        region: str,
        account: str,
        one_at_a_time: frozenset[str] = ONE_AT_A_TIME,
    ) -> None:
        self._functions = functions  # deployed name -> definition
        #: (definition names) invoked one at a time, each: see ONE_AT_A_TIME
        self._alone = {name: threading.Lock() for name in one_at_a_time}
        #: Each function's environment variables (deployed name -> variables).
        self.environments: dict[str, dict[str, str]] = {name: {} for name in functions}
        #: Where invocations are counted (chronoq local's usage), if anywhere.
        self.usage: Usage | None = None
        self._idle: dict[str, list[ModuleType]] = {name: [] for name in functions}
        self._lock = threading.Lock()
        self._loading = threading.Lock()
        self._region = region
        # an invocation's waits on targets and webhooks count in its modeled duration
        waits.listen(durations.outside)
        self._account = account

    def retire_containers(self) -> None:
        """Forget every idle container: the next invocations start cold."""
        with self._lock:
            for idle in self._idle.values():
                idle.clear()

    def names(self) -> list[str]:
        return list(self._functions)

    def warm(self, name: str, count: int) -> None:
        """Start ``count`` idle containers of function ``name`` ahead of its invocations (as
        provisioned concurrency does): a burst does not wait for cold starts."""
        for _ in range(count):
            container = self._load(name)
            with self._lock:
                self._idle[name].append(container)

    def invoke_package(
        self, name: str, handler: str, package: bytes, timeout_seconds: int, event: Any
    ) -> tuple[Any, bool, str]:
        """Invoke a function deployed as a zip package: (answer, errored, log)."""
        path = _unpack(package) / f"{handler.rsplit('.', 1)[0].replace('.', '/')}.py"
        with _captured() as log:
            try:
                module = _import(f"_chronoq_package_{next(_ids)}", path)
                context = self._context(name, 128, timeout_seconds)
                answer = getattr(module, handler.rsplit(".", 1)[1])(event, context)
                return json.loads(json.dumps(answer)), False, log.getvalue()
            except Exception as error:
                print(f"[ERROR] {type(error).__name__}: {error}")
                payload = {"errorMessage": str(error), "errorType": type(error).__name__}
                return payload, True, log.getvalue()

    def _load(self, name: str) -> ModuleType:
        """A new container: the handler's module imported afresh (one at a time: what a
        handler builds as it is imported, boto3 clients, is not built safely in parallel)."""
        function = self._functions[name]
        with self._loading, environment(self.environments[name]):
            return _import(f"_chronoq_lambda_{function.name}_{next(_ids)}", function.handler_file)

    def _context(self, name: str, memory_mb: int, timeout_seconds: int) -> LambdaContext:
        return LambdaContext(
            function_name=name,
            memory_limit_in_mb=memory_mb,
            timeout_seconds=timeout_seconds,
            invoked_function_arn=f"arn:aws:lambda:{self._region}:{self._account}:function:{name}",
            client_context=_client_context.get(),
        )

    def invoke(self, name: str, event: Any) -> Any:
        """Invoke function ``name`` with ``event``; raises FunctionError if the handler did."""
        function = self._functions[name]
        with self._alone.get(function.name) or contextlib.nullcontext():
            with self._lock:
                idle = self._idle[name]
                container = idle.pop() if idle else None
            if container is None:
                container = self._load(name)
            return self._call(name, function, container, event)

    def _call(self, name: str, function: Function, container: ModuleType, event: Any) -> Any:
        """One invocation in ``container`` (given back to the idle ones after it)."""
        context = self._context(name, function.memory_mb, function.timeout_seconds)
        attr = function.handler.rsplit(".", 1)[1]
        # a dispatcher tick is priced as the stack invokes it: once a minute per group
        tick = self.usage is not None and function.name == DISPATCHER_FUNCTION.name
        counting: contextlib.AbstractContextManager[None] = (
            self.usage.dispatcher_tick(str(event.get("shards")), function.memory_mb)
            if self.usage is not None and tick
            else contextlib.nullcontext()
        )
        # its billed duration, as modeled (chronoq.local.durations; a tick models its own)
        spent = durations.Ledger(durations.MODEL.handler(function.name))
        ledger = contextlib.nullcontext() if tick else durations.kept_in(spent)
        try:
            # Lambda hands over a JSON document: so do we (no shared mutable objects).
            with (
                environment(self.environments[name]),
                calling_as(function.name),
                counting,
                ledger,
            ):
                answer = getattr(container, attr)(json.loads(json.dumps(event)), context)
            return json.loads(json.dumps(answer))
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
            if self.usage is not None and not tick:
                self.usage.invocation(function.name, function.memory_mb, spent.milliseconds)
            with self._lock:
                self._idle[name].append(container)


def _import(module_name: str, path: Path) -> ModuleType:
    """A fresh module from ``path`` (a new "container" of a function)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # as an import would: pydantic resolves names there
    spec.loader.exec_module(module)
    return module


@functools.cache
def _unpack(package: bytes) -> Path:
    folder = Path(tempfile.gettempdir()) / "chronoq-lambda" / hashlib.sha256(package).hexdigest()
    if not folder.exists():
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            archive.extractall(folder)
    return folder


class _ThreadOutput(io.TextIOBase):
    """sys.stdout, except for threads that capture their own output."""

    def __init__(self, default: TextIO) -> None:
        self.default = default
        self.local = threading.local()

    def write(self, text: str) -> int:
        target = getattr(self.local, "buffer", None) or self.default
        return target.write(text)

    def flush(self) -> None:
        self.default.flush()


class _ThreadRecords(logging.Handler):
    def __init__(self, output: _ThreadOutput) -> None:
        super().__init__()
        self.output = output

    def emit(self, record: logging.LogRecord) -> None:
        buffer = getattr(self.output.local, "buffer", None)
        if buffer is not None:
            buffer.write(f"[{record.levelname}] {record.getMessage()}\n")


_output_lock = threading.Lock()


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    """What this thread prints or logs meanwhile."""
    with _output_lock:
        if not isinstance(sys.stdout, _ThreadOutput):
            sys.stdout = _ThreadOutput(sys.stdout)
            logging.getLogger().addHandler(_ThreadRecords(sys.stdout))
        output = sys.stdout
    buffer = io.StringIO()
    output.local.buffer = buffer
    try:
        yield buffer
    finally:
        output.local.buffer = None


_active: LambdaRuntime | None = None


def install_into_moto(runtime: LambdaRuntime) -> None:
    """Make moto's Lambda service run functions with ``runtime`` instead of Docker."""
    global _active
    from moto.awslambda.models import LambdaFunction

    _active = runtime
    invoke = LambdaFunction.invoke
    if not getattr(invoke, "with_client_context", False):

        def invoke_with_client_context(
            self: Any, body: str, request_headers: Any, response_headers: Any
        ) -> Any:
            """moto's Invoke, with the caller's ClientContext handed to the function."""
            header = request_headers.get("X-Amz-Client-Context")
            token = _client_context.set(ClientContext.read(header))
            try:
                return invoke(self, body, request_headers, response_headers)
            finally:
                _client_context.reset(token)

        invoke_with_client_context.with_client_context = True  # type: ignore[attr-defined]
        LambdaFunction.invoke = invoke_with_client_context  # type: ignore[method-assign]

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        assert _active is not None
        if self.function_name not in _active.names():
            answer, errored, log = _active.invoke_package(
                self.function_name,
                self.handler,
                self.code_bytes,
                self.timeout,
                event if event is not None else {},
            )
            return json.dumps(answer), errored, log
        try:
            result = _active.invoke(self.function_name, event if event is not None else {})
        except FunctionError as error:
            return json.dumps(error.payload), True, ""
        return json.dumps(result), False, ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
