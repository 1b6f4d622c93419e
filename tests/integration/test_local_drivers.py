"""chronoq local's SQS event source mapping (QueuePoller): batches as AWS hands them over
with a batching window: full at WORKER_BATCH_SIZE, or once the window has passed."""

from __future__ import annotations

import threading
import time
from typing import Any

from chronoq import resources as r
from chronoq.local.drivers import QueuePoller, Ticker, queue_pollers

from tests.integration.conftest import Harness
from tests.support import wait_for


def _send(harness: Harness, url: str, count: int) -> None:
    sqs = harness.aws.client("sqs")
    for start in range(0, count, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "MessageBody": f'{{"n": {i}}}'}
                for i in range(start, min(count, start + 10))
            ],
        )


def _poller(harness: Harness, url: str, batches: list[list[dict[str, Any]]]) -> QueuePoller:
    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        batches.append(event["Records"])
        return {"batchItemFailures": []}

    return QueuePoller(harness.aws.client("sqs"), [url], invoke, threading.Event(), "test")


def test_given_more_messages_than_one_receive_answers_when_polled_then_one_batch_holds_them_up_to_the_batch_size(
    harness: Harness,
) -> None:
    url = harness.aws.queue_urls["normal"]
    _send(harness, url, r.WORKER_BATCH_SIZE + 5)
    batches: list[list[dict[str, Any]]] = []
    poller = _poller(harness, url, batches)

    assert poller.poll_once() == r.WORKER_BATCH_SIZE
    assert poller.poll_once() == 5

    assert [len(b) for b in batches] == [r.WORKER_BATCH_SIZE, 5]
    bodies = {record["body"] for batch in batches for record in batch}
    assert len(bodies) == r.WORKER_BATCH_SIZE + 5


def test_given_a_batch_that_does_not_fill_when_polled_then_it_is_handed_over_once_the_window_has_passed(
    harness: Harness,
) -> None:
    url = harness.aws.queue_urls["normal"]
    _send(harness, url, 3)
    batches: list[list[dict[str, Any]]] = []
    poller = _poller(harness, url, batches)

    started = time.monotonic()
    assert poller.poll_once() == 3
    assert time.monotonic() - started >= r.WORKER_BATCHING_WINDOW_SECONDS
    assert poller.poll_once() == 0
    assert [len(b) for b in batches] == [3]


def test_given_groups_of_shards_when_the_ticker_ticks_then_the_dispatcher_is_invoked_once_per_group() -> (
    None
):
    events: list[dict[str, Any]] = []
    groups = r.shard_groups(8, 3)
    ticker = Ticker(events.append, 60, threading.Event(), groups)

    ticker.tick()

    assert sorted(e["shards"] for e in events) == sorted(groups)
    assert sorted(s for e in events for s in e["shards"]) == list(range(8))


def test_given_a_backlog_on_one_queue_and_busy_workers_when_polled_then_another_queues_message_is_still_delivered(
    harness: Harness,
) -> None:
    """Each queue has pollers of its own (as its own event source mapping on AWS): while
    every worker taking the high queue's backlog is busy, a normal run is handed over."""
    high, normal = harness.aws.queue_urls["high"], harness.aws.queue_urls["normal"]
    _send(harness, high, 3 * r.WORKER_BATCH_SIZE)
    release = threading.Event()
    delivered: list[str] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        source = event["Records"][0]["eventSourceARN"]
        if source.endswith("high"):
            release.wait(30)  # (the high queue's workers stay busy)
        delivered.append(source.rsplit(":", 1)[-1])
        return {"batchItemFailures": []}

    halt = threading.Event()
    pollers = queue_pollers(harness.aws.client("sqs"), [high, normal], invoke, halt, 2)
    for poller in pollers:
        poller.start()
    try:
        _send(harness, normal, 1)

        assert wait_for(lambda: delivered) == ["chronoq-local-runsnormal"]
    finally:
        release.set()
        halt.set()
        for poller in pollers:
            poller.join(5)
