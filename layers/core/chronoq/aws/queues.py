"""SQS adapter: one queue per priority, batched sends with per-message delays, each message in its
owner's message group."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from chronoq.domain.runs import Priority, RunMessage
from chronoq.usecases.delays import message_delay

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef


class QueueError(Exception):
    """SQS refused some messages."""


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
