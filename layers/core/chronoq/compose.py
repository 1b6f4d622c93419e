"""The composition root: each function's use cases, built once per cold start from its
settings and AWS clients. Nothing else in chronoq builds a client or reads the environment."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

from chronoq import tasks
from chronoq.aws import clients
from chronoq.aws.archive import S3Archive
from chronoq.aws.artifacts import S3Artifacts
from chronoq.aws.audit import DynamoAuditEraser, DynamoAuditTrail
from chronoq.aws.executor import StepFunctionsExecutor
from chronoq.aws.queues import SqsQueues
from chronoq.aws.secrets import SsmSecretValues
from chronoq.aws.store import DynamoStore
from chronoq.domain.time import utc_now
from chronoq.execution.egress import Egress
from chronoq.settings import (
    ApiSettings,
    ArchiverSettings,
    DispatcherSettings,
    EraserSettings,
    NotifierSettings,
    RunnerSettings,
    WorkerSettings,
)
from chronoq.usecases.after import Pipelines
from chronoq.usecases.archive import ArchiveLinks, Archiver
from chronoq.usecases.attempts import ContainerSettings, Runner
from chronoq.usecases.audit import AuditOperations
from chronoq.usecases.backfills import BackfillOperations
from chronoq.usecases.calendars import CalendarOperations
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.dispatch import Dispatcher
from chronoq.usecases.erasure import Eraser, erase_archive
from chronoq.usecases.idempotency import Idempotency
from chronoq.usecases.jobs import JobOperations
from chronoq.usecases.notify import Notifier
from chronoq.usecases.pages import PageTokens
from chronoq.usecases.ports import Clock, Sleep
from chronoq.usecases.progress import Progress
from chronoq.usecases.reruns import RerunOperations
from chronoq.usecases.runs import RunOperations
from chronoq.usecases.secrets import Resolver, SecretOperations
from chronoq.usecases.silence import Silence
from chronoq.usecases.start import RunStarter
from chronoq.usecases.timeindex import TimeIndex
from chronoq.usecases.wake import SlotWaker


@dataclass(frozen=True)
class Time:
    """What time it is for the use cases built here, and how they wait."""

    clock: Clock = utc_now
    sleep: Sleep = time.sleep


#: The wall clock on AWS; chronoq local gives its functions its own (chronoq.local.clock).
TIME = Time()


@dataclass
class Api:
    """What the api function serves."""

    jobs: JobOperations
    runs: RunOperations
    idempotency: Idempotency
    #: The deployment's master secret, which each owner's webhook signing secret derives
    #: from (read on first use).
    master_secret: Callable[[], str]
    backfills: BackfillOperations
    reruns: RerunOperations
    secrets: SecretOperations
    #: Jobs' audit trails, read.
    audit: AuditOperations
    #: The owner's archived runs, as links.
    archive: ArchiveLinks
    #: Business calendars (their jobs re-planned by ``jobs``).
    calendars: CalendarOperations


def eraser(settings: EraserSettings) -> Eraser:
    """What erases an owner (the eraser function, which an operator invokes)."""
    store = DynamoStore(clients.dynamodb(), settings.jobs_table, settings.runs_table)
    executor = StepFunctionsExecutor(
        clients.stepfunctions(), settings.state_machine_arn, settings.express_state_machine_arn
    )
    audit = DynamoAuditEraser(clients.dynamodb(), settings.audit_table)
    return Eraser(
        store=store,
        secret_values=secret_values(settings.secrets_path),
        artifacts=S3Artifacts(
            clients.dynamodb(), clients.client("s3"), settings.runs_table, settings.output_bucket
        ),
        canceller=Canceller(store, executor, TIME.clock),
        clock=TIME.clock,
        extra={
            "audit_entries": audit.erase,
            "archive_objects": partial(erase_archive, archive(settings.archive_bucket)),
        },
        known_jobs=audit.job_ids,
        trail=DynamoAuditTrail(clients.dynamodb(), settings.audit_table),
    )


def archive(bucket: str) -> S3Archive:
    """The archive's bucket (the client made on first use)."""
    return S3Archive(clients.s3v4, bucket)


def secret_values(path: str) -> SsmSecretValues:
    """Owners' secrets' values (the client made on first use)."""
    return SsmSecretValues(cache(lambda: clients.client("ssm")), path)


def secret_value(arn: str) -> str:
    return str(clients.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])


def api(settings: ApiSettings) -> Api:
    store = DynamoStore(
        clients.dynamodb(), settings.jobs_table, settings.runs_table, settings.schedule_table
    )
    queues = SqsQueues(clients.sqs(), settings.queue_urls)
    index = TimeIndex(store, queues, settings.shards, TIME.clock)
    executor = StepFunctionsExecutor(clients.stepfunctions(), settings.state_machine_arn)
    canceller = Canceller(store, executor, TIME.clock, SlotWaker(store, queues, TIME.clock))
    artifacts = S3Artifacts(
        clients.dynamodb(), clients.client("s3"), settings.runs_table, settings.output_bucket
    )
    output_buckets = (
        None
        if settings.output_buckets is None
        else settings.output_buckets | {settings.output_bucket}
    )
    modules = settings.task_modules
    master_secret = cache(lambda: secret_value(settings.signing_secret_arn))
    trail = DynamoAuditTrail(clients.dynamodb(), settings.audit_table)
    jobs = JobOperations(
        store=store,
        index=index,
        clock=TIME.clock,
        output_buckets=output_buckets,
        is_task=lambda name: tasks.lookup(name, modules) is not None,
        pages=PageTokens(master_secret),
        audit=trail,
        network=settings.network,
        max_jobs_per_owner=settings.max_jobs_per_owner,
        targets=settings.targets,
        limits=settings.limits,
    )
    return Api(
        jobs=jobs,
        runs=RunOperations(
            store=store,
            artifacts=artifacts,
            canceller=canceller,
            clock=TIME.clock,
            pages=PageTokens(master_secret),
        ),
        idempotency=Idempotency(store, TIME.clock),
        master_secret=master_secret,
        backfills=BackfillOperations(
            store=store,
            index=index,
            canceller=canceller,
            clock=TIME.clock,
            pages=PageTokens(master_secret),
            audit=trail,
            limits=settings.limits,
        ),
        reruns=RerunOperations(
            store=store, index=index, clock=TIME.clock, audit=trail, limits=settings.limits
        ),
        secrets=SecretOperations(
            store=store,
            values=secret_values(settings.secrets_path),
            jobs=store,
            clock=TIME.clock,
            max_secrets_per_owner=settings.max_secrets_per_owner,
        ),
        audit=AuditOperations(trail=trail, jobs=store, pages=PageTokens(master_secret)),
        archive=ArchiveLinks(archive(settings.archive_bucket), TIME.clock),
        calendars=CalendarOperations(
            store=store, jobs=store, clock=TIME.clock, replan_job=jobs.recalendar
        ),
    )


def dispatcher(settings: DispatcherSettings) -> Dispatcher:
    store = DynamoStore(
        clients.dynamodb(), settings.jobs_table, settings.runs_table, settings.schedule_table
    )
    queues = SqsQueues(clients.sqs(), settings.queue_urls)
    return Dispatcher(
        store, TimeIndex(store, queues, settings.shards, TIME.clock), settings.shards, TIME.clock
    )


def worker(settings: WorkerSettings) -> RunStarter:
    store = DynamoStore(clients.dynamodb(), settings.jobs_table, settings.runs_table)
    executor = StepFunctionsExecutor(
        clients.stepfunctions(), settings.state_machine_arn, settings.express_state_machine_arn
    )
    queues = SqsQueues(clients.sqs(), settings.queue_urls)
    return RunStarter(
        store=store,
        executor=executor,
        canceller=Canceller(store, executor, TIME.clock, SlotWaker(store, queues, TIME.clock)),
        clock=TIME.clock,
        sleep=TIME.sleep,
        queues=queues,
        asked_in_flight=settings.max_asked_runs_in_flight,
        runs_in_flight=settings.max_runs_in_flight,
    )


def runner(settings: RunnerSettings) -> Runner:
    return Runner(
        artifacts=S3Artifacts(
            clients.dynamodb(), clients.client("s3"), settings.runs_table, settings.output_bucket
        ),
        lambda_client=clients.lambda_invoker,
        ecs_client=lambda: clients.client("ecs"),
        logs_client=lambda: clients.client("logs"),
        containers=ContainerSettings(
            log_group=settings.container_log_group,
            execution_role_arn=settings.container_execution_role_arn,
            task_role_arn=settings.container_task_role_arn,
            secret_parameter=secret_values(settings.secrets_path).parameter,
        ),
        task_modules=settings.task_modules,
        egress=Egress(settings.network),
        secrets=Resolver(
            DynamoStore(clients.dynamodb(), settings.jobs_table),
            secret_values(settings.secrets_path),
        ),
    )


def waker(settings: NotifierSettings) -> SlotWaker:
    return SlotWaker(
        store=DynamoStore(clients.dynamodb(), settings.jobs_table, settings.runs_table),
        queues=SqsQueues(clients.sqs(), settings.queue_urls),
        clock=TIME.clock,
        runs_in_flight=settings.max_runs_in_flight,
    )


def progress(settings: NotifierSettings) -> Progress:
    """What counts the ends of backfills' runs and re-runs (the notifier, per batch)."""
    return Progress(
        DynamoStore(clients.dynamodb(), settings.jobs_table, settings.runs_table), TIME.clock
    )


def silence(settings: NotifierSettings) -> Silence:
    """What moves a job's expectation on as a run of it succeeds (the notifier, per run)."""
    store = DynamoStore(
        clients.dynamodb(), settings.jobs_table, settings.runs_table, settings.schedule_table
    )
    return Silence(store, settings.shards, TIME.clock)


def pipelines(settings: NotifierSettings) -> Pipelines:
    """What notes upstream runs' ends in their followers' fan-ins and sends the runs they
    complete (the notifier, per run of a job that ``after`` jobs follow)."""
    store = DynamoStore(
        clients.dynamodb(), settings.jobs_table, settings.runs_table, settings.schedule_table
    )
    queues = SqsQueues(clients.sqs(), settings.queue_urls)
    return Pipelines(store, TimeIndex(store, queues, settings.shards, TIME.clock), TIME.clock)


def notifier(settings: NotifierSettings) -> Notifier:
    arn = settings.signing_secret_arn
    return Notifier(
        store=DynamoStore(clients.dynamodb(), settings.jobs_table, settings.runs_table),
        sns=clients.client("sns"),
        ses=clients.client("ses"),
        topic_arn=settings.topic_arn,
        topic_statuses=settings.topic_statuses,
        email_sender=settings.email_sender,
        master_secret=cache(lambda: secret_value(arn)),
        egress=Egress(settings.network),
        sleep=TIME.sleep,  # (its retries' waits; signatures keep the wall clock's time)
        secrets=Resolver(
            DynamoStore(clients.dynamodb(), settings.jobs_table),
            secret_values(settings.secrets_path),
        ),
    )


def archiver(settings: ArchiverSettings) -> Archiver:
    return Archiver(archive(settings.archive_bucket))
