"""The embedded AWS: moto, with every chronoq resource created from chronoq.resources.

Why this module is long: it creates every chronoq resource in the embedded AWS from
chronoq.resources (tables, queues, functions, state machines, buckets, topic, secrets,
containers) and wires their event sources, all on one LocalAWS's state.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import secrets
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

from chronoq import compose
from chronoq import resources as r
from chronoq.aws import clients as chronoq_aws
from chronoq.aws import fanout
from chronoq.domain import limits as lim
from chronoq.domain import notifications
from chronoq.domain.limits import Limits
from chronoq.domain.runs import TERMINAL_STATUSES, RunStatus
from chronoq.execution import machines
from chronoq.local.clock import LocalClock
from chronoq.local.drivers import stream_filter
from chronoq.local.emulation.containers import container_mode, run_containers_as_subprocesses
from chronoq.local.emulation.dynamodb import partiql_inserts_as_dynamodb
from chronoq.local.emulation.ecs import LOCAL_SECURITY_GROUP, LOCAL_SUBNET
from chronoq.local.emulation.moto_version import check_moto
from chronoq.local.emulation.service_calls import serialize_service_calls, serve_sdk_calls_only
from chronoq.local.emulation.sqs import queues_follow_the_clock
from chronoq.local.emulation.state import EmulationState, activate, deactivate
from chronoq.local.emulation.stepfunctions import (
    express_executions_as_on_aws,
    parse_each_definition_once,
    reuse_state_machine_clients,
    waits_follow_the_clock,
)
from chronoq.local.engine.services import Engine
from chronoq.local.foreground import Foreground
from chronoq.local.lambdas import LambdaRuntime, install_into_moto
from chronoq.local.persist import TableState
from chronoq.local.usage import CONTAINER_EXECUTION, Meter, Usage, calling_as, uncounted
from chronoq.settings import S, load

ENGINE_LOCAL = "local"
ENGINE_MOTO = "moto"
ENGINES = (ENGINE_LOCAL, ENGINE_MOTO)
REGION = "us-east-1"
TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)
ACCOUNT = "123456789012"
PREFIX = "chronoq-local"


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def function_name(function: r.Function) -> str:
    return f"{PREFIX}-{function.name}"


def table_name(table: r.Table) -> str:
    return f"{PREFIX}-{table.id.lower()}"


def output_bucket_name() -> str:
    return f"{PREFIX}-{r.OUTPUT_BUCKET_ID.lower()}"


def archive_bucket_name() -> str:
    return f"{PREFIX}-{r.ARCHIVE_BUCKET_ID.lower()}"


@functools.cache
def _client(service: str) -> Any:
    """A client of the embedded AWS (one per service and process: a client costs tens of
    milliseconds to build, and moto serves whichever instance is running)."""
    if service == "dynamodbstreams":
        # The SDK sends stream calls to an account-based host that moto does not serve.
        return boto3.client(
            "dynamodbstreams",
            region_name=REGION,
            endpoint_url=f"https://streams.dynamodb.{REGION}.amazonaws.com",
        )
    return boto3.client(service, region_name=REGION)  # type: ignore[call-overload]


#: The embedded AWS running in this process, if any (moto serves one at a time).
_RUNNING: list[LocalAWS | None] = [None]
#: Has boto3's default session been made afresh since moto was imported (see start)?
_SESSION_AFTER_MOTO: list[bool] = [False]
#: The configuration chronoq's own clients (chronoq.aws.clients) were last built for.
_CLIENTS_FOR: list[str | None] = [None]


def _clients_for(region: str) -> None:
    """Have chronoq's clients built afresh if the embedded AWS is not where they point."""
    if _CLIENTS_FOR[0] != region:
        chronoq_aws.reset()
        _CLIENTS_FOR[0] = region


#: Where owners' secrets live in the embedded Parameter Store (the engine's storage).
LOCAL_SECRETS_PATH = r.secrets_path("local")


@functools.cache
def _reader_filter(reader: str, topic_statuses: str) -> Callable[[dict[str, Any]], bool]:
    audience = notifications.topic_statuses(topic_statuses)
    return stream_filter(fanout.reader(reader).filters(audience))


@dataclass
class LocalAWS:
    """Starts moto in this process and creates the deployment's resources in it."""

    shards: int = r.DEFAULT_SHARDS
    #: The deployment's own task modules (comma-separated), as ``-c task_modules=`` in CDK.
    task_modules: str = ""
    #: Every variable of the deployment; each function sees only those its definition names.
    env: dict[str, str] = field(default_factory=dict)
    queue_urls: dict[str, str] = field(default_factory=dict)
    state_machine_arn: str = ""
    express_state_machine_arn: str = ""
    runs_stream_arn: str = ""
    #: Every table's stream (the runs table's, the audit table's), by the table's id.
    stream_arns: dict[str, str] = field(default_factory=dict)
    #: The address notification e-mails come from (verified in the local SES).
    email_sender: str = "chronoq@example.com"
    #: The final statuses of the runs published to the SNS topic, as ``-c topic_statuses=``
    #: in CDK (comma-separated).
    topic_statuses: str = ",".join(r.DEFAULT_TOPIC_STATUSES)
    #: The SSRF guard: off by default here (developers call services on their own machine),
    #: on in AWS; and the networks it lets through (comma-separated CIDRs).
    block_private_targets: bool = False
    allowed_target_networks: str = ""
    #: The ports chronoq local serves on (its API, its embedded AWS) and the machine's
    #: addresses they answer on besides loopback: no http target or webhook calls them.
    own_ports: tuple[int, ...] = ()
    own_addresses: tuple[str, ...] = ()
    #: Jobs one owner may have, as ``-c max_jobs_per_owner=`` in CDK.
    max_jobs_per_owner: int = lim.DEFAULT_MAX_JOBS_PER_OWNER
    #: What each owner's backfills and re-runs may hold, as ``-c max_running_backfills_per_job=``
    #: (and the others) in CDK.
    owner_limits: Limits = field(default_factory=Limits)
    #: Container targets run their commands as host processes (anyone who may create a job
    #: runs code as this user); otherwise in Docker when a daemon answers, else not at all.
    allow_host_commands: bool = False
    #: The master secret webhook signatures derive from (None or "": a new one; chronoq local
    #: keeps one in its data directory so that signatures survive a restart).
    signing_secret: str | None = None
    runtime: LambdaRuntime | None = None
    #: What time it is for the functions and the state machine (the wall clock unless a
    #: test gives its own: see chronoq.local.clock).
    clock: LocalClock = field(default_factory=LocalClock)
    #: Where the tables' items are kept across starts (None: in memory only; see
    #: chronoq.local.persist).
    state_dir: Path | None = None
    #: The kept tables, and whether a start found items kept by an earlier one.
    state: TableState | None = None
    restored: bool = False
    #: Where chronoq's own tables, queues and state machines run: ``local``, chronoq local's
    #: engine (chronoq.local.engine, what ``chronoq local`` runs on), or ``moto``, the
    #: embedded AWS itself (what proves the AWS adapters).
    engine: str = ENGINE_MOTO
    #: Where the engine keeps its files (None: in memory).
    engine_dir: Path | None = None
    #: The engine's executions keep their history (get_execution_history).
    execution_histories: bool = True
    #: The engine, once started (``engine`` local).
    services: Engine | None = None
    #: What the engine's background calls make way for: the API requests being answered
    #: (see chronoq.local.foreground; None: nothing, every call goes its own pace).
    foreground: Foreground | None = None
    #: What the workload since the last reset would cost on AWS (see chronoq.local.usage).
    usage: Usage = field(default_factory=Usage)
    #: What chronoq local's patches of moto read while this embedded AWS runs (its clock, its
    #: meter, how containers run: see chronoq.local.emulation.state).
    emulation: EmulationState = field(default_factory=EmulationState)
    _meter: Meter | None = None
    _usage_since: datetime = field(default_factory=lambda: datetime.now(UTC))
    _mock: Any = None

    def start(self) -> LocalAWS:
        from moto import mock_aws

        audience = notifications.topic_statuses(self.topic_statuses)  # refused before starting

        check_moto()
        if _RUNNING[0] is not None:
            raise RuntimeError(
                "another embedded AWS runs in this process (moto serves one): stop it first"
            )
        os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
        os.environ["AWS_DEFAULT_REGION"] = REGION
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            os.environ[key] = "local"
        os.environ.pop("AWS_PROFILE", None)
        # chronoq's metrics are EMF log lines for CloudWatch: none locally (set false to see
        # them on stdout)
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.pop("AWS_ENDPOINT_URL", None)
        serve_sdk_calls_only()
        if not _SESSION_AFTER_MOTO[0]:
            # A session made before moto was imported (by a client of this process's earlier
            # work) does not call moto's handlers: its clients would reach AWS. Once, a new one.
            boto3.DEFAULT_SESSION = None
            _client.cache_clear()
            chronoq_aws.reset()
            _SESSION_AFTER_MOTO[0] = True
        self._mock = mock_aws(
            config={
                "stepfunctions": {"execute_state_machine": True},
                # Keep boto3's default session (and the service models it has loaded) from
                # one start to the next: the credentials are the same fake ones every time.
                "core": {"reset_boto3_session": False},
            }
        )
        self._mock.start()
        _RUNNING[0] = self
        try:
            self._set_up(audience)
        except BaseException:
            self.stop()  # (nothing half-started is left to the next one)
            raise
        return self

    def _set_up(self, audience: frozenset[RunStatus]) -> None:
        _clients_for(os.environ.get("AWS_DEFAULT_REGION", REGION))
        reuse_state_machine_clients()
        express_executions_as_on_aws()
        waits_follow_the_clock()
        queues_follow_the_clock()
        partiql_inserts_as_dynamodb()
        self.emulation.clock = self.clock
        activate(self.emulation)
        compose.TIME = compose.Time(self.clock.now, self.clock.sleep)
        parse_each_definition_once()
        serialize_service_calls()
        self.emulation.containers, self.emulation.docker = container_mode(self.allow_host_commands)
        self.emulation.own_prefix = f"{PREFIX}-"  # targets never reach chronoq itself
        self.emulation.parameters = self._task_secrets  # a container's secrets, as ECS reads them
        run_containers_as_subprocesses(REGION)
        # Failures the run state machine catches on purpose are not errors of chronoq local.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
        self.runtime = LambdaRuntime(
            {function_name(f): f for f in r.FUNCTIONS}, region=REGION, account=ACCOUNT
        )
        install_into_moto(self.runtime)
        if self.engine == ENGINE_LOCAL:
            self.services = Engine(
                self.engine_dir,
                self.clock,
                self.runtime,
                _client,
                {t.id: table_name(t) for t in r.TABLES},
                REGION,
                ACCOUNT,
                histories=self.execution_histories,
                buckets=[output_bucket_name(), archive_bucket_name()],
                retention={archive_bucket_name(): r.DEFAULT_ARCHIVE_EXPIRY_DAYS * 24 * 3600},
            )
            self.services.foreground = self.foreground
            chronoq_aws.serve(self.services.clients())
        self._create(audience)
        self._give_functions_their_environment()
        if self.state_dir is not None and self.services is None:
            self._keep_tables(self.state_dir)
        self._meter = Meter(self.usage, {table_name(t): t for t in r.TABLES}, REGION, ACCOUNT)
        self.emulation.meter = self._meter
        if self.services is not None:
            self.services.meter = self._meter
        self.runtime.usage = self.usage
        self.reset_usage()  # creating the resources is not the workload's

    def _keep_tables(self, state_dir: Path) -> None:
        """Read back the items an earlier start kept in ``state_dir``, then keep every write."""
        from moto.dynamodb.models import dynamodb_backends

        self.state = TableState(
            state_dir,
            dynamodb_backends[ACCOUNT][REGION],
            {f"{PREFIX}-{t.id.lower()}": t.ttl_attribute for t in r.TABLES if t.ttl_attribute},
        )
        self.restored = self.state.restore()
        self.state.start()

    def reset_usage(self) -> None:
        self.usage.reset()
        self._usage_since = datetime.now(UTC)

    def usage_document(self) -> dict[str, Any]:
        """The usage since the last reset (``GET /_local/usage``)."""
        assert self._meter is not None
        self._meter.settle_executions()
        return self.usage.document(runs_finished=self._runs_finished())

    def _runs_finished(self) -> int:
        """Runs that ended since the last reset."""
        if self.services is not None:
            return self.usage.runs_finished
        table = self.env[r.RUNS_TABLE.env]
        finished = 0
        with uncounted():
            pages = self.client("dynamodb").get_paginator("scan").paginate(TableName=table)
            for page in pages:
                for item in page["Items"]:
                    status = item.get("status", {}).get("S")
                    ended = item.get("finished_at", {}).get("S")
                    if status in TERMINAL and ended and _instant(ended) >= self._usage_since:
                        finished += 1
        return finished

    def _give_functions_their_environment(self) -> None:
        assert self.runtime is not None
        self.runtime.environments.update(
            {function_name(f): self.environment(f) for f in r.FUNCTIONS}
        )

    def configure(self, name: str, value: str) -> None:
        """Change a deployment variable, as a redeployment would: functions that have it
        read the new value from their next cold start on."""
        assert self.runtime is not None
        self.env[name] = value
        self._give_functions_their_environment()
        self.runtime.retire_containers()

    def environment(self, function: r.Function) -> dict[str, str]:
        """Exactly the variables ``function``'s definition gives it (as CDK does), and those
        only chronoq local gives (resources.LOCAL_ONLY_ENV)."""
        names = (*function.env, *r.LOCAL_ONLY_ENV)
        return {name: self.env[name] for name in names if name in self.env}

    def settings(self, settings: type[S]) -> S:
        """A function's settings, as that function reads them here."""
        return load(settings, self.environment(settings.FUNCTION))

    def stop(self) -> None:
        if self.state is not None:
            self.state.stop()
            self.state = None
        if self.services is not None:
            chronoq_aws.serve({})
            self.services.close()
            self.services = None
        self.emulation.meter = None
        self.emulation.own_prefix = None
        self.emulation.parameters = None
        if deactivate(self.emulation):
            compose.TIME = compose.Time()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        if _RUNNING[0] is self:
            _RUNNING[0] = None

    def client(self, service: str) -> Any:
        """A client of ``service`` as chronoq's functions reach it: the engine's for chronoq's
        own tables, queues and state machines (``engine`` local), else the embedded AWS's."""
        if self.services is not None:
            served = self.services.clients().get(service)
            if served is not None:
                return served
        return _client(service)

    def _task_secrets(self, arns: list[str]) -> dict[str, str]:
        """The parameters a starting task's ``secrets`` name, read as ECS reads them: with
        the containers' execution role (metered and recorded as its calls), ten a request,
        decrypted, their latest versions; each ARN found and its value. From the engine's
        parameters (``engine`` local), else the embedded SSM."""
        ssm = self.client("ssm")
        found: dict[str, str] = {}
        with calling_as(CONTAINER_EXECUTION):
            for start in range(0, len(arns), 10):
                answer = ssm.get_parameters(Names=arns[start : start + 10], WithDecryption=True)
                for parameter in answer["Parameters"]:
                    found[parameter["ARN"]] = parameter["Value"]
        return {arn: found[arn] for arn in arns if arn in found}

    def running_executions(self) -> int:
        """Executions of the run state machines not yet ended."""
        if self.services is not None:
            return self.services.stepfunctions.running()
        from moto.stepfunctions.parser.models import stepfunctions_parser_backends

        machines = stepfunctions_parser_backends[ACCOUNT][REGION].state_machines
        return sum(
            1
            for machine in list(machines)
            for execution in list(machine.executions)
            if getattr(execution, "exec_status", None) in (None, "RUNNING")
        )

    def delayed_until(self) -> list[datetime | None]:
        """Each message on the run queues: when it becomes visible, if it is still delayed
        (None: visible now, or received and in flight)."""
        if self.services is not None:
            return [
                instant
                for url in self.queue_urls.values()
                for instant in self.services.queues.delayed_until(url)
            ]
        from moto.sqs.models import sqs_backends

        queues = sqs_backends[ACCOUNT][REGION].queues
        return [
            datetime.fromtimestamp(message.delayed_until / 1000, UTC) if message.delayed else None
            for url in self.queue_urls.values()
            for message in list(queues[url.rsplit("/", 1)[-1]]._messages)
        ]

    def notifier_filter(self, record: dict[str, Any]) -> bool:
        """The notifier's event source mapping filter, as CDK deploys it with this
        deployment's topic statuses (as configured now: a ``configure`` changes it, as a
        redeployment would)."""
        return self.stream_filter(fanout.NOTIFIER)(record)

    def stream_filter(self, reader: fanout.StreamReader) -> Callable[[dict[str, Any]], bool]:
        """A reader's event source mapping filter (chronoq.aws.fanout), as CDK deploys it
        with this deployment's topic statuses (as configured when a record is read)."""

        def keep(record: dict[str, Any]) -> bool:
            return _reader_filter(reader.name, self.env[r.ENV_TOPIC_STATUSES])(record)

        return keep

    def streams_of(self, reader: fanout.StreamReader) -> Any:
        """The client of the stream ``reader`` reads (its table's), as its event source
        mapping reads it: on the engine, a reader of its own (each keeps its own position;
        records are dropped once every reader has had them); on moto, the streams' (each
        poller its own iterators)."""
        if self.services is not None:
            return self.services.table_streams[reader.table.id].reader(reader.name)
        return self.client("dynamodbstreams")

    def stream_arn(self, reader: fanout.StreamReader) -> str:
        """The stream ``reader`` reads (its table's)."""
        return self.stream_arns[reader.table.id]

    def _create(self, audience: frozenset[RunStatus]) -> None:
        env: dict[str, str] = {
            r.ENV_SHARDS: str(self.shards),
            r.ENV_TOPIC_STATUSES: ",".join(sorted(audience)),
            r.ENV_BLOCK_PRIVATE_TARGETS: "true" if self.block_private_targets else "false",
            r.ENV_ALLOWED_TARGET_NETWORKS: self.allowed_target_networks,
            r.ENV_MAX_JOBS_PER_OWNER: str(self.max_jobs_per_owner),
            **r.owner_limits_environment(self.owner_limits),
            r.ENV_SECRETS_PATH: LOCAL_SECRETS_PATH,
            r.LOCAL_OWN_PORTS: ",".join(str(p) for p in self.own_ports),
            r.LOCAL_OWN_ADDRESSES: ",".join(self.own_addresses),
            # Locally everything in the embedded AWS stays allowed, up to Fargate's own sizes.
            **dict.fromkeys(
                (
                    r.ENV_LAMBDA_TARGETS,
                    r.ENV_QUEUE_TARGETS,
                    r.ENV_TOPIC_TARGETS,
                    r.ENV_EVENT_BUS_TARGETS,
                    r.ENV_CONTAINER_IMAGES,
                ),
                lim.ALLOW_ANY,
            ),
            r.ENV_MAX_CONTAINER_CPU: str(lim.MAX_CONTAINER_CPU),
            r.ENV_MAX_CONTAINER_MEMORY: str(lim.MAX_CONTAINER_MEMORY),
            r.ENV_MAX_CONTAINER_SECONDS: str(lim.MAX_CONTAINER_TIMEOUT_SECONDS),
        }
        if self.task_modules:
            env[r.ENV_TASK_MODULES] = self.task_modules
        ddb = self.client("dynamodb")
        for table in r.TABLES:
            name = table_name(table)
            env[table.env] = name
            if self.services is not None:  # (the engine's tables exist from its start)
                if table.stream:
                    self.stream_arns[table.id] = self.services.table_streams[table.id].stream_arn
                continue
            keys = [(table.partition_key, "HASH")]
            if table.sort_key:
                keys.append((table.sort_key, "RANGE"))
            attributes = {k for k, _ in keys}
            indexes = []
            for index in table.indexes:
                index_keys = [(index.partition_key, "HASH")]
                if index.sort_key:
                    index_keys.append((index.sort_key, "RANGE"))
                attributes |= {k for k, _ in index_keys}
                indexes.append(
                    {
                        "IndexName": index.name,
                        "KeySchema": [{"AttributeName": k, "KeyType": t} for k, t in index_keys],
                        "Projection": {"ProjectionType": index.projection.value},
                    }
                )
            ddb.create_table(
                TableName=name,
                BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in keys],
                AttributeDefinitions=[
                    {"AttributeName": a, "AttributeType": "S"} for a in sorted(attributes)
                ],
                **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
                **(
                    {
                        "StreamSpecification": {
                            "StreamEnabled": True,
                            "StreamViewType": "NEW_AND_OLD_IMAGES",
                        }
                    }
                    if table.stream
                    else {}
                ),
            )
            if table.stream:
                self.stream_arns[table.id] = ddb.describe_table(TableName=name)["Table"][
                    "LatestStreamArn"
                ]
            if table.ttl_attribute:
                ddb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
                )
        self.runs_stream_arn = self.stream_arns[r.RUNS_TABLE.id]

        sqs = self.client("sqs")
        dlq_url = sqs.create_queue(QueueName=f"{PREFIX}-{r.DEAD_LETTER_QUEUE_ID.lower()}")[
            "QueueUrl"
        ]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        for queue in r.QUEUES:
            url = sqs.create_queue(
                QueueName=f"{PREFIX}-{queue.id.lower()}",
                Attributes={
                    "VisibilityTimeout": str(queue.visibility_timeout_seconds),
                    "RedrivePolicy": json.dumps(
                        {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": queue.max_receive_count}
                    ),
                },
            )["QueueUrl"]
            self.queue_urls[queue.priority] = url
            env[queue.env] = url

        role = self.client("iam").create_role(
            RoleName=f"{PREFIX}-role",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"}),
        )["Role"]["Arn"]
        lam = self.client("lambda")
        arns: dict[str, str] = {}
        for function in r.FUNCTIONS:
            code = io.BytesIO()
            with zipfile.ZipFile(code, "w") as archive:
                archive.write(function.handler_file, function.handler_file.name)
            arns[function.name] = lam.create_function(
                FunctionName=function_name(function),
                Runtime=r.LAMBDA_RUNTIME,
                Role=role,
                Handler=function.handler,
                Code={"ZipFile": code.getvalue()},
                Timeout=function.timeout_seconds,
                MemorySize=function.memory_mb,
            )["FunctionArn"]

        self._create_notifications_and_outputs(env)
        network = self._create_containers(env, role)
        values = {
            r.ASL_RUNS_TABLE: env[r.RUNS_TABLE.env],
            r.ASL_JOBS_TABLE: env[r.JOBS_TABLE.env],
            r.ASL_RUNNER_FUNCTION: arns[r.RUNNER_FUNCTION.name],
            **network,
        }
        sfn = self.client("stepfunctions")
        standard, express = (
            m.definition(values) for m in (machines.STATE_MACHINE, machines.EXPRESS_STATE_MACHINE)
        )
        self.state_machine_arn = sfn.create_state_machine(
            name=f"{PREFIX}-run", definition=standard, roleArn=role
        )["stateMachineArn"]
        self.express_state_machine_arn = sfn.create_state_machine(
            name=f"{PREFIX}-run-express",
            definition=express,
            roleArn=role,
            type="EXPRESS",
        )["stateMachineArn"]
        env[r.ENV_STATE_MACHINE_ARN] = self.state_machine_arn
        env[r.ENV_EXPRESS_STATE_MACHINE_ARN] = self.express_state_machine_arn
        self.env = env

    def _create_notifications_and_outputs(self, env: dict[str, str]) -> None:
        bucket = output_bucket_name()
        self.client("s3").create_bucket(Bucket=bucket)
        env[r.ENV_OUTPUT_BUCKET] = bucket
        env[r.ENV_OUTPUT_BUCKETS] = "*"  # locally any bucket created in the embedded S3
        self.client("s3").create_bucket(Bucket=archive_bucket_name())
        env[r.ENV_ARCHIVE_BUCKET] = archive_bucket_name()
        env[r.ENV_TOPIC_ARN] = self.client("sns").create_topic(
            Name=f"{PREFIX}-{r.TOPIC_ID.lower()}"
        )["TopicArn"]
        env[r.ENV_SIGNING_SECRET_ARN] = self.client("secretsmanager").create_secret(
            Name=f"{PREFIX}-{r.SIGNING_SECRET_ID.lower()}",
            SecretString=self.signing_secret or secrets.token_hex(32),
        )["ARN"]
        self.client("ses").verify_email_identity(EmailAddress=self.email_sender)
        env[r.ENV_EMAIL_SENDER] = self.email_sender

    def _create_containers(self, env: dict[str, str], role: str) -> dict[str, str]:
        """The cluster, log group and network container targets run with."""
        cluster = self.client("ecs").create_cluster(
            clusterName=f"{PREFIX}-{r.CONTAINER_CLUSTER_ID.lower()}"
        )["cluster"]["clusterArn"]
        group = f"/{PREFIX}/{r.CONTAINER_LOG_GROUP_ID.lower()}"
        self.client("logs").create_log_group(logGroupName=group)
        env[r.ENV_CONTAINER_LOG_GROUP] = group
        env[r.ENV_CONTAINER_EXECUTION_ROLE_ARN] = role
        env[r.ENV_CONTAINER_TASK_ROLE_ARN] = role
        # Placeholders: tasks run in the default VPC (see emulation.run_containers_as_subprocesses).
        return {
            r.ASL_CONTAINER_CLUSTER: cluster,
            r.ASL_CONTAINER_SUBNETS: LOCAL_SUBNET,
            r.ASL_CONTAINER_SECURITY_GROUP: LOCAL_SECURITY_GROUP,
        }
