"""SQS adapter: one queue per priority, batched sends with per-message delays, each message in its
owner's message group."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from chronoq import resources as r
from chronoq.domain.runs import Priority, RunMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef


class QueueError(Exception):
    """SQS refused some messages."""


def delay_seconds(scheduled_at: datetime, now: datetime, priority: Priority) -> int:
    """Seconds to hold a run back so that it reaches a worker about when it is due, the
    earlier the higher its priority (see DISPATCH_LEAD_SECONDS); none for a run due now or
    past; clamped to what SQS allows."""
    if scheduled_at <= now:
        return 0
    lead = r.DISPATCH_LEAD_SECONDS[priority.value]
    seconds = math.floor((scheduled_at - now).total_seconds()) - lead
    return max(0, min(r.MAX_DELAY_SECONDS, seconds))


def message_delay(message: RunMessage, now: datetime, priority: Priority) -> int:
    """The delay of a run's message: to its planned start (or the second its flow reserved
    for it) as ``delay_seconds`` says; a run its flow held back: until it looks again."""
    if message.not_before is not None and not message.reserved:
        seconds = math.ceil((message.not_before - now).total_seconds())
        return max(0, min(r.MAX_DELAY_SECONDS, seconds))
    return delay_seconds(message.due_at, now, priority)


#: What SQS allows in a message group id: up to 128 of these characters.
_GROUP_CHARACTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
)


def message_group(owner: str) -> str:
    """The message group of an owner's runs: the owner itself when SQS allows it as a group
    id, else a digest of it (a group per owner either way; SQS fair queues keep one owner's
    backlog from delaying the others')."""
    if 0 < len(owner) <= 128 and set(owner) <= _GROUP_CHARACTERS:
        return owner
    return "owner-" + hashlib.sha256(owner.encode()).hexdigest()[:40]


class SqsQueues:
    def __init__(self, client: SQSClient, urls: Mapping[str, str]) -> None:
        self._sqs = client
        self._urls = urls

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        """Send every message to its priority's queue, in its owner's message group, ten per
        request. Returns the count."""
        by_queue: dict[str, list[SendMessageBatchRequestEntryTypeDef]] = defaultdict(list)
        for priority, message in messages:
            queue = by_queue[self._urls[priority.value]]
            entry: SendMessageBatchRequestEntryTypeDef = {
                "Id": str(len(queue)),
                "MessageBody": message.body(),
                "DelaySeconds": message_delay(message, now, priority),
            }
            if message.owner:
                entry["MessageGroupId"] = message_group(message.owner)
            queue.append(entry)
        sent = 0
        for url, entries in by_queue.items():
            for start in range(0, len(entries), 10):
                batch = entries[start : start + 10]
                answer = self._sqs.send_message_batch(QueueUrl=url, Entries=batch)
                failed = answer.get("Failed") or []
                if failed:
                    raise QueueError(f"SQS refused {len(failed)} message(s): {failed[0]}")
                sent += len(batch)
        return sent
