"""Notifier: hears of the runs that end (the runs table's stream, filtered to final statuses
the topic hears of, to runs whose job asked to be notified (or whose end is counted: a
backfill's run, a re-run) and to runs that held flow slots: see chronoq.aws.streams). It
counts the ends of the batch first (a backfill's progress, its owner's usage:
chronoq.usecases.progress), then tells owners: the SNS topic for the deployment's topic
statuses, the job's webhook and e-mail as its ``notify`` asks. The runs of the batch that
held flow slots wake the runs parked on them, together (chronoq.usecases.wake). A run of a job
that ``after`` jobs follow (its ``slots`` name them) is noted in their fan-ins, and the runs
it completes are sent (chronoq.usecases.after). A success of a
job with ``expect`` moves its expectation on (chronoq.usecases.silence); a silence's record
(SILENT, RECOVERED) is told as a run's end is.

A record whose delivery raised is reported as a partial batch failure and retried; if
counting or waking raised, the whole batch is (nothing is counted twice; a run woken twice
starts once)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.aws.codecs import run_from_item, silence_event_from_item
from chronoq.aws.streams import uncounted_end
from chronoq.domain.after import followers_in
from chronoq.domain.notifications import has_just_finished
from chronoq.domain.runs import RunStatus
from chronoq.domain.silence import expects, is_event_key
from chronoq.domain.time import utc_now
from chronoq.origin import refuse_client_context
from chronoq.settings import NotifierSettings, load
from chronoq.usecases.wake import Ended

logger = Logger(service="chronoq-notifier")
processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
settings = load(NotifierSettings)
notifier = compose.notifier(settings)
waker = compose.waker(settings)
progress = compose.progress(settings)
silence = compose.silence(settings)
pipelines = compose.pipelines(settings)


def _status(image: dict[str, Any] | None) -> str | None:
    status = (image or {}).get("status", {}).get("S")
    return str(status) if status else None


def _gave_slots_back(record: dict[str, Any]) -> Ended | None:
    """The end of a run that held flow slots (its record's ``slots``), if the record is one."""
    change = record.get("dynamodb", {})
    new, old = change.get("NewImage"), change.get("OldImage")
    if not new or not has_just_finished(_status(old), _status(new)):
        return None
    slots = new.get("slots", {}).get("S", "")
    return Ended.of(new["run_id"]["S"], slots) if slots else None


def notify(record: DynamoDBRecord) -> None:
    change = record.raw_event.get("dynamodb", {})
    new, old = change.get("NewImage"), change.get("OldImage")
    if new and old is None and is_event_key(new.get("run_id", {}).get("S", "")):
        event = silence_event_from_item(new)  # a silence noted, or ended: written once
        outcomes = notifier.silence_noted(event)
        logger.info("notified", extra={"job_id": event.job_id, "status": event.status, **outcomes})
        return
    if not new or not has_just_finished(_status(old), _status(new)):
        return
    run = run_from_item(new)
    outcomes = notifier.run_finished(run)
    if outcomes:
        logger.info("notified", extra={"run_id": run.id, "status": run.status, **outcomes})
    slots = new.get("slots", {}).get("S", "")
    if run.status is RunStatus.SUCCEEDED and expects(slots):
        moved = silence.succeeded(run.job_id, run.id, run.finished_at or utc_now())
        logger.debug("success expected", extra={"run_id": run.id, "expectation": moved})
    # --- completion triggers: the jobs following it (its slots name them: no read else)
    if followers := followers_in(slots):
        created = pipelines.upstream_ended(run, followers)
        logger.debug("followed", extra={"run_id": run.id, "created": created})


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    refuse_client_context(context)  # a job's lambda target, not its event source
    records = event.get("Records") or []
    try:
        ends = [uncounted_end(rec.get("dynamodb", {}).get("NewImage")) for rec in records]
        progress.count(end for end in ends if end is not None)
        # the runs that held flow slots, together: a flow's slots given back in the batch
        # wake as many of its parked runs
        waker.runs_ended(end for rec in records if (end := _gave_slots_back(rec)) is not None)
    except Exception:
        logger.exception("counting run ends or waking parked runs failed: the batch is retried")
        first = records[0]["dynamodb"]["SequenceNumber"]
        return {"batchItemFailures": [{"itemIdentifier": first}]}
    return process_partial_response(
        event=event, record_handler=notify, processor=processor, context=context
    )
