"""Worker: takes SQS batches of due runs, claims each run once and starts its execution.

A record that fails (for instance Step Functions throttling, or a run another worker is
starting at this moment) is reported back as a partial batch failure and retried by SQS after
the queue's visibility timeout; the claim and the execution name keep retries harmless.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.domain.runs import RunMessage
from chronoq.settings import WorkerSettings, load

logger = Logger(service="chronoq-worker")
# A batch whose every record must come back later (say, each is being started by another
# worker) is answered like any other: every record listed as failed, none lost.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
starter = compose.worker(load(WorkerSettings))


def start(record: SQSRecord) -> str:
    message = RunMessage.model_validate_json(record.body)
    outcome = starter.start_run(message)
    logger.info("run", extra={"run_id": message.run_id, "outcome": outcome})
    return outcome


def _due(record: dict[str, Any]) -> str:
    try:
        return str(json.loads(record["body"])["scheduled_at"])
    except (ValueError, KeyError, TypeError):
        return ""  # malformed: handled (and failed) first


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    event["Records"].sort(key=_due)  # each run waits for its second: earliest first
    return process_partial_response(
        event=event, record_handler=start, processor=processor, context=context
    )
