"""The parts AWS plays around the functions: the EventBridge rule that ticks the dispatcher,
and the SQS event source mappings that feed the worker."""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

logger = logging.getLogger(__name__)

Invoke = Callable[[dict[str, Any]], Any]

#: How long an idle poller waits before looking at the queues again.
IDLE_WAIT_SECONDS = 0.05


def scheduled_event(rule_arn: str) -> dict[str, Any]:
    """The event an EventBridge schedule rule sends."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [rule_arn],
        "detail": {},
    }


class Ticker(threading.Thread):
    """Invokes the dispatcher every ``interval`` seconds (AWS: once a minute; dispatching is
    idempotent, so ticking more often only shortens the wait after a start or an outage)."""

    def __init__(self, invoke: Invoke, interval: float, stop: threading.Event) -> None:
        super().__init__(name="ticker", daemon=True)
        self._invoke = invoke
        self._interval = interval
        self._halt = stop
        self.paused = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            if not self.paused.is_set():
                try:
                    self._invoke(
                        scheduled_event("arn:aws:events:us-east-1:123456789012:rule/chronoq-tick")
                    )
                except Exception:
                    logger.exception("dispatcher failed")
            self._halt.wait(self._interval)


def sqs_event(queue_arn: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event an SQS event source mapping sends for a batch of messages."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(m["Body"].encode(), usedforsecurity=False).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


class QueuePoller(threading.Thread):
    """Feeds the worker from the run queues, like SQS event source mappings, taking from
    the highest-priority queue that has messages: a run never waits behind lower-priority
    ones. Deletes the messages the worker did not report as failed (partial batch
    responses), leaving the others to reappear after their visibility timeout."""

    def __init__(
        self, sqs: Any, queue_urls: list[str], invoke: Invoke, halt: threading.Event, name: str
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._sqs = sqs
        self._queues = [
            (
                url,
                sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                    "QueueArn"
                ],
            )
            for url in queue_urls
        ]
        self._invoke = invoke
        self._halt = halt

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                if not self.poll_once():
                    self._halt.wait(IDLE_WAIT_SECONDS)
            except Exception:
                logger.exception("poller failed")
                self._halt.wait(1)

    def poll_once(self) -> int:
        """Hand one batch from the first non-empty queue to the worker; 0 if all are empty."""
        for url, arn in self._queues:
            messages = self._sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0, AttributeNames=["All"]
            ).get("Messages", [])
            if messages:
                self._deliver(url, arn, messages)
                return len(messages)
        return 0

    def _deliver(self, url: str, arn: str, messages: list[dict[str, Any]]) -> None:
        try:
            answer = self._invoke(sqs_event(arn, messages)) or {}
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
        except Exception:
            logger.exception("worker failed; the batch will be retried")
            return
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
