"""The parts AWS plays around the functions: the EventBridge rule that ticks the dispatcher,
the SQS event source mappings that feed the worker, and the DynamoDB stream event source
mappings that feed the runs stream's readers (the notifier, the archiver: chronoq.aws.fanout)."""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from chronoq import resources as r
from chronoq.aws.streams import matches
from chronoq.local.usage import EVENT_SOURCES, calling_as

logger = logging.getLogger(__name__)

Invoke = Callable[[dict[str, Any]], Any]

#: How long an idle poller waits before looking at the queues again.
IDLE_WAIT_SECONDS = 0.05
#: The longest pollers go without looking at empty queues (see Pace).
IDLE_LOOK_SECONDS = 1.0
#: Every Pace of this process (told of each send).
_PACES: weakref.WeakSet[Pace] = weakref.WeakSet()
#: The most messages one ReceiveMessage answers with.
SQS_MAX_MESSAGES = 10


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
    idempotent, so ticking more often only shortens the wait after a start or an outage):
    once per group of shards, in parallel, as the stack's rules do (``groups``: None, one
    invocation for every shard)."""

    def __init__(
        self,
        invoke: Invoke,
        interval: float,
        stop: threading.Event,
        groups: list[list[int]] | None = None,
    ) -> None:
        super().__init__(name="ticker", daemon=True)
        self._invoke = invoke
        self._interval = interval
        self._halt = stop
        self._groups = groups
        self.paused = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            if not self.paused.is_set():
                self.tick()
            self._halt.wait(self._interval)

    def tick(self) -> None:
        event = scheduled_event("arn:aws:events:us-east-1:123456789012:rule/chronoq-tick")
        events = [{**event, "shards": g} for g in self._groups] if self._groups else [event]
        threads = [threading.Thread(target=self._one, args=(e,), daemon=True) for e in events]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _one(self, event: dict[str, Any]) -> None:
        try:
            self._invoke(event)
        except Exception:
            logger.exception("dispatcher failed")


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


def messages_sent(delays: list[float]) -> None:
    """The embedded SQS took messages visible after these delays (seconds): every Pace hears
    of them (see chronoq.local.emulation.service_calls.serialize_service_calls)."""
    for pace in list(_PACES):
        pace.sent(delays)


class Pace:
    """When the pollers of a set of queues look at them. While there are messages, every poller
    looks again at once. While the queues are empty, a poller waits until a message sent may
    have become visible (the embedded SQS tells of each send and its delay: see ``sent``), or
    for IDLE_LOOK_SECONDS at most (a message handed back by a worker reappears after its
    visibility timeout, untold), and only one poller looks then: five pollers looking at three
    empty queues twenty times a second kept chronoq local half a core busy doing nothing."""

    def __init__(self, longest: float = IDLE_LOOK_SECONDS) -> None:
        self._longest = longest
        self._changed = threading.Condition()
        #: When messages sent become visible (monotonic seconds), soonest first.
        self._due: list[float] = []
        #: A poller found messages: the others look too.
        self._busy = False
        self._next_look = 0.0
        _PACES.add(self)

    def sent(self, delays: Iterable[float]) -> None:
        """Messages were sent, visible after these delays (seconds)."""
        with self._changed:
            now = time.monotonic()
            for delay in delays:
                heapq.heappush(self._due, now + max(0.0, delay))
            self._changed.notify_all()

    def moved(self) -> None:
        """chronoq local's clock moved on: a delayed message may be visible now."""
        self.sent([0.0])

    def busy(self) -> None:
        """A poller found messages: every poller looks again at once."""
        with self._changed:
            self._busy = True
            self._changed.notify_all()

    def wake(self) -> None:
        """The pollers waiting in ``idle`` look at once (at their halt event: see
        QueuePoller.wake)."""
        with self._changed:
            self._changed.notify_all()

    def idle(self, halt: threading.Event) -> None:
        """A poller found the queues empty: wait for its next look."""
        with self._changed:
            self._busy = False
            while not halt.is_set():
                now = time.monotonic()
                if self._busy:
                    return
                if self._due and self._due[0] <= now:
                    while self._due and self._due[0] <= now:
                        heapq.heappop(self._due)
                    return
                if now >= self._next_look:  # (one poller looks now and then all the same)
                    self._next_look = now + self._longest
                    return
                until = min(self._due[0] if self._due else self._next_look, self._next_look)
                self._changed.wait(max(0.001, until - now))


def queue_pollers(
    sqs: Any,
    urls: list[str],
    invoke: Invoke,
    halt: threading.Event,
    per_queue: int,
    listen: Callable[[Callable[[], None]], None] | None = None,
) -> list[QueuePoller]:
    """``per_queue`` pollers for each queue, with a pace of their own (a busy queue does not
    make the pollers of an empty one look again and again), as each queue has its own event
    source mapping on AWS: a backlog on one queue never holds up another's messages.
    ``listen``: how a pace hears that the clock moved."""
    pollers = []
    for url in urls:
        pace = Pace()
        if listen is not None:
            listen(pace.moved)
        name = url.rsplit("/", 1)[-1]
        pollers += [
            QueuePoller(sqs, [url], invoke, halt, f"poller-{name}-{n}", pace)
            for n in range(per_queue)
        ]
    return pollers


class QueuePoller(threading.Thread):
    """Feeds the worker from the run queues, like SQS event source mappings, taking from
    the highest-priority queue that has messages: a run never waits behind lower-priority
    ones. Deletes the messages the worker did not report as failed (partial batch
    responses), leaving the others to reappear after their visibility timeout. Pollers of
    the same queues share a ``pace`` (see Pace)."""

    def __init__(
        self,
        sqs: Any,
        queue_urls: list[str],
        invoke: Invoke,
        halt: threading.Event,
        name: str,
        pace: Pace | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._pace = pace or Pace()
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
                if self.poll_once():
                    self._pace.busy()
                else:
                    self._pace.idle(self._halt)
            except Exception:
                logger.exception("poller failed")
                self._halt.wait(1)

    def wake(self) -> None:
        """Stop waiting for the queues now (its halt event was set: the poller ends at once
        rather than at its next look, up to IDLE_LOOK_SECONDS later)."""
        self._pace.wake()

    def poll_once(self) -> int:
        with calling_as(EVENT_SOURCES):  # AWS's event source mapping makes these calls
            return self._poll_once()

    def _poll_once(self) -> int:
        """Hand one batch from the first non-empty queue to the worker; 0 if all are empty.
        As an event source mapping with a batching window does, a batch is handed over once
        it is full or once the window has passed since its first message."""
        for url, arn in self._queues:
            messages = self._receive(url, r.WORKER_BATCH_SIZE)
            if not messages:
                continue
            closes = time.monotonic() + r.WORKER_BATCHING_WINDOW_SECONDS
            while len(messages) < r.WORKER_BATCH_SIZE and not self._halt.is_set():
                left = closes - time.monotonic()
                if left <= 0:
                    break
                more = self._receive(url, r.WORKER_BATCH_SIZE - len(messages))
                if more:
                    messages += more
                else:
                    self._halt.wait(min(IDLE_WAIT_SECONDS, left))
            self._deliver(url, arn, messages)
            return len(messages)
        return 0

    def _receive(self, url: str, count: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self._sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(count, SQS_MAX_MESSAGES),
            WaitTimeSeconds=0,
            AttributeNames=["All"],
        ).get("Messages", [])
        return messages

    def _deliver(self, url: str, arn: str, messages: list[dict[str, Any]]) -> None:
        try:
            answer = self._invoke(sqs_event(arn, messages)) or {}
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
        except Exception:
            logger.exception("worker failed; the batch will be retried")
            return
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), SQS_MAX_MESSAGES):  # (a batch holds ten at most)
            self._sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(done[start : start + SQS_MAX_MESSAGES])
                ],
            )


def stream_filter(patterns: Sequence[Mapping[str, Any]]) -> Callable[[dict[str, Any]], bool]:
    """The event source mapping's filter criteria: a record passes when any of ``patterns``
    matches it (see chronoq.aws.streams)."""

    def keep(record: dict[str, Any]) -> bool:
        return any(matches(pattern, record) for pattern in patterns)

    return keep


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A stream record as Lambda hands it over (instants as epoch seconds)."""
    document = json.dumps(
        {**record, "eventSourceARN": stream_arn},
        default=lambda value: value.timestamp() if isinstance(value, datetime) else str(value),
    )
    result: dict[str, Any] = json.loads(document)
    return result


#: Most stream records one GetRecords answers.
STREAM_READ_LIMIT = 1000


class StreamPoller(threading.Thread):
    """Feeds a function from a DynamoDB stream, like a stream event source mapping: new
    records only (LATEST), filtered, in batches; records the function reports as failed are
    retried up to ``max_retries`` times, then dropped. With a ``window`` (seconds), a batch is
    gathered until it is full or the window has passed since its first record, as a mapping's
    batching window does (the records are read again when it is handed over: a record is had
    only once delivered, so a stop meanwhile loses none)."""

    def __init__(
        self,
        streams: Any,
        stream_arn: str,
        invoke: Invoke,
        halt: threading.Event,
        keep: Callable[[dict[str, Any]], bool],
        batch_size: int,
        max_retries: int,
        window: float = 0.0,
        name: str = "stream-poller",
        caller: str = EVENT_SOURCES,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._streams = streams
        self._arn = stream_arn
        self._invoke = invoke
        self._halt = halt
        self._keep = keep
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._window = window
        self._caller = caller
        #: When the batch being gathered got its first record, per shard (monotonic).
        self._gathering: dict[str, float] = {}
        self._iterators: dict[str, str] = {}
        with calling_as(caller):
            self._discover("LATEST")

    def _discover(self, start: str) -> None:
        shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        for shard in shards:
            if shard["ShardId"] not in self._iterators:
                self._iterators[shard["ShardId"]] = self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard["ShardId"], ShardIteratorType=start
                )["ShardIterator"]

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                if not self.poll_once():
                    self._halt.wait(IDLE_WAIT_SECONDS * 4)
            except Exception:
                logger.exception("stream poller failed")
                self._halt.wait(1)

    def poll_once(self) -> int:
        with calling_as(self._caller):  # AWS's event source mapping makes these calls
            return self._poll_once()

    def _poll_once(self) -> int:
        self._discover("TRIM_HORIZON")  # shards opened since the start: read them whole
        seen = 0
        for shard, iterator in list(self._iterators.items()):
            answer = self._streams.get_records(ShardIterator=iterator, Limit=STREAM_READ_LIMIT)
            kept = [record for record in answer.get("Records", []) if self._keep(record)]
            if kept and self._gather(shard, len(kept), len(answer.get("Records", []))):
                continue  # (read again, with what came meanwhile, when the window closes)
            self._iterators[shard] = answer.get("NextShardIterator") or iterator
            records = [lambda_record(record, self._arn) for record in kept]
            for start in range(0, len(records), self._batch_size):
                self._deliver(records[start : start + self._batch_size])
            seen += len(answer.get("Records", []))
        return seen

    def _gather(self, shard: str, kept: int, read: int) -> bool:
        """Is the shard's batch still being gathered (its window open, not full)? If so,
        wait until the window closes (the poller reads again then, with what came
        meanwhile: two reads a window, however many records it gathers)."""
        if self._window <= 0:
            return False
        now = time.monotonic()
        started = self._gathering.setdefault(shard, now)
        left = started + self._window - now
        if left <= 0 or kept >= self._batch_size or read >= STREAM_READ_LIMIT:
            self._gathering.pop(shard, None)
            return False
        self._halt.wait(left)
        return True

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        for _ in range(self._max_retries + 1):
            try:
                answer = self._invoke({"Records": records}) or {}
            except Exception:
                logger.exception("stream batch failed; retrying it")
                continue
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
            records = [r for r in records if r["dynamodb"].get("SequenceNumber") in failed]
            if not records:
                return
        logger.error("dropping %d stream records after retries", len(records))
