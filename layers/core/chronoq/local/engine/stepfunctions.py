"""chronoq local's Step Functions: the subset of the Step Functions API chronoq calls
(chronoq.aws.executor.StepFunctionsExecutor, the local harness and usage metering), answered
with boto3's keyword arguments, answer shapes and error codes, by chronoq's own ASL
interpreter (chronoq.local.engine.interpreter) instead of moto.

Executions run on a bounded pool of threads, sized for a burst of runs that each block in a
task for a while (an HTTP call, a container). A Wait state holds its execution's thread: every
wait goes through the clock (chronoq.local.clock), whose held waits a test must be able to
see and move past, so the thread waits on it rather than on a timer of its own.

Memory is bounded: every running execution is kept, and the newest ``max_ended`` ended ones
(their histories only for the newest ``max_histories``); older ones are forgotten, as if
their retention period had passed (a STANDARD name can then be used again).

Why this module is long: it answers the Step Functions calls chronoq makes (state machines
created and described; executions started, stopped, described, listed; histories; task
heartbeats) with their checks and error codes, over a bounded pool of execution threads and
bounded memory, which the calls share.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from botocore.exceptions import ClientError

from chronoq.local.engine.interpreter import (
    Clock,
    Execution,
    Interpreter,
    Outcome,
    StatesFailure,
    TaskContext,
    TaskCost,
    TaskHandler,
)

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]

STANDARD = "STANDARD"
EXPRESS = "EXPRESS"
RUNNING = "RUNNING"
#: The most executions or history events one page answers (AWS's limit).
MAX_PAGE = 1000
DEFAULT_PAGE = 100
_NAME = re.compile(r"^[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]{1,80}$")


class StepFunctionsError(ClientError):
    """An error of this API, as botocore raises it (``response["Error"]["Code"]``)."""

    code = "ValidationException"

    def __init__(self, message: str, operation: str = "") -> None:
        super().__init__(
            {
                "Error": {"Code": self.code, "Message": message},
                "ResponseMetadata": {
                    "HTTPStatusCode": 400,
                    "RequestId": "",
                    "HostId": "",
                    "HTTPHeaders": {},
                    "RetryAttempts": 0,
                },
            },
            operation,
        )


class ExecutionAlreadyExists(StepFunctionsError):
    code = "ExecutionAlreadyExists"


class ExecutionDoesNotExist(StepFunctionsError):
    code = "ExecutionDoesNotExist"


class StateMachineDoesNotExist(StepFunctionsError):
    code = "StateMachineDoesNotExist"


class StateMachineAlreadyExists(StepFunctionsError):
    code = "StateMachineAlreadyExists"


class InvalidExecutionInput(StepFunctionsError):
    code = "InvalidExecutionInput"


class InvalidDefinition(StepFunctionsError):
    code = "InvalidDefinition"


class InvalidName(StepFunctionsError):
    code = "InvalidName"


class InvalidArn(StepFunctionsError):
    code = "InvalidArn"


class InvalidToken(StepFunctionsError):
    code = "InvalidToken"


class TaskTimedOut(StepFunctionsError):
    code = "TaskTimedOut"


class ValidationException(StepFunctionsError):
    code = "ValidationException"


class Exceptions:
    """``client.exceptions``, as on a boto3 Step Functions client."""

    ClientError = ClientError
    ExecutionAlreadyExists = ExecutionAlreadyExists
    ExecutionDoesNotExist = ExecutionDoesNotExist
    StateMachineDoesNotExist = StateMachineDoesNotExist
    StateMachineAlreadyExists = StateMachineAlreadyExists
    InvalidExecutionInput = InvalidExecutionInput
    InvalidDefinition = InvalidDefinition
    InvalidName = InvalidName
    InvalidArn = InvalidArn
    InvalidToken = InvalidToken
    TaskTimedOut = TaskTimedOut
    ValidationException = ValidationException


@dataclass(frozen=True)
class ExecutionSummary:
    """What usage metering needs of an ended execution (AWS bills STANDARD per state
    transition, one per state entered, and EXPRESS per start and duration)."""

    execution_arn: str
    state_machine_arn: str
    type: str
    status: str
    start: datetime
    stop: datetime
    transitions: int
    #: Its duration as AWS would bill it (the interpreter's model), in milliseconds.
    billed_ms: float = 0.0


@dataclass
class _Machine:
    arn: str
    name: str
    type: str
    definition: str
    role_arn: str
    created: datetime
    interpreter: Interpreter
    #: Its executions (kept ones), oldest first; a STANDARD one's by name too.
    executions: dict[str, _Record] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


@dataclass
class _Record:
    execution: Execution
    machine: _Machine
    input_text: str
    status: str = RUNNING
    stop: datetime | None = None
    output: str | None = None
    error: str | None = None
    cause: str | None = None


class _Paginator:
    """``get_paginator("list_executions")``: pages until no ``nextToken`` is answered."""

    def __init__(self, method: Callable[..., dict[str, Any]]) -> None:
        self._method = method

    def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
        config = request.pop("PaginationConfig", {}) or {}
        if "PageSize" in config:
            request["maxResults"] = config["PageSize"]
        while True:
            page = self._method(**request)
            yield page
            token = page.get("nextToken")
            if not token:
                return
            request["nextToken"] = token


class LocalStepFunctions:
    """A Step Functions client for chronoq local (create_state_machine, start_execution,
    stop_execution, describe_execution, list_executions, get_execution_history,
    send_task_heartbeat), executing definitions with chronoq's ASL interpreter."""

    exceptions = Exceptions

    def __init__(
        self,
        clock: Clock,
        tasks: Mapping[str, TaskHandler],
        region: str = "us-east-1",
        account: str = "123456789012",
        observer: Observer | None = None,
        on_end: Callable[[ExecutionSummary], None] | None = None,
        max_threads: int = 1024,
        max_ended: int = 10_000,
        max_histories: int = 1_000,
        histories: bool = True,
        task_cost: TaskCost | None = None,
        state_ms: float = 0.0,
    ) -> None:
        """``histories`` False: no execution keeps its events (get_execution_history answers
        its start and end only), which makes each state a little cheaper. ``task_cost`` and
        ``state_ms``: the model of an execution's billed duration (see Interpreter), which
        ``on_end`` is told."""
        self._task_cost = task_cost
        self._state_ms = state_ms
        self.clock = clock
        self.region = region
        self.account = account
        self._tasks = dict(tasks)
        self._observer = observer
        self._on_end = on_end
        self._max_ended = max_ended
        self._max_histories = max_histories
        self._histories = histories
        self._lock = threading.Lock()
        self._machines: dict[str, _Machine] = {}
        self._records: dict[str, _Record] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._with_history: OrderedDict[str, None] = OrderedDict()
        self._tokens: dict[str, TaskContext] = {}
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="execution")
        self._closed = False

    # --- the API -------------------------------------------------------------------------

    def create_state_machine(self, **request: Any) -> dict[str, Any]:
        return self._api("CreateStateMachine", request, self._create_state_machine)

    def describe_state_machine(self, **request: Any) -> dict[str, Any]:
        return self._api("DescribeStateMachine", request, self._describe_state_machine)

    def start_execution(self, **request: Any) -> dict[str, Any]:
        return self._api("StartExecution", request, self._start_execution)

    def stop_execution(self, **request: Any) -> dict[str, Any]:
        return self._api("StopExecution", request, self._stop_execution)

    def describe_execution(self, **request: Any) -> dict[str, Any]:
        return self._api("DescribeExecution", request, self._describe_execution)

    def list_executions(self, **request: Any) -> dict[str, Any]:
        return self._api("ListExecutions", request, self._list_executions)

    def get_execution_history(self, **request: Any) -> dict[str, Any]:
        return self._api("GetExecutionHistory", request, self._get_execution_history)

    def send_task_heartbeat(self, **request: Any) -> dict[str, Any]:
        return self._api("SendTaskHeartbeat", request, self._send_task_heartbeat)

    def get_paginator(self, operation: str) -> _Paginator:
        if operation != "list_executions":
            raise ValueError(f"no paginator for {operation!r}")
        return _Paginator(self.list_executions)

    def running(self) -> int:
        """How many executions have not ended."""
        with self._lock:
            return sum(1 for record in self._records.values() if record.status == RUNNING)

    def close(self) -> None:
        """Stop the pool: running executions are abandoned (their waits end)."""
        with self._lock:
            self._closed = True
            running = [r for r in self._records.values() if r.status == RUNNING]
        for record in running:
            record.execution.scope.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _api(
        self, operation: str, request: dict[str, Any], call: Callable[..., dict[str, Any]]
    ) -> dict[str, Any]:
        if self._observer is None:
            return call(**request)
        try:
            response = call(**request)
        except ClientError as error:
            code = error.response["Error"]["Code"]
            self._observer(f"stepfunctions:{operation}", request, {"Error": {"Code": code}})
            raise
        self._observer(f"stepfunctions:{operation}", request, response)
        return response

    # --- state machines --------------------------------------------------------------------

    def _create_state_machine(
        self,
        name: str,
        definition: str,
        roleArn: str,
        type: str = STANDARD,
        **_: Any,
    ) -> dict[str, Any]:
        if type not in (STANDARD, EXPRESS):
            raise ValidationException(f"type must be STANDARD or EXPRESS, not {type}")
        if not _NAME.match(name):
            raise InvalidName(f"Invalid Name: '{name}'")
        arn = f"arn:aws:states:{self.region}:{self.account}:stateMachine:{name}"
        with self._lock:
            existing = self._machines.get(arn)
        if existing is not None:
            if (existing.definition, existing.type) != (definition, type):
                raise StateMachineAlreadyExists(f"State Machine Already Exists: '{arn}'")
            return {"stateMachineArn": arn, "creationDate": existing.created}
        try:
            interpreter = Interpreter(
                definition,
                self._tasks,
                self.clock,
                task_cost=self._task_cost,
                state_ms=self._state_ms,
            )
        except (ValueError, KeyError, TypeError) as error:
            raise InvalidDefinition(f"Invalid State Machine Definition: '{error}'") from error
        machine = _Machine(arn, name, type, definition, roleArn, self.clock.now(), interpreter)
        with self._lock:
            self._machines[arn] = machine
        return {"stateMachineArn": arn, "creationDate": machine.created}

    def _machine(self, arn: str) -> _Machine:
        with self._lock:
            machine = self._machines.get(arn)
        if machine is None:
            raise StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        return machine

    def _describe_state_machine(self, stateMachineArn: str, **_: Any) -> dict[str, Any]:
        machine = self._machine(stateMachineArn)
        return {
            "stateMachineArn": machine.arn,
            "name": machine.name,
            "status": "ACTIVE",
            "definition": machine.definition,
            "roleArn": machine.role_arn,
            "type": machine.type,
            "creationDate": machine.created,
        }

    # --- executions ------------------------------------------------------------------------

    def _start_execution(
        self,
        stateMachineArn: str,
        name: str | None = None,
        input: str = "{}",
        **_: Any,
    ) -> dict[str, Any]:
        machine = self._machine(stateMachineArn)
        if name is not None and not _NAME.match(name):
            raise InvalidName(f"Invalid Name: '{name}'")
        try:
            document = _parsed(input)
        except ValueError as error:
            raise InvalidExecutionInput(
                f"Invalid State Machine Execution Input: '{error}'"
            ) from error
        express = machine.type == EXPRESS
        name = name or str(uuid.uuid4())
        kind = "express" if express else "execution"
        arn = f"arn:aws:states:{self.region}:{self.account}:{kind}:{machine.name}:{name}"
        if express:
            arn = f"{arn}:{uuid.uuid4()}"
        start = self.clock.now()
        execution = Execution(
            arn=arn,
            name=name,
            state_machine_arn=machine.arn,
            state_machine_name=machine.name,
            input=document,
            start_time=start,
            role_arn=machine.role_arn,
            input_text=input,
            events=[] if self._histories else None,
            tokens=self._tokens,
        )
        record = _Record(execution, machine, input)
        with self._lock:
            if self._closed:
                raise ValidationException("this Step Functions client is closed")
            if not express:
                same = self._same_name(machine, name, input)
                if same is not None:
                    return {
                        "executionArn": same.execution.arn,
                        "startDate": same.execution.start_time,
                    }
                machine.names[name] = arn
            self._records[arn] = record
            machine.executions[arn] = record
        execution.record("ExecutionStarted", start, {"input": input, "roleArn": machine.role_arn})
        self._pool.submit(self._run, record)
        return {"executionArn": arn, "startDate": start}

    def _same_name(self, machine: _Machine, name: str, text: str) -> _Record | None:
        """A running execution of that name and input (under the lock), or raise if one of
        that name is kept."""
        known = machine.names.get(name)
        if known is None:
            return None
        record = self._records[known]
        if record.status == RUNNING and record.input_text == text:
            return record
        raise ExecutionAlreadyExists(f"Execution Already Exists: '{known}'")

    def _run(self, record: _Record) -> None:
        try:
            outcome = record.machine.interpreter.execute(record.execution)
        except StatesFailure as failure:  # (defensive: execute answers its failures)
            outcome = Outcome("FAILED", error=failure.error, cause=failure.cause)
        except Exception as error:  # a bug must not leave the execution running forever
            outcome = Outcome("FAILED", error="States.Runtime", cause=repr(error))
        self._end(record, outcome)

    def _end(self, record: _Record, outcome: Outcome) -> None:
        stop = self.clock.now()
        with self._lock:
            if record.status != RUNNING or self._closed:
                return
            record.status, record.stop = outcome.status, stop
            record.error, record.cause = outcome.error, outcome.cause
            if outcome.status == "SUCCEEDED":
                record.output = json.dumps(outcome.output, separators=(",", ":"))
            self._forget_over_limits(record.execution.arn)
        kind = {"SUCCEEDED": "ExecutionSucceeded", "FAILED": "ExecutionFailed"}
        details = (
            {"output": record.output}
            if outcome.status == "SUCCEEDED"
            else {"error": outcome.error, "cause": outcome.cause}
        )
        record.execution.record(kind.get(outcome.status, "ExecutionAborted"), stop, details)
        self._tell_end(record)

    def _forget_over_limits(self, arn: str) -> None:
        """(under the lock) Keep ``arn`` among the ended, forgetting the oldest over the
        limits."""
        self._ended[arn] = None
        self._with_history[arn] = None
        while len(self._with_history) > self._max_histories:
            old, _ = self._with_history.popitem(last=False)
            if old in self._records:
                self._records[old].execution.events = None
        while len(self._ended) > self._max_ended:
            old, _ = self._ended.popitem(last=False)
            forgotten = self._records.pop(old, None)
            if forgotten is not None:
                machine = forgotten.machine
                machine.executions.pop(old, None)
                if machine.names.get(forgotten.execution.name) == old:
                    del machine.names[forgotten.execution.name]

    def _tell_end(self, record: _Record) -> None:
        if self._on_end is None or record.stop is None:
            return
        self._on_end(
            ExecutionSummary(
                execution_arn=record.execution.arn,
                state_machine_arn=record.machine.arn,
                type=record.machine.type,
                status=record.status,
                start=record.execution.start_time,
                stop=record.stop,
                transitions=record.execution.transitions,
                billed_ms=record.execution.billed_ms,
            )
        )

    def _record(self, arn: str) -> _Record:
        with self._lock:
            record = self._records.get(arn)
        if record is None:
            raise ExecutionDoesNotExist(f"Execution Does Not Exist: '{arn}'")
        return record

    def _stop_execution(
        self,
        executionArn: str,
        error: str | None = None,
        cause: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        record = self._record(executionArn)
        if record.machine.type == EXPRESS:
            raise ValidationException("This operation is not supported by EXPRESS state machines")
        stop = self.clock.now()
        with self._lock:
            if record.status != RUNNING:
                return {"stopDate": record.stop or stop}
            record.status, record.stop = "ABORTED", stop
            record.error, record.cause = error, cause
            self._forget_over_limits(executionArn)
        record.execution.scope.stop()
        details = {"error": error, "cause": cause}
        record.execution.record("ExecutionAborted", stop, details)
        self._tell_end(record)
        return {"stopDate": stop}

    def _describe_execution(self, executionArn: str, **_: Any) -> dict[str, Any]:
        record = self._record(executionArn)
        execution = record.execution
        answer: dict[str, Any] = {
            "executionArn": execution.arn,
            "stateMachineArn": record.machine.arn,
            "name": execution.name,
            "status": record.status,
            "startDate": execution.start_time,
            "input": record.input_text,
            "inputDetails": {"included": True},
        }
        if record.stop is not None:
            answer["stopDate"] = record.stop
        if record.output is not None:
            answer["output"] = record.output
            answer["outputDetails"] = {"included": True}
        if record.error is not None:
            answer["error"] = record.error
        if record.cause is not None:
            answer["cause"] = record.cause
        return answer

    def _list_executions(
        self,
        stateMachineArn: str,
        statusFilter: str | None = None,
        maxResults: int | None = None,
        nextToken: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        machine = self._machine(stateMachineArn)
        with self._lock:
            records = list(machine.executions.values())
        records.reverse()  # newest first, as Step Functions lists them
        if statusFilter is not None:
            records = [r for r in records if r.status == statusFilter]
        start, size = _page(maxResults, nextToken)
        page = records[start : start + size]
        answer: dict[str, Any] = {"executions": [_summary(r) for r in page]}
        if start + size < len(records):
            answer["nextToken"] = str(start + size)
        return answer

    def _get_execution_history(
        self,
        executionArn: str,
        maxResults: int | None = None,
        reverseOrder: bool = False,
        nextToken: str | None = None,
        includeExecutionData: bool = True,
        **_: Any,
    ) -> dict[str, Any]:
        record = self._record(executionArn)
        events = _history(record, self.region, includeExecutionData)
        if reverseOrder:
            events.reverse()
        start, size = _page(maxResults, nextToken)
        answer: dict[str, Any] = {"events": events[start : start + size]}
        if start + size < len(events):
            answer["nextToken"] = str(start + size)
        return answer

    def _send_task_heartbeat(self, taskToken: str, **_: Any) -> dict[str, Any]:
        context = self._tokens.get(taskToken)
        if context is None:
            raise TaskTimedOut("Task Timed Out: the task of this token has ended")
        context.heartbeat()
        return {}


def _page(size: int | None, token: str | None) -> tuple[int, int]:
    try:
        start = int(token) if token else 0
    except ValueError as error:
        raise ValidationException(f"Invalid nextToken {token!r}") from error
    return start, min(size or DEFAULT_PAGE, MAX_PAGE)


def _summary(record: _Record) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "executionArn": record.execution.arn,
        "stateMachineArn": record.machine.arn,
        "name": record.execution.name,
        "status": record.status,
        "startDate": record.execution.start_time,
    }
    if record.stop is not None:
        summary["stopDate"] = record.stop
    return summary


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _details(kind: str, details: dict[str, Any], region: str, data: bool) -> dict[str, Any]:
    """An event's details as Step Functions answers them (documents as JSON text)."""
    if kind.endswith("StateEntered") or kind.endswith("StateExited"):
        key = "input" if kind.endswith("Entered") else "output"
        shaped = {"name": details["name"]}
        if data:
            shaped[key] = _text(details[key])
            shaped[f"{key}Details"] = {"truncated": False}
        field_name = "stateEnteredEventDetails" if key == "input" else "stateExitedEventDetails"
        return {field_name: shaped}
    shaped = dict(details)
    if "resource" in shaped:
        service_action = shaped["resource"].split(":::", 1)[-1]
        service, _, action = service_action.partition(":")
        shaped.update(resourceType=service, resource=action or service_action)
        if kind == "TaskScheduled":
            shaped["region"] = region
    for key in ("input", "output", "parameters"):
        if key in shaped:
            shaped[key] = _text(shaped[key]) if data else ""
    shaped = {k: v for k, v in shaped.items() if v is not None}
    if not shaped:
        return {}
    return {kind[:1].lower() + kind[1:] + "EventDetails": shaped}


def _history(record: _Record, region: str, data: bool) -> list[dict[str, Any]]:
    execution = record.execution
    kept = execution.events
    if kept is None:
        kept = [("ExecutionStarted", execution.start_time, {"input": record.input_text})]
        if record.stop is not None:
            end = {"SUCCEEDED": "ExecutionSucceeded", "FAILED": "ExecutionFailed"}
            details = {"error": record.error, "cause": record.cause}
            kept.append((end.get(record.status, "ExecutionAborted"), record.stop, details))
    events = []
    for index, (kind, at, details) in enumerate(list(kept)):
        event = {"id": index + 1, "previousEventId": index, "timestamp": at, "type": kind}
        event.update(_details(kind, details, region, data))
        events.append(event)
    return events


def _parsed(text: str) -> Any:
    """A JSON document (orjson's speed; json for what it refuses: a number past 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
