"""The two implementations of every port the contract suite holds to the same tests: the
in-memory fakes, and the AWS adapters on moto. Each backend also plays the part of what is
not an adapter (the run state machine's writes) and shows what an adapter did, the way its
service shows it (a queue's receivable messages, the executions of a state machine)."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from chronoq import compose
from chronoq import resources as r
from chronoq.aws import clients, codecs
from chronoq.aws.artifacts import S3Artifacts
from chronoq.aws.audit import DynamoAuditTrail
from chronoq.aws.executor import StepFunctionsExecutor
from chronoq.aws.queues import SqsQueues
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobSpec, JobState
from chronoq.domain.runs import Priority, Run, RunMessage, RunStatus, Trigger
from chronoq.domain.time import format_instant
from chronoq.execution import batches
from chronoq.fakes import FakeArchive, FakeArtifacts, FakeExecutor, FakeQueues, FakeStore
from chronoq.fakes.audit import FakeAuditTrail
from chronoq.fakes.secrets import FakeSecretValues
from chronoq.local.emulation.service_calls import presigned_get
from chronoq.usecases.ports import (
    Archive,
    Artifacts,
    AuditTrail,
    Executor,
    Queues,
    SecretValues,
    Store,
)

from tests.builders import OWNER, job_spec

if TYPE_CHECKING:
    from chronoq.local.aws import LocalAWS
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

#: The instant the tests take as now: a whole second, as chronoq keeps fire times.
NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
#: Shards of the deployment on moto (and of the tests' schedule).
SHARDS = 4

#: The backends every contract test runs on.
BACKENDS = ["fake", "moto"]

#: What the run state machine writes to a run item (``status``, ``started_at``, ``output``,
#: ``output_location``, ...).
Written = str | datetime | int


# --- Builders -------------------------------------------------------------------------------


def a_job(owner: str = OWNER, **changes: Any) -> Job:
    """A new ACTIVE job (version 1, generation 1), due a minute from NOW; ``changes`` are any
    fields of a Job (spec fields included)."""
    spec_fields = {k: changes.pop(k) for k in list(changes) if k in JobSpec.model_fields}
    return Job.model_validate(
        {
            **job_spec(**spec_fields).model_dump(),
            "id": ids.new_job_id(),
            "owner": owner,
            "state": JobState.ACTIVE,
            "next_run_at": NOW + timedelta(minutes=1),
            "version": 1,
            "created_at": NOW,
            "updated_at": NOW,
            **changes,
        }
    )


def a_job_on_shard(shard: int, **changes: Any) -> Job:
    """A new job whose occurrences fall on ``shard`` (of SHARDS)."""
    while True:
        job = a_job(**changes)
        if ids.shard_of(job.id, SHARDS) == shard:
            return job


def a_run(
    job: Job,
    at: datetime | None = None,
    status: RunStatus = RunStatus.SCHEDULED,
    trigger: Trigger = Trigger.SCHEDULE,
) -> Run:
    """A run of ``job`` due ``at`` (default: the job's next run)."""
    due = at or job.next_run_at or NOW
    run_id = (
        ids.run_id(job.id, due) if trigger is Trigger.SCHEDULE else ids.manual_run_id(job.id, due)
    )
    return Run(
        id=run_id,
        job_id=job.id,
        owner=job.owner,
        status=status,
        priority=job.priority,
        trigger=trigger,
        scheduled_at=due,
        generation=job.generation,
    )


def a_message(job: Job, at: datetime) -> RunMessage:
    """The message asking a worker to start the run of ``job`` due ``at``."""
    return RunMessage(job_id=job.id, run_id=ids.run_id(job.id, at), scheduled_at=at, queued_at=NOW)


# --- Backends -------------------------------------------------------------------------------


class Backend(ABC):
    """The adapters of one backend, and what the tests need besides them."""

    name: str
    store: Store
    queues: Queues
    executor: Executor
    artifacts: Artifacts
    #: Owners' secrets' values (on AWS: SSM Parameter Store, under the deployment's path).
    secret_values: SecretValues
    #: The deployment's bucket for outputs and logs too large for the run record.
    output_bucket: str
    #: Jobs' audit trails (on AWS: the audit table).
    audit: AuditTrail
    #: The archive's bucket (on AWS: S3, as the archiver and the api function compose it).
    archive: Archive

    @abstractmethod
    def fetch(self, link: str) -> bytes:
        """What following a link of the archive downloads (an error if it downloads
        nothing)."""

    @abstractmethod
    def state_machine_writes(self, job_id: str, run_id: str, **attributes: Written) -> None:
        """Write to a run what the run state machine writes (MarkRunning: ``status`` and
        ``started_at``; MarkSucceeded: ``output`` and ``output_location``, ...)."""

    @abstractmethod
    def receivable(self, priority: Priority) -> list[RunMessage]:
        """Every message on ``priority``'s queue a worker could receive right now (those
        still delayed left out)."""

    @abstractmethod
    def executions(self, run_id: str) -> list[dict[str, Any]]:
        """The input (the JSON document) of every execution named ``run_id``."""

    @abstractmethod
    def express_executions(self, run_ids: set[str]) -> int:
        """How many EXPRESS executions carry any of ``run_ids``."""

    @abstractmethod
    def is_stopped(self, run_id: str) -> bool:
        """Was the execution named ``run_id`` stopped (ABORTED)? On moto, once it is no
        longer RUNNING: moto stops executions asynchronously."""

    @abstractmethod
    def under_way(self, run_id: str) -> None:
        """Return once the execution named ``run_id``, just started, is under way (see
        MotoBackend)."""


class FakeBackend(Backend):
    name = "fake"

    def __init__(self) -> None:
        self.fake_store = FakeStore()
        self.fake_queues = FakeQueues()
        self.fake_executor = FakeExecutor()
        self.fake_artifacts = FakeArtifacts(self.fake_store)
        self.store = self.fake_store
        self.queues = self.fake_queues
        self.executor = self.fake_executor
        self.artifacts = self.fake_artifacts
        self.secret_values = FakeSecretValues()
        self.output_bucket = self.fake_artifacts.bucket
        self.audit = FakeAuditTrail()
        self.fake_archive = FakeArchive()
        self.archive = self.fake_archive

    def fetch(self, link: str) -> bytes:
        return self.fake_archive.download(link)

    def state_machine_writes(self, job_id: str, run_id: str, **attributes: Written) -> None:
        self.fake_store.update_run(job_id, run_id, **attributes)

    def receivable(self, priority: Priority) -> list[RunMessage]:
        return [
            s.message
            for s in self.fake_queues.sent
            if s.priority is priority and s.delay_seconds == 0
        ]

    def express_executions(self, run_ids: set[str]) -> int:
        return sum(1 for batch in self.fake_executor.express_batches if run_ids & set(batch))

    def executions(self, run_id: str) -> list[dict[str, Any]]:
        started = self.fake_executor.started.get(run_id)
        count = self.fake_executor.express.get(run_id, 1)
        return [] if started is None else [started.document()] * count

    def is_stopped(self, run_id: str) -> bool:
        return run_id in self.fake_executor.stopped

    def under_way(self, run_id: str) -> None:
        """A fake execution is under way as soon as it is started."""


class MotoBackend(Backend):
    """The AWS adapters over the resources LocalAWS created in moto; observed through the
    services' own APIs only."""

    name = "moto"

    def __init__(self, aws: LocalAWS) -> None:
        self.aws = aws
        env = aws.env
        self._tables = (env[r.ENV_JOBS_TABLE], env[r.ENV_RUNS_TABLE], env[r.ENV_SCHEDULE_TABLE])
        self.store = DynamoStore(clients.dynamodb(), *self._tables)
        self.queues = SqsQueues(clients.sqs(), aws.queue_urls)
        self.executor = StepFunctionsExecutor(
            clients.stepfunctions(), aws.state_machine_arn, aws.express_state_machine_arn
        )
        self.output_bucket = env[r.ENV_OUTPUT_BUCKET]
        self.artifacts = S3Artifacts(
            clients.dynamodb(), clients.client("s3"), env[r.ENV_RUNS_TABLE], self.output_bucket
        )
        # (as the functions compose it)
        self.secret_values = compose.secret_values(env[r.ENV_SECRETS_PATH])
        self._audit_table = env[r.ENV_AUDIT_TABLE]
        self.audit = DynamoAuditTrail(clients.dynamodb(), self._audit_table)
        self.archive = compose.archive(env[r.ENV_ARCHIVE_BUCKET])
        self._db: DynamoDBClient = aws.client("dynamodb")
        self._sqs: SQSClient = aws.client("sqs")
        self._sfn: SFNClient = aws.client("stepfunctions")

    def fetch(self, link: str) -> bytes:
        """A presigned GET, as S3 answers it: moto's S3 (its address is AWS's), or the engine's
        own bucket (its links are chronoq local's gateway's: the engine answers them)."""
        if self.aws.services is not None:
            return self.aws.services.objects.download(link)[0]
        status, body = presigned_get(link)
        assert status == 200, (status, body)
        return body

    def state_machine_writes(self, job_id: str, run_id: str, **attributes: Written) -> None:
        """UpdateItem SET, as the ASL's DynamoDB tasks write (instants as ISO text)."""
        values = {
            name: (
                format_instant(value)
                if isinstance(value, datetime)
                else value.value
                if isinstance(value, Enum)
                else value
            )
            for name, value in attributes.items()
        }
        names = {f"#a{i}": name for i, name in enumerate(values)}
        self._db.update_item(
            TableName=self._tables[1],
            Key=codecs.run_key(job_id, run_id),
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(values))),
            ConditionExpression="attribute_exists(run_id)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=codecs.dump(
                {f":v{i}": value for i, value in enumerate(values.values())}
            ),
        )

    def receivable(self, priority: Priority) -> list[RunMessage]:
        """ReceiveMessage until the queue answers with nothing (messages received stay
        in flight: not received twice)."""
        url = self.aws.queue_urls[priority.value]
        messages: list[RunMessage] = []
        while True:
            answer = self._sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["MessageGroupId"],
            )
            received = answer.get("Messages", [])
            if not received:
                return messages
            messages.extend(
                RunMessage.model_validate_json(m["Body"]).model_copy(
                    update={"owner": m.get("Attributes", {}).get("MessageGroupId", "")}
                )
                for m in received
            )

    def express_executions(self, run_ids: set[str]) -> int:
        pages = self._sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.aws.express_state_machine_arn
        )
        count = 0
        for page in pages:
            for e in page["executions"]:
                described = self._sfn.describe_execution(executionArn=e["executionArn"])
                carried = {d["run_id"] for d in json.loads(described["input"])[batches.RUNS]}
                count += bool(carried & run_ids)
        return count

    def executions(self, run_id: str) -> list[dict[str, Any]]:
        """The inputs of the run's executions, on either state machine."""
        found = []
        for arn in (self.aws.state_machine_arn, self.aws.express_state_machine_arn):
            for page in self._sfn.get_paginator("list_executions").paginate(stateMachineArn=arn):
                for e in page["executions"]:
                    document = json.loads(
                        self._sfn.describe_execution(executionArn=e["executionArn"])["input"]
                    )
                    # (an EXPRESS execution carries a batch of runs)
                    for run in document.get(batches.RUNS, [document]):
                        if run["run_id"] == run_id:
                            found.append(run)
        return found

    def _arn(self, run_id: str) -> str:
        return StepFunctionsExecutor(self._sfn, self.aws.state_machine_arn).execution_arn(run_id)

    def is_stopped(self, run_id: str) -> bool:
        return self._ended(self._arn(run_id)) == "ABORTED"

    def under_way(self, run_id: str) -> None:
        """moto runs an execution in a thread of its own, and stops it as that thread gets to
        it: StopExecution fails (an internal error) until the thread has begun, and stopping
        a task in flight ends the execution FAILED, not ABORTED (Step Functions aborts it at
        once). So wait for the execution to wait before its retry (see test_executor)."""
        arn = self._arn(run_id)
        deadline = time.monotonic() + 10
        while not any(
            e["type"] == "WaitStateEntered"
            for e in self._sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        ):
            assert time.monotonic() < deadline, f"execution {arn} never waited to retry"
            time.sleep(0.005)

    def _stop(self, arn: str) -> str:
        """Stop an execution, once moto can (see under_way); its final status."""
        deadline = time.monotonic() + 10
        while not self._sfn.get_execution_history(executionArn=arn, maxResults=1)["events"]:
            assert time.monotonic() < deadline, f"execution {arn} never began"
            time.sleep(0.005)
        self._sfn.stop_execution(executionArn=arn)
        return self._ended(arn)

    def _ended(self, arn: str) -> str:
        """The final status of an execution being stopped, once moto has stopped it."""
        deadline = time.monotonic() + 10
        while (status := self._sfn.describe_execution(executionArn=arn)["status"]) == "RUNNING":
            assert time.monotonic() < deadline, f"execution {arn} never stopped"
            time.sleep(0.005)
        return status

    def reset(self) -> None:
        """Leave the deployment as a fresh one for the next test: no execution running, no
        message queued, no item in the tables (executions and S3 objects of earlier tests are
        kept: every test names its own)."""
        pages = self._sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.aws.state_machine_arn, statusFilter="RUNNING"
        )
        for page in pages:
            for execution in page["executions"]:
                self._stop(execution["executionArn"])
        for url in self.aws.queue_urls.values():
            self._sqs.purge_queue(QueueUrl=url)
        for table in (*self._tables, self._audit_table):
            keys = [
                k["AttributeName"]
                for k in self._db.describe_table(TableName=table)["Table"]["KeySchema"]
            ]
            for scanned in self._db.get_paginator("scan").paginate(TableName=table):
                for item in scanned["Items"]:
                    self._db.delete_item(TableName=table, Key={k: item[k] for k in keys})
