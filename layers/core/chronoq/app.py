"""Builds the service from settings and lazily made AWS clients (one call per invocation)."""

from __future__ import annotations

from chronoq import aws
from chronoq.executor import Executor
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
        shards=settings.shards,
    )
