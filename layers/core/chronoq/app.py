"""Builds the service from settings and lazily made AWS clients (one call per invocation)."""

from __future__ import annotations

from functools import cache

from chronoq import aws
from chronoq.artifacts import Artifacts
from chronoq.executor import Executor
from chronoq.notifier import Notifier
from chronoq.queue import Queues
from chronoq.service import Chronoq
from chronoq.settings import Settings
from chronoq.store import Store


def build(settings: Settings | None = None) -> Chronoq:
    settings = settings or Settings.from_env()
    return Chronoq(
        store=Store(aws.dynamodb(), settings),
        queues=Queues(aws.sqs(), settings.queue_urls) if settings.queue_urls else None,
        executor=(
            Executor(aws.stepfunctions(), settings.state_machine_arn)
            if settings.state_machine_arn
            else None
        ),
        artifacts=Artifacts(
            aws.dynamodb(), aws.client("s3"), settings.runs_table, settings.output_bucket
        ),
        output_buckets=(
            None
            if settings.output_buckets is None
            else settings.output_buckets | {settings.output_bucket}
        ),
        shards=settings.shards,
    )


@cache
def master_secret() -> str:
    """The deployment's webhook signing master secret (read once per container)."""
    arn = Settings.from_env().signing_secret_arn
    return str(aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])


def notifier(settings: Settings | None = None) -> Notifier:
    settings = settings or Settings.from_env()
    return Notifier(
        store=Store(aws.dynamodb(), settings),
        sns=aws.client("sns"),
        ses=aws.client("ses"),
        topic_arn=settings.topic_arn,
        email_sender=settings.email_sender,
        master_secret=master_secret,
    )
