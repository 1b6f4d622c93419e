"""What a workload on ``chronoq local`` would cost on AWS: every AWS request chronoq makes (its
functions, the state machine, the event source mappings), DynamoDB units counted from item
sizes the way DynamoDB bills them, Lambda invocations and billed milliseconds, Step Functions
executions and transitions; and those priced at AWS list prices (us-east-1).

Served by ``GET /_local/usage`` and printed, priced per million runs, by ``chronoq cost``.

Why this module is long: it is AWS's billing service by service (DynamoDB's units, Lambda's
billed milliseconds, Step Functions' transitions and Express durations, SQS, SNS, S3,
EventBridge requests), the price list and the metering hook every caller passes through; each
rule is short, and there are many, priced together.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chronoq import resources as r
from chronoq.domain.runs import TERMINAL_STATUSES
from chronoq.local import durations

#: Who makes the AWS request being counted: a function's name, or the state machine.
_caller: contextvars.ContextVar[str] = contextvars.ContextVar("chronoq_caller", default="")

#: What callers outside any function are, by the name of their thread's role.
STATE_MACHINE = "statemachine"
EVENT_SOURCES = "event-source-mappings"


#: The archiver (priced as the stack runs it: see Usage.archive_object).
ARCHIVER = r.ARCHIVER_FUNCTION.name


def stream_caller(reader: str) -> str:
    """Who reads the runs stream for ``reader`` (chronoq.aws.fanout): its event source
    mapping, acting with the reader's role (the notifier's mapping is EVENT_SOURCES)."""
    return EVENT_SOURCES if reader == r.NOTIFIER_FUNCTION.name else f"{EVENT_SOURCES}:{reader}"


#: ECS starting a container target's task, with the containers' execution role (reading the
#: secrets its task definition names).
CONTAINER_EXECUTION = "container-execution"


@contextlib.contextmanager
def calling_as(caller: str) -> Iterator[None]:
    """AWS requests made meanwhile (in this thread) are ``caller``'s."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


#: moto runs each execution in a thread named after this function (moto 5.2.5).
_EXECUTION_THREAD = "_exec_and_notify"
#: Requests made outside any function or execution (a test, the local runtime itself).
OTHER = "other"


def current_caller() -> str:
    caller = _caller.get()
    if caller:
        return caller
    return STATE_MACHINE if _EXECUTION_THREAD in threading.current_thread().name else OTHER


# --- DynamoDB item sizes and units ------------------------------------------------------------

KB = 1024


def value_size(value: Mapping[str, Any]) -> int:
    """The size DynamoDB bills for one typed value (``{"S": "..."}``, ``{"N": "12"}``, ...)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "N":
        return _number_size(str(data))
    if kind == "B":
        return len(data) if isinstance(data, bytes) else len(str(data)) * 3 // 4
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(x).encode()) for x in data)
    if kind == "NS":
        return sum(_number_size(str(x)) for x in data)
    if kind == "BS":
        return sum(len(x) if isinstance(x, bytes) else len(str(x)) * 3 // 4 for x in data)
    if kind == "L":
        return 3 + sum(value_size(x) + 1 for x in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in data.items())
    raise ValueError(f"not a DynamoDB value: {value}")


def _number_size(text: str) -> int:
    """About one byte per two significant digits, plus one (at most 21)."""
    digits = text.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return min(21, (len(digits) + 1) // 2 + 1)


def item_size(item: Mapping[str, Any] | None) -> int:
    """The size of an item: its attribute names and values."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def write_units(size: int) -> int:
    """Write request units of a write of an item of ``size`` bytes (1 KB each, at least 1)."""
    return max(1, math.ceil(size / KB))


def read_units(size: int, consistent: bool) -> float:
    """Read request units of reading ``size`` bytes: 4 KB each for a strongly consistent read,
    half that for an eventually consistent one (at least one unit, or half)."""
    units = max(1, math.ceil(size / (4 * KB)))
    return float(units) if consistent else units / 2


def index_write_units(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    index: r.Index,
    table: r.Table,
) -> int:
    """What a change from ``old`` to ``new`` of an item of ``table`` costs in one of its
    global secondary indexes: an index entry written when the item is (or stays) in the index
    and its entry changed (any attribute, if the index projects all; its keys, if it projects
    keys only), one more deleted when its index key changed."""
    keys = [k for k in (index.partition_key, index.sort_key) if k]
    projected = {*keys, table.partition_key, *([table.sort_key] if table.sort_key else [])}

    def entry(item: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if not item or not all(k in item for k in keys):
            return None
        if index.projection is r.Projection.ALL:
            return item
        return {name: value for name, value in item.items() if name in projected}

    before, after = entry(old), entry(new)
    if before == after:
        return 0
    units = write_units(item_size(after)) if after else 0
    if before and (not after or any(before.get(k) != after.get(k) for k in keys)):
        units += 1  # the old entry deleted
    return units


# --- the ledger -------------------------------------------------------------------------------


@dataclass
class FunctionUse:
    memory_mb: int
    invocations: int = 0
    billed_ms: float = 0.0


#: Operations that change something: a dispatcher tick that made one did work.
_CHANGES = ("Put", "Update", "Delete", "Write", "Send", "Start", "Publish")


@dataclass
class Tick:
    """What one local dispatcher invocation did, held until it is known whether AWS would
    have made it (see Usage.dispatcher_tick)."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    write_units: float = 0.0
    read_units: float = 0.0

    @property
    def worked(self) -> bool:
        return any(op.partition(":")[2].startswith(_CHANGES) for op, _ in self.requests)


#: The dispatcher tick being counted in this thread (and the shard threads it starts).
_tick: contextvars.ContextVar[Tick | None] = contextvars.ContextVar("chronoq_tick", default=None)


@dataclass
class Usage:
    """Counts since the last reset. Thread-safe."""

    requests: Counter[str] = field(default_factory=Counter)
    by_caller: Counter[str] = field(default_factory=Counter)
    #: (caller, operation) -> requests
    by_caller_operation: Counter[tuple[str, str]] = field(default_factory=Counter)
    write_units: float = 0.0
    read_units: float = 0.0
    functions: dict[str, FunctionUse] = field(default_factory=dict)
    #: execution ARN -> the state machine's type ("standard" or "express")
    executions: dict[str, str] = field(default_factory=dict)
    #: execution ARN -> (transitions, billed ms) once it has ended
    ended_executions: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: Executions of chronoq local's engine, counted as each ends (nothing kept per
    #: execution): kind -> [executions, transitions, billed ms].
    settled: dict[str, list[float]] = field(
        default_factory=lambda: {"standard": [0, 0, 0.0], "express": [0, 0, 0.0]}
    )
    express_memory_mb: int = r.EXPRESS_MEMORY_MB
    #: Runs that reached a final status, as the engine's writes show them.
    runs_finished: int = 0
    #: Dispatcher invocations made locally, and those priced: one per group of shards and
    #: minute, as the stack's rules invoke it (see dispatcher_tick).
    local_ticks: int = 0
    #: (group, minute) of every priced tick.
    priced_ticks: set[tuple[str, int]] = field(default_factory=set)
    #: The archiver's invocations and objects made locally, and the windows and objects
    #: priced: chronoq local gathers its batches for a few seconds, the stack for
    #: ARCHIVER_BATCHING_WINDOW_SECONDS, so an invocation is priced once per such window
    #: and an object once per owner and day in it (see archive_object).
    archive_invocations: int = 0
    archive_objects: int = 0
    priced_archive_windows: set[int] = field(default_factory=set)
    priced_archive_objects: set[tuple[str, int]] = field(default_factory=set)
    archive_window_seconds: float = r.ARCHIVER_BATCHING_WINDOW_SECONDS
    #: The wall clock (seconds), for the minute of a tick.
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.by_caller.clear()
            self.by_caller_operation.clear()
            self.write_units = self.read_units = 0.0
            for use in self.functions.values():
                use.invocations, use.billed_ms = 0, 0.0
            self.executions.clear()
            self.ended_executions.clear()
            for totals in self.settled.values():
                totals[:] = [0, 0, 0.0]
            self.runs_finished = 0
            self.local_ticks = 0
            self.priced_ticks.clear()
            self.archive_invocations = self.archive_objects = 0
            self.priced_archive_windows.clear()
            self.priced_archive_objects.clear()

    def request(self, operation: str, caller: str) -> None:
        durations.request(operation)  # (the invocation or task making it waits for it)
        with self._lock:
            tick = _tick.get()
            if tick is not None:
                tick.requests[(operation, caller)] += 1
                return
            self.requests[operation] += 1
            self.by_caller[caller] += 1
            self.by_caller_operation[(caller, operation)] += 1

    def units(self, write: float = 0.0, read: float = 0.0) -> None:
        with self._lock:
            tick = _tick.get()
            if tick is not None:
                tick.write_units += write
                tick.read_units += read
                return
            self.write_units += write
            self.read_units += read

    @contextlib.contextmanager
    def dispatcher_tick(self, group: str, memory_mb: int) -> Iterator[None]:
        """Count one local dispatcher invocation (for the shards ``group`` names) as the
        stack would run it. The stack invokes the dispatcher once a minute per group of
        shards; chronoq local ticks every ``--tick-seconds`` (1 s by default), which only
        shortens the wait. So the first tick of a group in a wall-clock minute is priced as
        that minute's invocation (its requests, units and milliseconds); a later one in the
        same minute is priced only if it did work (sent or wrote something: the minute it
        dispatched is the same work the stack's one invocation does), as part of that
        invocation, and otherwise not at all (it only read the checkpoints again)."""
        tick = Tick()
        token = _tick.set(tick)
        spent = durations.Ledger(durations.MODEL.handler(r.DISPATCHER_FUNCTION.name))
        try:
            with durations.kept_in(spent):
                yield
        finally:
            _tick.reset(token)
            elapsed = math.ceil(spent.milliseconds)
            key = (group, int(self.clock() // 60))
            with self._lock:
                self.local_ticks += 1
                first = key not in self.priced_ticks
                if first or tick.worked:
                    self.priced_ticks.add(key)
                    for (operation, caller), n in tick.requests.items():
                        self.requests[operation] += n
                        self.by_caller[caller] += n
                        self.by_caller_operation[(caller, operation)] += n
                    self.write_units += tick.write_units
                    self.read_units += tick.read_units
                    use = self.functions.setdefault(
                        r.DISPATCHER_FUNCTION.name, FunctionUse(memory_mb)
                    )
                    use.invocations += 1 if first else 0
                    use.billed_ms += elapsed

    def invocation(self, function: str, memory_mb: int, milliseconds: float) -> None:
        """One invocation of a function, billed by the millisecond (rounded up). The
        archiver's is priced once per window of the stack's (its milliseconds all the same:
        the stack's one invocation does the work of a window's local ones)."""
        with self._lock:
            use = self.functions.setdefault(function, FunctionUse(memory_mb))
            if function == ARCHIVER:
                self.archive_invocations += 1
                window = self._archive_window()
                use.invocations += window not in self.priced_archive_windows
                self.priced_archive_windows.add(window)
            else:
                use.invocations += 1
            use.billed_ms += math.ceil(milliseconds)

    def _archive_window(self) -> int:
        return int(self.clock() // self.archive_window_seconds)

    def archive_object(self, key: str) -> bool:
        """An object the archiver writes (its key): is it priced? Once per owner and day
        (the key's prefix) and window of the stack's: the stack's batch of that window
        writes one object of that owner's day, where chronoq local's shorter windows wrote
        several."""
        prefix = key.rpartition("/")[0]
        with self._lock:
            self.archive_objects += 1
            priced = (prefix, self._archive_window())
            first = priced not in self.priced_archive_objects
            self.priced_archive_objects.add(priced)
            return first

    def execution(self, arn: str, kind: str) -> None:
        with self._lock:
            self.executions[arn] = kind

    def ended(self, arn: str, transitions: int, milliseconds: float) -> None:
        with self._lock:
            self.ended_executions[arn] = (transitions, milliseconds)

    def settle(self, kind: str, transitions: int, milliseconds: float) -> None:
        """One execution of the engine's that has ended (``kind``: "standard" or
        "express"), with its state transitions and the milliseconds AWS would bill."""
        step = r.EXPRESS_BILLING_STEP_MS
        with self._lock:
            totals = self.settled[kind]
            totals[0] += 1
            totals[1] += transitions
            totals[2] += math.ceil(milliseconds / step) * step

    def document(self, runs_finished: int) -> dict[str, Any]:
        """The usage as JSON: the keys other tools may read are stable."""
        with self._lock:
            by_kind: dict[str, list[str]] = {"standard": [], "express": []}
            for arn, kind in self.executions.items():
                by_kind[kind].append(arn)
            standard_transitions = sum(
                self.ended_executions.get(a, (0, 0.0))[0] for a in by_kind["standard"]
            )
            step = r.EXPRESS_BILLING_STEP_MS
            express_ms = sum(
                math.ceil(self.ended_executions.get(a, (0, 0.0))[1] / step) * step
                for a in by_kind["express"]
            )
            standard, express = self.settled["standard"], self.settled["express"]
            standard_transitions += int(standard[1])
            express_ms += int(express[2])
            requests = dict(sorted(self.requests.items()))
            return {
                "runs_finished": runs_finished,
                # the dispatcher as the stack runs it: one invocation per group and minute
                "dispatcher_ticks": {"local": self.local_ticks, "priced": len(self.priced_ticks)},
                # the archiver as the stack runs it: one invocation per window, one object
                # per owner and day in it
                "archive_batches": {
                    "local": self.archive_invocations,
                    "priced": len(self.priced_archive_windows),
                    "objects_local": self.archive_objects,
                    "objects_priced": len(self.priced_archive_objects),
                },
                "aws_requests": requests,
                "aws_requests_by_caller": dict(sorted(self.by_caller.items())),
                "dynamodb": {
                    "write_units": round(self.write_units, 3),
                    "read_units": round(self.read_units, 3),
                },
                "lambda": {
                    name: {
                        "invocations": use.invocations,
                        "memory_mb": use.memory_mb,
                        "billed_ms": use.billed_ms,
                    }
                    for name, use in sorted(self.functions.items())
                },
                "stepfunctions": {
                    "standard": {
                        "executions": len(by_kind["standard"]) + int(standard[0]),
                        "transitions": standard_transitions,
                    },
                    "express": {
                        "executions": len(by_kind["express"]) + int(express[0]),
                        "billed_ms": float(express_ms),
                        "memory_mb": self.express_memory_mb,
                    },
                },
                "sns": {"publishes": _count(requests, "sns:Publish")},
                "sqs": {"requests": sum(n for k, n in requests.items() if k.startswith("sqs:"))},
                "s3": {
                    "puts": _count(requests, "s3:PutObject"),
                    "gets": _count(requests, "s3:GetObject"),
                    # (LIST is priced as PUT)
                    "lists": _count(requests, "s3:ListObjectsV2"),
                },
                "eventbridge": {"put_events": _count(requests, "events:PutEvents")},
                # secrets' values (SSM Parameter Store): reads by the runner, the notifier and
                # ECS, writes and deletes by the API; each put and read of a SecureString
                # asks KMS to encrypt or decrypt it (chronoq reads one parameter a request)
                "ssm": {
                    "requests": sum(n for k, n in requests.items() if k.startswith("ssm:")),
                    "reads": sum(n for k, n in requests.items() if k.startswith("ssm:Get")),
                    "kms_requests": sum(n for k, n in requests.items() if k in _SSM_KMS_OPERATIONS),
                },
            }


def _count(requests: Mapping[str, int], operation: str) -> int:
    return int(requests.get(operation, 0))


# --- prices -----------------------------------------------------------------------------------

#: AWS list prices, us-east-1, in dollars. Lambda at arm64's (Graviton) price per GB-second,
#: the architecture every function of the stack runs on (x86_64: $0.0000166667).
PRICES: dict[str, Decimal] = {
    "dynamodb_write_unit": Decimal("0.625") / 1_000_000,
    "dynamodb_read_unit": Decimal("0.125") / 1_000_000,
    "sqs_request": Decimal("0.40") / 1_000_000,
    "lambda_request": Decimal("0.20") / 1_000_000,
    "lambda_gb_second": Decimal("0.0000133334"),
    "stepfunctions_transition": Decimal("25") / 1_000_000,
    "express_request": Decimal("1.00") / 1_000_000,
    "express_gb_second": Decimal("0.00001667"),
    "sns_publish": Decimal("0.50") / 1_000_000,
    "s3_put": Decimal("0.005") / 1000,
    "s3_get": Decimal("0.0004") / 1000,
    "eventbridge_event": Decimal("1.00") / 1_000_000,
    # SSM Parameter Store, where secrets' values live: standard parameters cost nothing to
    # keep, and their API interactions at the standard throughput (the default, which the
    # stack keeps) nothing either; the higher throughput would cost $0.05 per 10,000
    # (https://aws.amazon.com/systems-manager/pricing/, "Parameter Store").
    "ssm_request": Decimal(0),
    # SecureStrings are encrypted with the account's AWS managed key (aws/ssm): no monthly
    # charge for the key, but "you will be charged on any API request made to AWS-managed
    # keys", $0.03 per 10,000 (https://aws.amazon.com/kms/pricing/): one per put or read.
    "kms_request": Decimal("0.03") / 10_000,
}
#: The SSM operations that encrypt or decrypt a SecureString (one KMS request each).
_SSM_KMS_OPERATIONS = frozenset({"ssm:PutParameter", "ssm:GetParameter", "ssm:GetParameters"})
#: What EventBridge Scheduler charges per million invocations, for comparison.
EVENTBRIDGE_SCHEDULER_PER_MILLION = Decimal("1.00")


def price(usage: Mapping[str, Any]) -> dict[str, Decimal]:
    """The usage document's cost, in dollars, by service (and ``total``)."""
    p = PRICES
    lambda_cost = Decimal(0)
    for use in usage["lambda"].values():
        gb_seconds = Decimal(use["memory_mb"]) / 1024 * Decimal(use["billed_ms"]) / 1000
        lambda_cost += use["invocations"] * p["lambda_request"] + gb_seconds * p["lambda_gb_second"]
    sfn = usage["stepfunctions"]
    express = sfn["express"]
    express_gb_seconds = Decimal(express["memory_mb"]) / 1024 * Decimal(express["billed_ms"]) / 1000
    costs = {
        "dynamodb": Decimal(str(usage["dynamodb"]["write_units"])) * p["dynamodb_write_unit"]
        + Decimal(str(usage["dynamodb"]["read_units"])) * p["dynamodb_read_unit"],
        "lambda": lambda_cost,
        "stepfunctions": sfn["standard"]["transitions"] * p["stepfunctions_transition"]
        + express["executions"] * p["express_request"]
        + express_gb_seconds * p["express_gb_second"],
        "sqs": usage["sqs"]["requests"] * p["sqs_request"],
        "sns": usage["sns"]["publishes"] * p["sns_publish"],
        "s3": (usage["s3"]["puts"] + usage["s3"].get("lists", 0)) * p["s3_put"]
        + usage["s3"]["gets"] * p["s3_get"],
        "eventbridge": usage["eventbridge"]["put_events"] * p["eventbridge_event"],
        # (a document from before secrets counts none)
        "ssm": usage.get("ssm", {}).get("requests", 0) * p["ssm_request"]
        + usage.get("ssm", {}).get("kms_requests", 0) * p["kms_request"],
    }
    costs["total"] = sum(costs.values(), Decimal(0))
    return costs


def per_million_runs(usage: Mapping[str, Any]) -> dict[str, Decimal]:
    """The cost by service, per million finished runs."""
    runs = usage["runs_finished"]
    if not runs:
        return {}
    return {k: v * 1_000_000 / runs for k, v in price(usage).items()}


# --- counting what goes through the embedded AWS ----------------------------------------------

#: X-Amz-Target prefixes of JSON-protocol services -> the service's name in operation keys.
_TARGETS = {
    "DynamoDB_20120810": "dynamodb",
    "DynamoDBStreams_20120810": "dynamodbstreams",
    "AmazonSQS": "sqs",
    "AWSStepFunctions": "stepfunctions",
    "AWSEvents": "events",
    "secretsmanager": "secretsmanager",
    "AmazonEC2ContainerServiceV20141113": "ecs",
    "Logs_20140328": "logs",
    "AmazonSSM": "ssm",
}
_QUERY_HOSTS = {"sns": "sns", "email": "ses", "sts": "sts", "iam": "iam", "ec2": "ec2"}
_uncounted = threading.local()


@contextlib.contextmanager
def uncounted() -> Iterator[None]:
    """Requests made meanwhile (in this thread) are the local runtime's own: not counted."""
    before = getattr(_uncounted, "on", False)
    _uncounted.on = True
    try:
        yield
    finally:
        _uncounted.on = before


def operation_of(method: str, url: str, headers: Mapping[str, Any], body: bytes) -> str:
    """``service:Operation`` of an AWS request as botocore sends it."""
    from urllib.parse import parse_qs, urlsplit

    target = headers.get("X-Amz-Target")
    if target:
        text = target.decode() if isinstance(target, bytes) else str(target)
        prefix, _, name = text.rpartition(".")
        return f"{_TARGETS.get(prefix, prefix.lower())}:{name}"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host.startswith("lambda."):
        return "lambda:Invoke" if parts.path.endswith("/invocations") else f"lambda:{method}"
    service = host.split(".", 1)[0]
    if service in _QUERY_HOSTS:
        action = parse_qs(body.decode(errors="replace")).get("Action", ["?"])[0]
        return f"{_QUERY_HOSTS[service]}:{action}"
    if host.startswith("s3.") or ".s3." in host:
        path = parts.path.strip("/")
        # path style (s3.amazonaws.com/bucket/key) or virtual host (bucket.s3.amazonaws.com/key)
        has_key = "/" in path if host.startswith("s3.") else bool(path)
        if method in ("PUT", "GET") and has_key:
            return f"s3:{'PutObject' if method == 'PUT' else 'GetObject'}"
        if method == "DELETE" and has_key:
            return "s3:DeleteObject"
        query = parse_qs(parts.query, keep_blank_values=True)
        if method == "GET" and not has_key and "list-type" in query:
            return "s3:ListObjectsV2"
        if method == "POST" and not has_key and "delete" in query:
            return "s3:DeleteObjects"
        return f"s3:{method}"
    return f"{service}:{method}"


_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def _is_write(name: str, document: Mapping[str, Any]) -> bool:
    """Does this DynamoDB request write (a PartiQL INSERT among ExecuteStatements)?"""
    if name == "ExecuteStatement":
        from chronoq.local.partiql import kind_of

        return kind_of(str(document.get("Statement", ""))) == "INSERT"
    return name in _WRITES


#: Write units per item KB (a transaction's writes cost twice a plain write's).
_TRANSACT_FACTOR = 2
#: Where chronoq local's engine hands the meter the images of the items a write changed, in
#: its answer (table name, old item or None, new item or None), before the caller sees it.
WRITTEN = "_written"


class Meter:
    """Counts each request to the embedded AWS into ``usage``: by operation and caller, and
    for DynamoDB the units it consumes (item sizes read before and after a write, without
    counting those reads)."""

    def __init__(
        self, usage: Usage, tables: Mapping[str, r.Table], region: str, account: str
    ) -> None:
        self.usage = usage
        self.tables = tables  # deployed name -> definition
        self.region = region
        self.account = account
        self._state_machine_types: dict[str, str] = {}

    def around(self, request: Any, call: Any) -> Any:
        """``call()`` (the request's processing), counted."""
        if getattr(_uncounted, "on", False):
            return call()
        body = _body(request.body)
        operation = operation_of(request.method, request.url, request.headers, body)
        service, _, name = operation.partition(":")
        document = _json(body) if service in ("dynamodb", "stepfunctions") else {}
        before = self._items_written(name, document) if service == "dynamodb" else {}
        response = call()
        caller = current_caller()
        from chronoq.local.calls import RECORDER, calls_of

        RECORDER.add(calls_of(caller, operation, request.url, body, self.region, self.account))
        if operation == "sqs:ReceiveMessage" and b"ReceiptHandle" not in _content(response):
            return response  # an empty poll: AWS's long polling makes these rare
        if (caller, operation) == (ARCHIVER, "s3:PutObject") and not self.usage.archive_object(
            _object_key(request.url)
        ):
            durations.request(operation)  # (the invocation made it all the same)
            return response  # (the stack's batch of this window writes it once)
        self.usage.request(operation, caller)
        if service == "dynamodb":
            self._dynamodb_units(name, document, before, response)
        elif operation == "stepfunctions:StartExecution":
            answer = _json(_content(response))
            if "executionArn" in answer:
                kind = self._kind(document.get("stateMachineArn", ""))
                self.usage.execution(answer["executionArn"], kind)
        return response

    def observe(
        self,
        operation: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any],
        stored: Callable[[str, Mapping[str, Any]], dict[str, Any] | None] | None = None,
    ) -> None:
        """One call answered by chronoq local's engine (chronoq.local.engine), counted as the
        same request to AWS would be: the request, its IAM calls, and DynamoDB's units, from
        the item images the engine hands over with each write (``WRITTEN``) or, for a
        conditional write it refused, from the item as ``stored`` now. Executions are counted
        as they end (Usage.settle)."""
        if getattr(_uncounted, "on", False):
            return
        caller = current_caller()
        from chronoq.local.calls import RECORDER, calls_in

        RECORDER.add(calls_in(caller, operation, request, self.region, self.account))
        if operation == "sqs:ReceiveMessage" and not response.get("Messages"):
            return  # an empty poll: AWS's long polling makes these rare
        if (caller, operation) == (ARCHIVER, "s3:PutObject") and not self.usage.archive_object(
            str(request.get("Key", ""))
        ):
            durations.request(operation)  # (the invocation made it all the same)
            return  # (the stack's batch of this window writes this object once)
        self.usage.request(operation, caller)
        service, _, name = operation.partition(":")
        if service == "dynamodb":
            if _is_write(name, request):
                images = response.get(WRITTEN)
                if images is None and stored is not None:  # refused: the item is read
                    images = [(t, item, item) for t, item in self._stored(name, request, stored)]
                self._write_units(images or [], _factor(name))
            else:
                self._read_units(name, request, response)

    def _stored(
        self,
        name: str,
        request: Mapping[str, Any],
        stored: Callable[[str, Mapping[str, Any]], dict[str, Any] | None],
    ) -> list[tuple[str, dict[str, Any] | None]]:
        return [(table, stored(table, key)) for table, key in self._writes(name, request)]

    def _write_units(self, images: Any, factor: int = 1) -> None:
        units = 0
        for table, old, new in images:
            spec = self.tables.get(table)
            if spec is None:
                continue
            if spec is r.RUNS_TABLE and _final(new) and not _final(old):
                with self.usage._lock:
                    self.usage.runs_finished += 1
            units += factor * write_units(max(item_size(old), item_size(new)))
            for index in spec.indexes:
                units += index_write_units(old, new, index, spec)
        self.usage.units(write=units)

    def _read_units(
        self, name: str, document: Mapping[str, Any], answer: Mapping[str, Any]
    ) -> None:
        if name == "GetItem":
            size = item_size(answer.get("Item"))
            self.usage.units(read=read_units(size, bool(document.get("ConsistentRead"))))
        elif name == "BatchGetItem":
            for table, items in answer.get("Responses", {}).items():
                consistent = bool(
                    document.get("RequestItems", {}).get(table, {}).get("ConsistentRead")
                )
                for item in items:
                    self.usage.units(read=read_units(item_size(item), consistent))
        elif name in ("Query", "Scan"):
            size = sum(item_size(item) for item in answer.get("Items", []))
            self.usage.units(read=read_units(size, bool(document.get("ConsistentRead"))))

    # DynamoDB ---------------------------------------------------------------------------------

    def _get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item as stored now, read from moto's backend directly (a request through the
        SDK would cost more than the write it measures)."""
        from moto.dynamodb.models import dynamodb_backends

        try:
            item = dynamodb_backends[self.account][self.region].get_item(table, dict(key))
        except Exception:  # no such table or key: nothing stored
            return None
        if item is None:
            return None
        attributes: dict[str, Any] = item.to_json()["Attributes"]
        return attributes

    def _key(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        definition = self.tables[table]
        names = [n for n in (definition.partition_key, definition.sort_key) if n]
        return {n: item[n] for n in names if n in item}

    def _writes(self, name: str, document: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(table, key) of every item a write request touches."""
        if name == "PutItem":
            table = document["TableName"]
            return [(table, self._key(table, document["Item"]))]
        if name in ("UpdateItem", "DeleteItem"):
            return [(document["TableName"], dict(document["Key"]))]
        if name == "BatchWriteItem":
            return [
                (
                    table,
                    self._key(
                        table, r.get("PutRequest", {}).get("Item") or r["DeleteRequest"]["Key"]
                    ),
                )
                for table, requests in document.get("RequestItems", {}).items()
                for r in requests
            ]
        if name == "ExecuteStatement" and _is_write(name, document):
            from chronoq.local.partiql import StatementError, parse_insert

            try:
                table, item = parse_insert(document["Statement"], document.get("Parameters"))
            except StatementError:
                return []  # (refused: nothing written)
            return [(table, self._key(table, item))] if table in self.tables else []
        if name == "TransactWriteItems":
            found = []
            for entry in document.get("TransactItems", []):
                for kind, step in entry.items():
                    if kind == "Put":
                        found.append(
                            (step["TableName"], self._key(step["TableName"], step["Item"]))
                        )
                    elif kind in ("Update", "Delete"):
                        found.append((step["TableName"], dict(step["Key"])))
            return found
        return []

    def _items_written(
        self, name: str, document: Mapping[str, Any]
    ) -> dict[tuple[str, str], dict[str, Any] | None]:
        return {
            (table, json.dumps(key, sort_keys=True)): self._get(table, key)
            for table, key in self._writes(name, document)
            if table in self.tables
        }

    def _dynamodb_units(
        self,
        name: str,
        document: Mapping[str, Any],
        before: Mapping[tuple[str, str], dict[str, Any] | None],
        response: Any,
    ) -> None:
        if _is_write(name, document):
            units = 0
            for (table, key), old in before.items():
                new = self._get(table, json.loads(key))
                units += _factor(name) * write_units(max(item_size(old), item_size(new)))
                spec = self.tables[table]
                for index in spec.indexes:
                    units += index_write_units(old, new, index, spec)
            self.usage.units(write=units)
            return
        self._read_units(name, document, _json(_content(response)))

    # Step Functions ---------------------------------------------------------------------------

    def _kind(self, state_machine_arn: str) -> str:
        if state_machine_arn not in self._state_machine_types:
            import boto3

            with uncounted():
                described = boto3.client(
                    "stepfunctions", region_name=self.region
                ).describe_state_machine(stateMachineArn=state_machine_arn)
            self._state_machine_types[state_machine_arn] = str(
                described.get("type", "STANDARD")
            ).lower()
        return self._state_machine_types[state_machine_arn]

    def settle_executions(self) -> None:
        """Note transitions and duration of every counted execution that has ended."""
        import boto3

        client = boto3.client("stepfunctions", region_name=self.region)
        with self.usage._lock:
            pending = [a for a in self.usage.executions if a not in self.usage.ended_executions]
        with uncounted():
            for arn in pending:
                described = client.describe_execution(executionArn=arn)
                if described["status"] == "RUNNING" or "stopDate" not in described:
                    continue
                events = client.get_execution_history(executionArn=arn, maxResults=1000)
                transitions = sum(1 for e in events["events"] if e["type"].endswith("StateEntered"))
                duration = described["stopDate"] - described["startDate"]
                self.usage.ended(arn, transitions, duration.total_seconds() * 1000)


#: The final statuses of a run.
_FINAL = frozenset(status.value for status in TERMINAL_STATUSES)


def _factor(operation: str) -> int:
    """Write units per item KB an operation's writes cost."""
    return _TRANSACT_FACTOR if operation == "TransactWriteItems" else 1


def _final(item: Mapping[str, Any] | None) -> bool:
    status = (item or {}).get("status")
    return isinstance(status, Mapping) and status.get("S") in _FINAL


def _object_key(url: str) -> str:
    """The key an S3 request's address names (path style or virtual host)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    path = unquote(parts.path).lstrip("/")
    return path.split("/", 1)[-1] if (parts.hostname or "").startswith("s3.") else path


def _body(body: Any) -> bytes:
    """A request's body if it is text or bytes (a stream, say an S3 upload, is left unread)."""
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    return b""


def _content(response: Any) -> bytes:
    """The body of what moto's request handling returns: (status, headers, body)."""
    content = response[2] if isinstance(response, tuple) and len(response) == 3 else b""
    return content if isinstance(content, bytes) else str(content).encode()


def _json(data: bytes) -> dict[str, Any]:
    try:
        loaded = json.loads(data or b"{}")
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}
