"""chronoq local's run queues (chronoq.local.engine.queues) against moto's SQS: the same calls
to both, their answers compared on what chronoq and its pollers read (URLs, bodies, MD5s,
attribute names, Successful and Failed entries, error codes). Timing is the unit tests'
subject (moto judges it by the wall clock): here every delay is zero, and visibility
timeouts are zero or far off."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from chronoq.local.engine.queues import SqliteQueues
from moto import mock_aws

from tests.support import wait_for

ACCOUNT_URL = "https://sqs.us-east-1.amazonaws.com/123456789012"
ATTRIBUTES = {
    "owner": {"DataType": "String", "StringValue": "team-a"},
    "size": {"DataType": "Number", "StringValue": "3"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
}


def answer_of(call: Callable[[], Any]) -> Any:
    """What a call answered, without boto3's response metadata; an error as its code."""
    try:
        answer = call()
    except ClientError as error:
        return {"Error": error.response["Error"]["Code"]}
    if isinstance(answer, dict):
        answer.pop("ResponseMetadata", None)
    return answer


class Pair:
    """moto's SQS client and chronoq's queues, called alike (moto's answer first)."""

    def __init__(self, moto: Any, engine: SqliteQueues) -> None:
        self.clients = (moto, engine)

    def call(self, method: str, **request: Any) -> tuple[Any, Any]:
        moto, engine = self.clients
        return (
            answer_of(lambda: getattr(moto, method)(**request)),
            answer_of(lambda: getattr(engine, method)(**request)),
        )

    def each(self, values: tuple[Any, Any], call: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
        """``call(client, value)`` with each client's own value (such as the messages it
        answered with, whose receipt handles differ)."""
        moto, engine = self.clients
        return (
            answer_of(lambda: call(moto, values[0])),
            answer_of(lambda: call(engine, values[1])),
        )

    def same(self, method: str, **request: Any) -> Any:
        """Call both; they must answer alike. Returns the answer."""
        moto, engine = self.call(method, **request)
        assert engine == moto
        return engine

    def queue(self, name: str, **attributes: str) -> str:
        url: str = self.same("create_queue", QueueName=name, Attributes=attributes)["QueueUrl"]
        return url

    def queue_with_dead_letters(self, max_receives: int) -> tuple[str, str]:
        dlq = self.queue("dead")
        arn = self.same("get_queue_attributes", QueueUrl=dlq, AttributeNames=["QueueArn"])
        policy = {
            "deadLetterTargetArn": arn["Attributes"]["QueueArn"],
            "maxReceiveCount": max_receives,
        }
        return self.queue("runs", VisibilityTimeout="600", RedrivePolicy=json.dumps(policy)), dlq

    def receive(
        self, url: str, **request: Any
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        moto, engine = self.call("receive_message", QueueUrl=url, MaxNumberOfMessages=10, **request)
        return moto.get("Messages", []), engine.get("Messages", [])


@pytest.fixture
def pair() -> Iterator[Pair]:
    with mock_aws():
        engine = SqliteQueues(None, lambda: datetime.now(UTC))
        yield Pair(boto3.client("sqs", region_name="us-east-1"), engine)
        engine.close()


def seen(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a receiver reads of messages, by body."""
    return sorted(
        (
            m["Body"],
            m["MD5OfBody"],
            sorted(m.get("Attributes", {})),
            m.get("Attributes", {}).get("ApproximateReceiveCount"),
            m.get("Attributes", {}).get("MessageGroupId"),
            m.get("MessageAttributes"),
            m.get("MD5OfMessageAttributes"),
        )
        for m in messages
    )


def handles(messages: list[dict[str, Any]], body: str | None = None) -> list[dict[str, str]]:
    return [
        {"Id": f"e{i}", "ReceiptHandle": m["ReceiptHandle"]}
        for i, m in enumerate(messages)
        if body is None or m["Body"] == body
    ]


def test_given_both_when_queues_are_made_with_a_redrive_policy_then_urls_and_attributes_agree(
    pair: Pair,
) -> None:
    url, dlq = pair.queue_with_dead_letters(max_receives=3)
    moto, engine = pair.call("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])
    again = pair.same("create_queue", QueueName="runs", Attributes={"VisibilityTimeout": "600"})
    other = pair.same("create_queue", QueueName="runs", Attributes={"VisibilityTimeout": "30"})
    listed = pair.same("list_queues", QueueNamePrefix="ru")

    assert (url, dlq) == (f"{ACCOUNT_URL}/runs", f"{ACCOUNT_URL}/dead")
    assert sorted(engine["Attributes"]) == sorted(moto["Attributes"])
    for name in ("QueueArn", "VisibilityTimeout", "DelaySeconds", "MessageRetentionPeriod"):
        assert engine["Attributes"][name] == moto["Attributes"][name], name
    assert json.loads(engine["Attributes"]["RedrivePolicy"]) == json.loads(
        moto["Attributes"]["RedrivePolicy"]
    )
    assert again == {"QueueUrl": url}
    assert other == {"Error": "QueueAlreadyExists"}
    assert listed == {"QueueUrls": [url]}


def test_given_both_when_a_batch_with_attributes_is_sent_and_received_then_ids_md5s_and_what_is_read_agree(
    pair: Pair,
) -> None:
    url = pair.queue("runs", VisibilityTimeout="600")
    entries = [
        {"Id": "plain", "MessageBody": '{"run": 1}', "DelaySeconds": 0},
        {"Id": "with-attributes", "MessageBody": "héllo ✓", "MessageAttributes": ATTRIBUTES},
        {"Id": "grouped", "MessageBody": "owned", "MessageGroupId": "team-a"},
    ]

    moto_sent, engine_sent = pair.call("send_message_batch", QueueUrl=url, Entries=entries)
    moto, engine = pair.receive(url, AttributeNames=["All"], MessageAttributeNames=["All"])
    counts = pair.same(
        "get_queue_attributes",
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )

    def sent(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (s["Id"], s["MD5OfMessageBody"], s.get("MD5OfMessageAttributes"))
            for s in answer["Successful"]
        ]

    assert sent(engine_sent) == sent(moto_sent)
    assert engine_sent["Failed"] == moto_sent["Failed"] == []
    assert len(engine) == 3
    assert seen(engine) == seen(moto)
    assert counts["Attributes"] == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "3",
    }


def test_given_both_when_received_messages_are_deleted_and_one_is_handed_back_then_that_one_alone_comes_again(
    pair: Pair,
) -> None:
    url = pair.queue("runs", VisibilityTimeout="600")
    pair.call(
        "send_message_batch",
        QueueUrl=url,
        Entries=[{"Id": b, "MessageBody": b} for b in ("done", "also-done", "retry")],
    )
    received = pair.receive(url)

    deleted = pair.each(
        received,
        lambda client, messages: client.delete_message_batch(
            QueueUrl=url, Entries=handles([m for m in messages if m["Body"] != "retry"])
        ),
    )
    handed_back = pair.each(
        received,
        lambda client, messages: client.change_message_visibility(
            QueueUrl=url,
            ReceiptHandle=handles(messages, "retry")[0]["ReceiptHandle"],
            VisibilityTimeout=0,
        ),
    )
    # (moto shows a message handed back only once its clock has passed the millisecond it
    # was handed back in; SQS itself promises no receive sees it at once: look until it does)
    moto, engine = pair.clients
    request = {
        "QueueUrl": url,
        "MaxNumberOfMessages": 10,
        "AttributeNames": ["ApproximateReceiveCount"],
    }
    again = (
        wait_for(lambda: moto.receive_message(**request).get("Messages")),
        engine.receive_message(**request).get("Messages", []),
    )

    assert [sorted(s["Id"] for s in d["Successful"]) for d in deleted] == [["e0", "e1"]] * 2
    assert handed_back == ({}, {})
    assert seen(again[1]) == seen(again[0])
    assert [m["Body"] for m in again[1]] == ["retry"]


def test_given_both_when_a_message_is_received_as_often_as_the_redrive_policy_allows_then_the_next_receive_moves_it_to_the_dead_letter_queue(
    pair: Pair,
) -> None:
    url, dlq = pair.queue_with_dead_letters(max_receives=2)
    pair.call("send_message", QueueUrl=url, MessageBody="poison", MessageAttributes=ATTRIBUTES)
    receives = [pair.receive(url, VisibilityTimeout=0) for _ in range(3)]
    dead = pair.receive(dlq, MessageAttributeNames=["All"])

    assert [[len(m) for m in r] for r in receives] == [[1, 1], [1, 1], [0, 0]]
    # (moto keeps the receive count in the dead-letter queue; chronoq's queues start it again)
    assert [[(m["Body"], m["MessageAttributes"]) for m in d] for d in dead] == [
        [("poison", ATTRIBUTES)]
    ] * 2


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [{"Id": str(i), "MessageBody": "x"} for i in range(11)],
        [{"Id": "same", "MessageBody": "x"}, {"Id": "same", "MessageBody": "y"}],
        [{"Id": "not valid!", "MessageBody": "x"}],
        [{"Id": str(i), "MessageBody": "x" * 400_000} for i in range(3)],
    ],
    ids=["empty", "eleven", "same-ids", "bad-id", "over-a-mebibyte"],
)
def test_given_both_when_a_malformed_batch_is_sent_then_both_refuse_it_with_the_same_code(
    pair: Pair, entries: list[dict[str, Any]]
) -> None:
    url = pair.queue("runs")

    refused = pair.same("send_message_batch", QueueUrl=url, Entries=entries)

    assert "Error" in refused
    assert pair.receive(url) == ([], [])


@pytest.mark.parametrize("method", ["delete_message_batch", "change_message_visibility_batch"])
def test_given_both_when_a_batch_has_a_garbled_handle_then_it_alone_fails_with_the_same_code(
    pair: Pair, method: str
) -> None:
    url = pair.queue("runs")
    pair.call("send_message", QueueUrl=url, MessageBody="run")
    received = pair.receive(url)
    extra = {"VisibilityTimeout": 0} if method == "change_message_visibility_batch" else {}

    answers = pair.each(
        received,
        lambda client, messages: getattr(client, method)(
            QueueUrl=url,
            Entries=[
                {"Id": "good", "ReceiptHandle": messages[0]["ReceiptHandle"], **extra},
                {"Id": "bad", "ReceiptHandle": "garbled", **extra},
            ],
        ),
    )

    for answer in answers:
        assert answer["Successful"] == [{"Id": "good"}]
        assert [(f["Id"], f["Code"], f["SenderFault"]) for f in answer["Failed"]] == [
            ("bad", "ReceiptHandleIsInvalid", True)
        ]
    # (moto checks neither these batches' size nor their ids: see the unit tests)


def test_given_both_when_a_batch_has_an_entry_delayed_too_long_then_it_alone_fails_with_the_same_code(
    pair: Pair,
) -> None:
    url = pair.queue("runs")
    entries = [
        {"Id": "ok", "MessageBody": "x"},
        {"Id": "late", "MessageBody": "y", "DelaySeconds": 901},
    ]

    moto, engine = pair.call("send_message_batch", QueueUrl=url, Entries=entries)

    assert [s["Id"] for s in engine["Successful"]] == [s["Id"] for s in moto["Successful"]]
    assert [(f["Id"], f["Code"]) for f in engine["Failed"]] == [
        (f["Id"], f["Code"]) for f in moto["Failed"]
    ]
    assert [f["Id"] for f in engine["Failed"]] == ["late"]


def test_given_both_when_a_missing_queue_or_a_bad_parameter_is_named_then_both_answer_the_same_error(
    pair: Pair,
) -> None:
    url = pair.queue("runs")
    missing = f"{ACCOUNT_URL}/missing"

    answers = [
        pair.same("get_queue_url", QueueName="missing"),
        pair.same("send_message", QueueUrl=missing, MessageBody="x"),
        pair.same("receive_message", QueueUrl=missing),
        pair.same("purge_queue", QueueUrl=missing),
        pair.same("get_queue_attributes", QueueUrl=missing, AttributeNames=["All"]),
        pair.same("receive_message", QueueUrl=url, MaxNumberOfMessages=11),
        pair.same("send_message", QueueUrl=url, MessageBody="x", DelaySeconds=901),
        pair.same("delete_message", QueueUrl=url, ReceiptHandle="garbled"),
    ]

    assert [a["Error"] for a in answers] == [
        *["AWS.SimpleQueueService.NonExistentQueue"] * 5,
        "InvalidParameterValue",
        "InvalidParameterValue",
        "ReceiptHandleIsInvalid",
    ]


def test_given_both_when_a_queue_with_messages_is_purged_then_both_count_none(pair: Pair) -> None:
    url = pair.queue("runs")
    pair.call("send_message_batch", QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}])
    pair.receive(url)
    pair.call("send_message", QueueUrl=url, MessageBody="b")

    purged = pair.same("purge_queue", QueueUrl=url)
    counts = pair.same(
        "get_queue_attributes",
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )

    assert purged == {}
    assert set(counts["Attributes"].values()) == {"0"}
