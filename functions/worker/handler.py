"""Worker: takes SQS batches of due runs and starts each run's execution on its second, the
runs of a batch concurrently (each waits only for its own second: SQS delivers it in the
second before).

A record that fails (for instance Step Functions throttling, or a run another worker is
starting at this moment) is reported back as a partial batch failure and retried by SQS after
the queue's visibility timeout; the claim and the execution name keep retries harmless.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
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
processor = AsyncBatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
starter = compose.worker(load(WorkerSettings))


async def start(record: SQSRecord) -> str:
    message = RunMessage.model_validate_json(record.body)
    # (in a thread: the waits and AWS calls of the batch's runs overlap)
    outcome = await asyncio.to_thread(starter.start_run, message)
    logger.info("run", extra={"run_id": message.run_id, "outcome": outcome})
    return outcome


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return async_process_partial_response(
        event=event, record_handler=start, processor=processor, context=context
    )
