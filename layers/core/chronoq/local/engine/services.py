"""chronoq local's engine put together: the tables, the queues, the run state machine and the
runs stream that chronoq's own functions call, as clients of the services AWS would answer
(``clients()``), kept in one data directory.

- Tables: SQLite (``tables.db``), every DynamoDB call chronoq makes (chronoq.local.engine.tables).
- Queues: SQLite (``queues.db``), the SQS semantics chronoq relies on (engine.queues).
- The run state machine: the ASL file, executed by chronoq's interpreter (engine.interpreter,
  engine.stepfunctions); its tasks call the tables, chronoq's functions in process, and the
  embedded AWS for what a user's target reaches (a queue, a topic, a bus, a container).
- The runs and audit streams, from the tables' own change records (engine.streams).
- The executions under way (``executions.db``): what a restart must give back.
- chronoq's own S3 buckets (``objects.db``): outputs and logs too large for a run record,
  and the archive (engine.objects).
- SSM Parameter Store (``parameters.db``, its user's only): the values of owners' secrets
  (engine.parameters).

Every call is metered as the AWS request it stands for (chronoq.local.usage.Meter.observe),
with the IAM call it makes (chronoq.local.calls): ``chronoq cost`` and the least-privilege
check read the same figures whichever engine ran the workload."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.aws.queues import message_group
from chronoq.local import durations
from chronoq.local.clock import LocalClock
from chronoq.local.drivers import messages_sent
from chronoq.local.emulation.ecs import LOCAL_SUBNET, default_network
from chronoq.local.engine.functions import LocalFunctions
from chronoq.local.engine.inflight import InFlight
from chronoq.local.engine.interpreter import TaskContext, TaskHandler
from chronoq.local.engine.objects import LocalObjects
from chronoq.local.engine.parameters import LocalParameters
from chronoq.local.engine.queues import SqliteQueues
from chronoq.local.engine.stepfunctions import ExecutionSummary, LocalStepFunctions
from chronoq.local.engine.streams import LocalStreams
from chronoq.local.engine.tables import SqliteTables
from chronoq.local.engine.tasks import aws_task_handlers
from chronoq.local.foreground import Foreground
from chronoq.local.lambdas import LambdaRuntime
from chronoq.local.usage import STATE_MACHINE, Meter, calling_as

logger = logging.getLogger(__name__)

TABLES_FILE = "tables.db"
QUEUES_FILE = "queues.db"
EXECUTIONS_FILE = "executions.db"
OBJECTS_FILE = "objects.db"
PARAMETERS_FILE = "parameters.db"
FILES = (TABLES_FILE, QUEUES_FILE, EXECUTIONS_FILE, OBJECTS_FILE, PARAMETERS_FILE)


def _as_the_state_machine(handler: TaskHandler) -> TaskHandler:
    """A task handler whose calls are the state machine's (metered and recorded as its)."""

    def task(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        with calling_as(STATE_MACHINE):
            return handler(resource, parameters, context)

    return task


class _Containers:
    """The embedded ECS as the run state machine's container tasks call it: the placeholder
    network the ASL's values name locally (LOCAL_SUBNET) becomes the embedded AWS's default
    VPC, looked up at the first task, as on the moto engine (emulation)."""

    def __init__(self, embedded: Callable[[str], Any]) -> None:
        self._embedded = embedded
        self._network: dict[str, list[str]] | None = None

    def run_task(self, **request: Any) -> Any:
        network = request.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
        if network.get("subnets") == [LOCAL_SUBNET]:
            if self._network is None:
                self._network = default_network(self._embedded("ec2"))
            network.update(self._network)
        return self._embedded("ecs").run_task(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedded("ecs"), name)


class Engine:
    """The engine's services, in ``directory`` (None: in memory, gone at stop)."""

    def __init__(
        self,
        directory: Path | None,
        clock: LocalClock,
        runtime: LambdaRuntime,
        embedded: Callable[[str], Any],
        table_names: Mapping[str, str],
        region: str,
        account: str,
        histories: bool = True,
        buckets: Iterable[str] = (),
        retention: Mapping[str, int | None] | None = None,
    ) -> None:
        """``histories`` False: executions keep no history of their states (what
        get_execution_history answers), a little less work per state. ``buckets``: the S3
        buckets kept on disk here (chronoq's own: engine.objects), each keeping its objects
        as long as ``retention`` says (see LocalObjects)."""
        self.directory = directory
        #: Did the directory hold an engine's data already (a restart)?
        self.restored = directory is not None and (directory / TABLES_FILE).exists()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.meter: Meter | None = None
        #: What background calls make way for (chronoq.local.foreground), if anything.
        self.foreground: Foreground | None = None
        self.table_names = dict(table_names)
        self.tables = SqliteTables(
            self._path(TABLES_FILE),
            r.TABLES,
            names=self.table_names,
            clock=clock.now,
            observer=self._observe,
        )
        self.queues = SqliteQueues(
            self._path(QUEUES_FILE),
            clock.now,
            region,
            account,
            observer=self._observe_queue,
            first_groups=frozenset({message_group(r.SYSTEM_OWNER)}),
        )
        self.inflight = InFlight(self._path(EXECUTIONS_FILE))
        self.objects = LocalObjects(
            self._path(OBJECTS_FILE),
            buckets,
            lambda: embedded("s3"),
            clock.now,
            self._observe,
            retention=retention,
        )
        self.parameters = LocalParameters(
            self._path(PARAMETERS_FILE), region, account, clock.now, self._observe
        )
        self.functions = LocalFunctions(runtime, lambda: embedded("lambda"), observer=self._observe)
        own: dict[str, Any] = {
            "dynamodb": self.tables,
            "lambda": self.functions,
            "ecs": _Containers(embedded),
        }
        handlers = aws_task_handlers(lambda service: own.get(service) or embedded(service))
        self.stepfunctions = LocalStepFunctions(
            clock,
            {prefix: _as_the_state_machine(h) for prefix, h in handlers.items()},
            region,
            account,
            observer=self._observe_executions,
            on_end=self._ended,
            histories=histories,
            task_cost=durations.task_cost,
            state_ms=durations.MODEL.state_ms,
        )
        #: Each streamed table's stream (the runs table's, the audit table's), by its id.
        self.table_streams = {
            table.id: LocalStreams(
                self.tables,
                table.id,
                f"arn:aws:dynamodb:{region}:{account}:table/"
                f"{self.table_names[table.id]}/stream/local",
                observer=self._observe,
            )
            for table in r.TABLES
            if table.stream
        }
        self.streams = self.table_streams[r.RUNS_TABLE.id]
        self.runs_stream_arn = self.streams.stream_arn
        clock.listen(self.queues.wake)

    def _path(self, name: str) -> Path | None:
        return None if self.directory is None else self.directory / name

    def clients(self) -> dict[str, Any]:
        """The clients chronoq's functions use, by service."""
        return {
            "dynamodb": self.tables,
            "sqs": self.queues,
            "stepfunctions": self.stepfunctions,
            "dynamodbstreams": self.streams,
            "s3": self.objects,
            "ssm": self.parameters,
        }

    # --- metering -----------------------------------------------------------------------------

    def _observe(self, operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self.meter is not None:
            self.meter.observe(operation, request, response, stored=self.tables.stored)
        if self.foreground is not None:
            self.foreground.make_way()

    def _observe_queue(
        self, operation: str, request: dict[str, Any], response: dict[str, Any]
    ) -> None:
        self._observe(operation, request, response)
        if operation == "sqs:SendMessageBatch":
            messages_sent([float(e.get("DelaySeconds", 0)) for e in request.get("Entries", [])])
        elif operation == "sqs:SendMessage":
            messages_sent([float(request.get("DelaySeconds", 0))])

    def _observe_executions(
        self, operation: str, request: dict[str, Any], response: dict[str, Any]
    ) -> None:
        self._observe(operation, request, response)
        if operation == "stepfunctions:StartExecution" and "executionArn" in response:
            self.inflight.started(response["executionArn"], request.get("input", "{}"))

    def _ended(self, summary: ExecutionSummary) -> None:
        self.inflight.ended(summary.execution_arn)
        if self.meter is not None:
            # (STANDARD is billed by transitions; EXPRESS by its modeled duration)
            kind = summary.type.lower()
            self.meter.usage.settle(kind, summary.transitions, summary.billed_ms)

    # --- upkeep -------------------------------------------------------------------------------

    def sweep(self) -> int:
        """Expired items deleted, a few at a time (the engine's upkeep calls this often)."""
        return self.tables.sweep_expired() + self.objects.sweep_expired()

    def load_items(self, items: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Put items kept elsewhere (table id, typed item) into the tables; how many."""
        count = 0
        for table_id, item in items:
            self.tables.put_item(TableName=self.table_names[table_id], Item=item)
            count += 1
        return count

    def close(self) -> None:
        self.stepfunctions.close()
        self.queues.close()
        self.inflight.close()
        self.objects.close()
        self.parameters.close()
        self.tables.close()
