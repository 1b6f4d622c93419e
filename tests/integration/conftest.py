"""The integration tests' deployment: chronoq's resources in moto, made by chronoq local's
LocalAWS, and the Harness the tests drive it through (see Harness, SharedDeployment).

Why this module is long: it is the one harness every integration test drives a deployment
through (the handlers invoked as Step Functions and the drivers invoke them, the streams read as
their event source mappings read them, executions and their histories read back), with the
fixtures that make it per test or share it per module, and the integration modules import
Harness from here.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq import compose
from chronoq import resources as r
from chronoq.aws import clients, fanout
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain.runs import Run, RunMessage, RunStatus
from chronoq.execution import batches
from chronoq.local.aws import PREFIX, LocalAWS, function_name
from chronoq.local.clock import LocalClock, Waits
from chronoq.local.drivers import StreamPoller
from chronoq.local.emulation.stepfunctions import container_checks_every
from chronoq.local.usage import stream_caller
from chronoq.settings import ApiSettings, WorkerSettings
from chronoq.usecases.ports import Clock

from tests.builders import Wiring, unique_name, worker_event
from tests.support import Sink, api_event, http_sink, wait_for


class Harness:
    """moto with chronoq's resources, and the handlers invoked through the local Lambda
    runtime exactly as Step Functions and the drivers invoke them."""

    def __init__(self, aws: LocalAWS) -> None:
        self.aws = aws
        #: Every run id whose stream record reached the notifier through ``notify``.
        self.heard: list[str] = []
        # The runs table's stream, from now on, as the notifier's event source mapping reads it.
        self.stream = StreamPoller(
            aws.client("dynamodbstreams"),
            aws.runs_stream_arn,
            self._to_notifier,
            threading.Event(),
            aws.notifier_filter,  # as chronoq local and the CDK stack filter the stream
            r.NOTIFIER_BATCH_SIZE,
            r.NOTIFIER_MAX_RETRIES,
        )
        # and as the archiver's reads it (its second reader: chronoq.aws.fanout)
        self.archive_stream = StreamPoller(
            aws.streams_of(fanout.ARCHIVER),
            aws.runs_stream_arn,
            lambda event: self.invoke(r.ARCHIVER_FUNCTION, event),
            threading.Event(),
            aws.stream_filter(fanout.ARCHIVER),
            fanout.ARCHIVER.batch_size,
            fanout.ARCHIVER.max_retries,
            caller=stream_caller(fanout.ARCHIVER.name),
        )
        # and the audit table's stream, as the archiver's mapping of it reads it (its only one)
        self.audit_stream = StreamPoller(
            aws.streams_of(fanout.AUDIT_ARCHIVER),
            aws.stream_arn(fanout.AUDIT_ARCHIVER),
            lambda event: self.invoke(r.ARCHIVER_FUNCTION, event),
            threading.Event(),
            aws.stream_filter(fanout.AUDIT_ARCHIVER),
            fanout.AUDIT_ARCHIVER.batch_size,
            fanout.AUDIT_ARCHIVER.max_retries,
            caller=stream_caller(fanout.AUDIT_ARCHIVER.function.name),
        )

        self._recording: list[tuple[str, str, Any]] = []
        self._sqs_calls = self.record("sqs", "SendMessageBatch")
        #: Each execution's input (it never changes), read once.
        self._inputs: dict[str, Any] = {}
        #: The ARNs of the executions seen ended, and the history of those read since: an
        #: ended execution's history is final (moto gives it its status after its last
        #: event), and reading it again costs as much as the first time.
        self._ended: set[str] = set()
        self._histories: dict[str, list[dict[str, Any]]] = {}

    def executions(self) -> list[dict[str, Any]]:
        """Every execution started, on either state machine, oldest first, once for each run
        it executes (from its input: a STANDARD execution executes one run, an EXPRESS one a
        batch of runs): the run, the execution's status, ARN and state machine type
        (``"STANDARD"`` or ``"EXPRESS"``), and the size of its batch."""
        sfn = self.aws.client("stepfunctions")
        found = []
        machines = {
            "STANDARD": self.aws.state_machine_arn,
            "EXPRESS": self.aws.express_state_machine_arn,
        }
        for kind, machine in machines.items():
            for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine):
                for e in page["executions"]:
                    arn = e["executionArn"]
                    if arn not in self._inputs:
                        described = sfn.describe_execution(executionArn=arn)
                        self._inputs[arn] = json.loads(described["input"])
                    if e["status"] != "RUNNING":
                        self._ended.add(arn)
                    document = self._inputs[arn]
                    runs = document[batches.RUNS] if kind == "EXPRESS" else [document]
                    found += [
                        {
                            "run_id": run["run_id"],
                            "status": e["status"],
                            "arn": e["executionArn"],
                            "started": e["startDate"],
                            "machine": kind,
                            "batch": len(runs),
                        }
                        for run in runs
                    ]
        return sorted(found, key=lambda e: e["started"])

    def _ended_executions_of(self, run_id: str) -> list[str]:
        """The ARN of each execution of the run, once every one of them has ended."""

        def ended() -> tuple[list[str]] | None:
            mine = [e for e in self.executions() if e["run_id"] == run_id]
            if any(e["status"] == "RUNNING" for e in mine):
                return None
            return (list(dict.fromkeys(e["arn"] for e in mine)),)

        arns: list[str] = wait_for(ended)[0]
        return arns

    def _entered(self, execution_arn: str, run_id: str) -> list[dict[str, Any]]:
        """The inputs of the states the run entered in an execution, in order: each with
        the state's name added (``"state"``)."""
        entered = []
        for event in self._history(execution_arn):
            details = event.get("stateEnteredEventDetails")
            if details is None:
                continue
            document = json.loads(details.get("input") or "{}")
            # (an EXPRESS execution's own state, the Map over its batch, is no run's)
            if isinstance(document, dict) and document.get("run_id") == run_id:
                entered.append({**document, "state": details["name"]})
        return entered

    def _history(self, execution_arn: str) -> list[dict[str, Any]]:
        """The execution's events so far (kept once it is seen ended)."""
        if execution_arn in self._histories:
            return self._histories[execution_arn]
        ended = execution_arn in self._ended  # (before reading: it may end meanwhile)
        sfn = self.aws.client("stepfunctions")
        events: list[dict[str, Any]] = sfn.get_execution_history(
            executionArn=execution_arn, maxResults=1000
        )["events"]
        if ended:
            self._histories[execution_arn] = events
        return events

    def states_entered(self, execution_arn: str, run_id: str) -> list[str]:
        """The states the run has entered in an execution so far, in order (its history)."""
        return [e["state"] for e in self._entered(execution_arn, run_id)]

    def times_run(self, run_id: str) -> int:
        """How many executions of the run (or, in an EXPRESS batch, of its iterations) got
        past its first state, MarkRunning, which records it RUNNING, to a first attempt: of
        two executions of one run, only one may. Waits until each has ended."""
        return sum(
            1
            for arn in self._ended_executions_of(run_id)
            for entered in self._entered(arn, run_id)
            if entered["state"] == "StartAttempt" and entered["attempt"]["number"] == 1
        )

    def end_state(self, run_id: str) -> str:
        """The state the run's (one) execution ended it in, once it has: Succeeded, Failed,
        TimedOut, NotStarted, ... (an EXPRESS execution's own status does not tell: the runs of
        its batch each end in a state of their own, and the batch succeeds)."""
        (arn,) = self._ended_executions_of(run_id)
        return self.states_entered(arn, run_id)[-1]

    def execution_status(self, run_id: str) -> str:
        """The status of the run's (one) execution once it has ended."""
        (arn,) = self._ended_executions_of(run_id)
        (status,) = {e["status"] for e in self.executions() if e["arn"] == arn}
        return str(status)

    def run_writes(self, run_id: str) -> list[tuple[str, str | None]]:
        """Every write of the run's record so far, oldest first, as the runs table's stream
        shows it: (``INSERT``, ``MODIFY`` or ``REMOVE``, the status it left)."""
        streams = self.aws.client("dynamodbstreams")
        arn = self.aws.runs_stream_arn
        writes: list[tuple[str, str | None]] = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            for record in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
                change = record["dynamodb"]
                if change.get("NewImage") == change["Keys"]:
                    # moto streams an UpdateItem that creates an item as two INSERTs, the
                    # first of its keys alone; DynamoDB streams one record per write
                    continue
                if change["Keys"]["run_id"]["S"] == run_id:
                    status = change.get("NewImage", {}).get("status", {}).get("S")
                    writes.append((record["eventName"], status))
        return writes

    def record(self, service: str, operation: str) -> list[dict[str, Any]]:
        """The parameters of every ``operation`` call chronoq's ``service`` client makes from
        now on (a botocore hook on the client every function shares in this process)."""
        calls: list[dict[str, Any]] = []
        client = clients.client(service)
        if not hasattr(client, "meta"):  # the engine's (chronoq.local.engine): its method
            method = "".join("_" + c.lower() if c.isupper() else c for c in operation)[1:]
            original = getattr(client, method)

            def kept(**params: Any) -> Any:
                calls.append(dict(params))
                return original(**params)

            setattr(client, method, kept)
            self._recording.append((service, method, None))
            return calls

        def keep(params: dict[str, Any], **_: Any) -> None:
            calls.append(dict(params))

        event = f"provide-client-params.{service}.{operation}"
        client.meta.events.register(event, keep)
        self._recording.append((service, event, keep))
        return calls

    def close(self) -> None:
        """Stop recording calls (chronoq's clients outlive this deployment)."""
        for service, event, keep in self._recording:
            client = clients.client(service)
            if keep is None:
                vars(client).pop(event, None)  # (the method's own again)
            else:
                client.meta.events.unregister(event, keep)
        self._recording.clear()

    def bodies(self, priority: str = "normal") -> list[dict[str, Any]]:
        """Every message chronoq sent to a priority's queue, in order (delayed ones too)."""
        url = self.aws.queue_urls[priority]
        return [
            json.loads(entry["MessageBody"])
            for call in self._sqs_calls
            if call["QueueUrl"] == url
            for entry in call["Entries"]
        ]

    @property
    def clock(self) -> LocalClock:
        """The deployment's clock: the functions' and the state machine's (its waits skip
        ahead, unless a test asks for waits held: see ``held_clock``)."""
        return self.aws.clock

    def now(self) -> datetime:
        return self.aws.clock.now()

    def nothing_to_catch_up(self, now: datetime | None = None) -> None:
        """As chronoq local starts a fresh system: each shard dispatched up to the minute
        before ``now`` (default: the deployment's now), so that the first tick reads the
        coming minute, not the last hour minute by minute (what a new shard does)."""
        store = self.wiring().store
        before = ids.minute_of(now or self.now()) - timedelta(minutes=1)
        for shard in range(self.aws.shards):
            store.open_minute(shard, before)
            store.close_minute(shard, before)

    def wiring(self, clock: Clock | None = None) -> Wiring:
        """Every use case over the AWS adapters of this deployment (as the api, dispatcher
        and worker functions build them), with ``clock`` (by default the deployment's)."""
        settings = self.aws.settings(ApiSettings)
        api = compose.api(settings)
        worker = compose.worker(self.aws.settings(WorkerSettings))
        return Wiring(
            store=DynamoStore(
                clients.dynamodb(),
                settings.jobs_table,
                settings.runs_table,
                settings.schedule_table,
            ),
            queues=api.jobs.index.queues,
            executor=worker.executor,
            artifacts=api.runs.artifacts,
            clock=clock or self.aws.clock.now,
            sleep=self.aws.clock.sleep,
            shards=api.jobs.index.shards,
            output_buckets=api.jobs.output_buckets,
            tasks=_AnyRegisteredTask(),
            audit=api.jobs.audit,
        )

    def notify(self) -> None:
        """Feed the notifier every stream record written so far (that passes the filter)."""
        while self.stream.poll_once():
            pass

    def archive(self) -> None:
        """Feed the archiver every stream record written so far (that passes its filter)."""
        while self.archive_stream.poll_once():
            pass

    def archive_audit(self) -> None:
        """Feed the archiver every audit stream record written so far (that passes its
        filter)."""
        while self.audit_stream.poll_once():
            pass

    def _to_notifier(self, event: dict[str, Any]) -> Any:
        self.heard.extend(rec["dynamodb"]["NewImage"]["run_id"]["S"] for rec in event["Records"])
        return self.invoke(r.NOTIFIER_FUNCTION, event)

    def invoke(self, function: r.Function, event: Any) -> Any:
        assert self.aws.runtime is not None
        return self.aws.runtime.invoke(function_name(function), event)

    def api(self, event: dict[str, Any]) -> tuple[int, Any]:
        answer = self.invoke(r.API_FUNCTION, event)
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None

    def create_job(self, target: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """POST a one-time job for tomorrow (no retries unless ``extra`` says); ``run`` runs
        it now."""
        at = (self.now() + timedelta(days=1)).replace(microsecond=0)
        body = {
            "name": unique_name(),
            "schedule": {"type": "at", "at": at.isoformat()},
            "target": target,
            "retry": {"max_attempts": 1},
            **extra,
        }
        status, job = self.api(api_event("create_at_job", body=body))
        assert status == 201, job
        return dict(job)

    def sent(self, run_id: str) -> RunMessage:
        """The message chronoq sent to a queue for the run (the last, if it sent several)."""
        found = [
            RunMessage.model_validate(body)
            for priority in self.aws.queue_urls
            for body in self.bodies(priority)
            if body["run_id"] == run_id
        ]
        assert found, f"no message was sent for run {run_id}"
        return found[-1]

    def deliver(self, run_id: str) -> None:
        """Hand the run's message (as chronoq sent it) to the worker, as the queue poller
        would."""
        self.invoke(r.WORKER_FUNCTION, worker_event(self.sent(run_id)))

    def run(self, job: dict[str, Any], timeout: float = 20) -> Run:
        """Trigger a run of the job, deliver it to the worker and wait for it to end."""
        service = self.wiring().runs
        status, triggered = self.api(
            api_event(
                "get_job", user=job["owner"], path=f"/jobs/{job['id']}/trigger", method="POST"
            )
        )
        assert status == 202, triggered
        run_id = triggered["id"]
        self.deliver(run_id)

        def ended() -> Run | None:
            found = service.get_run(job["owner"], run_id)
            active = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SCHEDULED)
            return None if found.status in active else found

        result: Run = wait_for(ended, timeout=timeout)
        return result

    def receive(self, priority: str = "normal") -> list[dict[str, Any]]:
        """Every message on a queue, delayed ones included (waits out their delay)."""
        sqs = self.aws.client("sqs")
        url = self.aws.queue_urls[priority]
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return list(answer.get("Messages", []))


class _AnyRegisteredTask(set[str]):
    """The task check the api uses: registered in chronoq.tasks."""

    def __contains__(self, name: object) -> bool:
        from chronoq import tasks

        return isinstance(name, str) and tasks.lookup(name) is not None


@pytest.fixture
def topic_statuses() -> str:
    """The final statuses the deployment's topic hears of (a test module may widen them by
    overriding this fixture)."""
    return ",".join(r.DEFAULT_TOPIC_STATUSES)


@pytest.fixture
def waits() -> Waits:
    """How the deployment's clock waits: it skips ahead (timing is not what most tests here
    are about); a test module that acts while a run waits overrides this with HELD."""
    return Waits.SKIP


@pytest.fixture
def shards() -> int:
    """The deployment's shards (a test may ask for others by parametrizing ``shards``)."""
    return 4


@pytest.fixture
def container_polls() -> Iterator[None]:
    """moto's Step Functions looks whether a container task (ECS RunTask .sync) has
    stopped every half second of the wall clock, so that each container run ends on average
    a quarter of a second after its task: here it looks every twentieth of a second (how
    often it looks is what no test here is about)."""
    with container_checks_every(0.05):
        yield


@pytest.fixture
def harness(
    topic_statuses: str, waits: Waits, shards: int, container_polls: None
) -> Iterator[Harness]:
    saved = dict(os.environ)
    # the tests' container commands are their own: they run as host processes
    aws = LocalAWS(
        shards=shards,
        topic_statuses=topic_statuses,
        allow_host_commands=True,
        clock=LocalClock(waits),
    ).start()
    harness = Harness(aws)
    try:
        yield harness
    finally:
        harness.close()
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


class SharedDeployment:
    """One deployment for the tests of a module that only call the api, none of which starts
    an execution or waits on the deployment's clock: made anew for each test as far as such
    a test can tell (``as_new``). A deployment costs about thirty AWS calls to create; making
    it anew, about ten."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        try:
            self.aws = LocalAWS(
                shards=4, allow_host_commands=True, clock=LocalClock(Waits.SKIP)
            ).start()
        except BaseException:
            os.environ.clear()
            os.environ.update(self.environ)
            raise
        #: The process's variables and the deployment's, as its start left them.
        self.started_environ = dict(os.environ)
        self.created = dict(self.aws.env)

    def assert_no_execution(self) -> None:
        """(what ``as_new`` cannot undo: a test that started one fails)"""
        sfn = self.aws.client("stepfunctions")
        for machine in (self.aws.state_machine_arn, self.aws.express_state_machine_arn):
            started = sfn.list_executions(stateMachineArn=machine, maxResults=1)["executions"]
            assert not started, (
                "an execution was started in a shared deployment (not made new again)"
            )

    def as_new(self) -> None:
        """Its tables without items and its queues without messages, its variables as
        created, every function cold, the process's variables as the start left them."""
        aws = self.aws
        ddb = aws.client("dynamodb")
        for table in r.TABLES:
            keys = [k for k in (table.partition_key, table.sort_key) if k]
            names = {f"#k{i}": key for i, key in enumerate(keys)}
            pages = ddb.get_paginator("scan").paginate(
                TableName=aws.env[table.env],
                ProjectionExpression=", ".join(names),
                ExpressionAttributeNames=names,
            )
            items = [item for page in pages for item in page["Items"]]
            for start in range(0, len(items), 25):
                ddb.batch_write_item(
                    RequestItems={
                        aws.env[table.env]: [
                            {"DeleteRequest": {"Key": item}} for item in items[start : start + 25]
                        ]
                    }
                )
        sqs = aws.client("sqs")
        # (moto refuses a queue's second purge within a minute unless told; SQS would too,
        # where a new deployment's queues would be new)
        os.environ["MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR"] = "false"
        for url in sqs.list_queues(QueueNamePrefix=PREFIX).get("QueueUrls", []):
            sqs.purge_queue(QueueUrl=url)
        if aws.env != self.created:
            aws.env.clear()
            aws.env.update(self.created)
        name, value = next(iter(self.created.items()))
        aws.configure(name, value)  # (each function its variables again; every one cold)
        aws.reset_usage()
        os.environ.clear()
        os.environ.update(self.started_environ)

    def stop(self) -> None:
        self.aws.stop()
        os.environ.clear()
        os.environ.update(self.environ)


@pytest.fixture(scope="module")
def shared_deployment() -> Iterator[SharedDeployment]:
    """A module's one deployment: see SharedDeployment (a module opts in by overriding
    ``harness`` with ``shared_harness``)."""
    shared = SharedDeployment()
    try:
        yield shared
    finally:
        shared.stop()


def shared_harness(shared: SharedDeployment) -> Iterator[Harness]:
    """The body of a ``harness`` fixture over a module's shared deployment."""
    shared.as_new()
    harness = Harness(shared.aws)
    try:
        yield harness
    finally:
        harness.close()
    shared.assert_no_execution()


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s
