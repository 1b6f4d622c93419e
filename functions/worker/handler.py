"""Worker: takes SQS batches of due runs and starts each run on its second: the runs of a
batch due in the same second together (decided concurrently; those that fit EXPRESS in one
execution). SQS delivers a run in the second before it is due, so a batch waits less than a
second.

A record that fails (for instance Step Functions throttling, or a run another worker is
starting at this moment) is reported back as a partial batch failure and retried by SQS after
the queue's visibility timeout; the claim and the state machine's first write keep retries
harmless.
"""

from __future__ import annotations

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
from chronoq import metrics as chronoq_metrics
from chronoq import resources as r
from chronoq.domain.runs import RunMessage
from chronoq.origin import refuse_client_context
from chronoq.settings import WorkerSettings, load
from pydantic import ValidationError

logger = Logger(service="chronoq-worker")
# A batch whose every record must come back later (say, each is being started by another
# worker) is answered like any other: every record listed as failed, none lost.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
starter = compose.worker(load(WorkerSettings))
metrics = chronoq_metrics.for_function(r.WORKER_FUNCTION)


def _message(record: dict[str, Any]) -> RunMessage | None:
    try:
        return RunMessage.model_validate_json(record["body"])
    except (ValidationError, KeyError, TypeError):
        return None  # malformed: its record fails


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    refuse_client_context(context)  # a job's lambda target, not its event source
    messages = {r["messageId"]: _message(r) for r in event["Records"]}
    valid = {i: m for i, m in messages.items() if m is not None}
    results = dict(zip(valid, starter.start_runs(list(valid.values())), strict=True))
    chronoq_metrics.started(metrics, results.values())
    chronoq_metrics.flush(metrics)

    def outcome(record: SQSRecord) -> str:
        """The record's part of the batch's outcome: what became of its run, or its error."""
        result = results.get(record.message_id)
        if result is None:
            raise ValueError(f"message {record.message_id} is not a run message")
        if isinstance(result, Exception):
            # (a line per run sent back: SQS delivers it again after the visibility timeout)
            logger.warning(
                "run sent back",
                extra={"run_id": valid[record.message_id].run_id, "error": repr(result)},
            )
            raise result
        # a line per run is paid for per run (CloudWatch Logs): a started run only at DEBUG
        log = logger.debug if result == "started" else logger.info
        log("run", extra={"run_id": valid[record.message_id].run_id, "outcome": result})
        return str(result)

    return process_partial_response(
        event=event, record_handler=outcome, processor=processor, context=context
    )
