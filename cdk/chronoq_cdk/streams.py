"""The tables' streams and their readers (chronoq.aws.fanout: the runs stream's exactly two,
one per cadence; the audit stream's one): each reader's event source mapping and the
dead-letter queue of the records it failed on."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from chronoq.aws.fanout import StreamReader
from chronoq.domain.runs import RunStatus
from constructs import Construct

from .queues import END_OF_THE_LINE
from .rules import acknowledge


def stream_dead_letter(scope: Construct, id: str) -> sqs.Queue:
    """Where a reader's records still failing once their retries are spent are kept (as
    pointers to their stream position), not lost."""
    queue = sqs.Queue(
        scope,
        id,
        retention_period=Duration.days(14),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
    )
    acknowledge(
        queue,
        "AwsSolutions-SQS3",
        "It is itself a dead-letter queue: the on-failure destination of a runs stream's"
        " event source mapping (not a redrive target, which is what the rule looks for).",
    )
    acknowledge(queue, "Serverless-SQSRedrivePolicy", END_OF_THE_LINE)
    return queue


def runs_stream_source(
    reader: StreamReader,
    runs: dynamodb.ITable,
    dead_letter: sqs.IQueue,
    topic_statuses: Iterable[RunStatus],
) -> sources.DynamoEventSource:
    """``reader``'s event source mapping of the runs stream (of ``reader.table``'s: pass that
    table as ``runs``): new records only, filtered,
    in its batches (and its batching window), a failed record reported (the batch bisected
    on an error) and retried, then sent to ``dead_letter``."""
    window = reader.batching_window_seconds
    return sources.DynamoEventSource(
        runs,
        starting_position=lambda_.StartingPosition.LATEST,
        batch_size=reader.batch_size,
        max_batching_window=Duration.seconds(window) if window else None,
        retry_attempts=reader.max_retries,
        bisect_batch_on_error=True,
        report_batch_item_failures=True,
        filters=[lambda_.FilterCriteria.filter(p) for p in reader.filters(topic_statuses)],
        on_failure=sources.SqsDlq(dead_letter),
    )
