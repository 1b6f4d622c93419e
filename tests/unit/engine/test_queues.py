"""chronoq local's run queues (chronoq.local.engine.queues): the SQS semantics chronoq relies
on (delay, visibility, receive counts, receipt handles, redrive, retention, long polling),
the errors SQS answers with, and durability across a close and a killed process. Time is a
fake clock the tests move.

Why this module is long: it is the SQS semantics the local queues keep
(chronoq/local/engine/queues.py is long for the same reason), a section per semantic, over one
fake clock."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from chronoq.local.engine import queues as engine_queues
from chronoq.local.engine.queues import QueuesSchemaError, SqliteQueues, attributes_md5

from tests.support import wait_for

#: Generous bound on a wait for another thread (it bounds a hang, not a speed).
PATIENCE_SECONDS = 10.0


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def move(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "file"])
def queues(
    request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path
) -> Iterator[SqliteQueues]:
    path = None if request.param == "memory" else tmp_path / "queues.db"
    service = SqliteQueues(path, clock.now)
    yield service
    service.close()


def make_queue(queues: SqliteQueues, name: str = "runs", **attributes: str) -> str:
    url: str = queues.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url


def queue_with_dead_letters(queues: SqliteQueues, max_receives: int) -> tuple[str, str]:
    """A queue redriving to a dead-letter queue after ``max_receives`` receives: both URLs."""
    dlq = make_queue(queues, "dead")
    arn = queues.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receives})
    return make_queue(queues, "runs", RedrivePolicy=policy), dlq


def receive(queues: SqliteQueues, url: str, **request: Any) -> list[dict[str, Any]]:
    request.setdefault("MaxNumberOfMessages", 10)
    messages: list[dict[str, Any]] = queues.receive_message(QueueUrl=url, **request).get(
        "Messages", []
    )
    return messages


def handles(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]


def bodies(messages: list[dict[str, Any]]) -> list[str]:
    return [m["Body"] for m in messages]


def counts(queues: SqliteQueues, url: str) -> dict[str, str]:
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes: dict[str, str] = queues.get_queue_attributes(QueueUrl=url, AttributeNames=names)[
        "Attributes"
    ]
    return attributes


def error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


# --- Delay, visibility, receive counts ------------------------------------------------------


def test_given_a_message_sent_with_a_delay_when_received_before_and_after_it_then_it_is_visible_only_after(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=30)

    assert receive(queues, url) == []
    assert counts(queues, url)["ApproximateNumberOfMessagesDelayed"] == "1"
    clock.move(29.999)
    assert receive(queues, url) == []
    clock.move(0.001)
    assert bodies(receive(queues, url)) == ["later"]


def test_given_a_queue_delay_when_a_message_is_sent_without_its_own_then_the_queue_delay_holds_it(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, DelaySeconds="10")
    queues.send_message(QueueUrl=url, MessageBody="held")
    queues.send_message(QueueUrl=url, MessageBody="now", DelaySeconds=0)

    assert bodies(receive(queues, url)) == ["now"]
    clock.move(10)
    assert bodies(receive(queues, url)) == ["held"]


def test_given_a_received_message_when_its_visibility_timeout_passes_then_it_is_delivered_again_with_its_receive_count_incremented(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, VisibilityTimeout="60")
    queues.send_message(QueueUrl=url, MessageBody="run")
    first = receive(queues, url, AttributeNames=["All"])
    clock.move(59)
    hidden = receive(queues, url)
    in_flight = counts(queues, url)["ApproximateNumberOfMessagesNotVisible"]
    clock.move(1)
    second = receive(queues, url, AttributeNames=["All"])

    assert hidden == []
    assert in_flight == "1"
    assert [m["Attributes"]["ApproximateReceiveCount"] for m in first + second] == ["1", "2"]
    assert second[0]["ReceiptHandle"] != first[0]["ReceiptHandle"]
    assert (
        second[0]["Attributes"]["ApproximateFirstReceiveTimestamp"]
        == first[0]["Attributes"]["ApproximateFirstReceiveTimestamp"]
    )


def test_given_a_visibility_timeout_in_the_receive_when_it_passes_then_it_overrides_the_queue_one(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, VisibilityTimeout="600")
    queues.send_message(QueueUrl=url, MessageBody="run")
    receive(queues, url, VisibilityTimeout=5)
    clock.move(5)

    assert bodies(receive(queues, url)) == ["run"]


def test_given_messages_sent_in_turn_when_received_one_at_a_time_then_the_oldest_visible_comes_first(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="due-later", DelaySeconds=20)
    for body in ("a", "b", "c"):
        queues.send_message(QueueUrl=url, MessageBody=body)
        clock.move(1)
    clock.move(30)

    received = [bodies(receive(queues, url, MaxNumberOfMessages=1)) for _ in range(5)]

    assert received == [["a"], ["b"], ["c"], ["due-later"], []]


def test_given_a_received_message_when_its_visibility_is_changed_to_zero_then_it_is_received_again_at_once(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues, VisibilityTimeout="600")
    queues.send_message(QueueUrl=url, MessageBody="handed back")
    (message,) = receive(queues, url)

    queues.change_message_visibility(
        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )

    assert bodies(receive(queues, url)) == ["handed back"]


def test_given_a_received_message_when_its_visibility_is_extended_in_a_batch_then_it_stays_hidden_until_then(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, VisibilityTimeout="10")
    queues.send_message(QueueUrl=url, MessageBody="long job")
    (message,) = receive(queues, url)

    answer = queues.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok", "ReceiptHandle": message["ReceiptHandle"], "VisibilityTimeout": 100},
            {"Id": "bad", "ReceiptHandle": "garbled", "VisibilityTimeout": 0},
        ],
    )
    clock.move(99)
    hidden = receive(queues, url)
    clock.move(1)

    assert [e["Id"] for e in answer["Successful"]] == ["ok"]
    assert [(e["Id"], e["Code"]) for e in answer["Failed"]] == [("bad", "ReceiptHandleIsInvalid")]
    assert hidden == []
    assert bodies(receive(queues, url)) == ["long job"]


def test_given_a_visible_message_when_its_visibility_is_changed_then_it_is_not_in_flight(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="run")
    (message,) = receive(queues, url, VisibilityTimeout=0)

    with pytest.raises(queues.exceptions.MessageNotInflight):
        queues.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=30
        )


# --- Receipt handles --------------------------------------------------------------------------


def test_given_a_message_received_twice_when_deleted_with_its_first_handle_then_it_stays_and_only_the_latest_deletes_it(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="run")
    (first,) = receive(queues, url, VisibilityTimeout=0)
    (second,) = receive(queues, url, VisibilityTimeout=0)

    queues.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    still_there = bodies(receive(queues, url, VisibilityTimeout=0))
    (third,) = receive(queues, url, VisibilityTimeout=0)
    queues.delete_message(QueueUrl=url, ReceiptHandle=third["ReceiptHandle"])

    assert still_there == ["run"]
    assert receive(queues, url) == []
    assert second["ReceiptHandle"] != first["ReceiptHandle"]


def test_given_a_stale_handle_when_changing_visibility_then_the_message_keeps_its_own(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="run")
    (first,) = receive(queues, url, VisibilityTimeout=0)
    receive(queues, url, VisibilityTimeout=60)

    queues.change_message_visibility(
        QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0
    )

    assert receive(queues, url) == []
    clock.move(60)
    assert bodies(receive(queues, url)) == ["run"]


def test_given_a_garbled_receipt_handle_when_deleting_then_it_is_invalid_alone_and_a_failed_entry_in_a_batch(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="run")
    (message,) = receive(queues, url)

    with pytest.raises(queues.exceptions.ReceiptHandleIsInvalid) as error:
        queues.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")
    answer = queues.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "good", "ReceiptHandle": message["ReceiptHandle"]},
            {"Id": "bad", "ReceiptHandle": "cq1-zz-1"},
        ],
    )

    assert error_code(error) == "ReceiptHandleIsInvalid"
    assert answer["Successful"] == [{"Id": "good"}]
    assert [(f["Id"], f["Code"], f["SenderFault"]) for f in answer["Failed"]] == [
        ("bad", "ReceiptHandleIsInvalid", True)
    ]
    assert counts(queues, url)["ApproximateNumberOfMessagesNotVisible"] == "0"


# --- Dead letters -------------------------------------------------------------------------------


def test_given_a_redrive_policy_when_a_message_was_received_max_receive_count_times_then_the_next_receive_moves_it_to_the_dead_letter_queue(
    queues: SqliteQueues,
) -> None:
    url, dlq = queue_with_dead_letters(queues, max_receives=2)
    attributes = {"owner": {"DataType": "String", "StringValue": "team-a"}}
    queues.send_message(
        QueueUrl=url, MessageBody="poison", MessageAttributes=attributes, MessageGroupId="team-a"
    )
    receive(queues, url, VisibilityTimeout=0)
    receive(queues, url, VisibilityTimeout=0)

    third = receive(queues, url)
    dead = receive(queues, dlq, AttributeNames=["All"], MessageAttributeNames=["All"])

    assert third == []
    assert bodies(dead) == ["poison"]
    assert dead[0]["MessageAttributes"] == attributes
    assert dead[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert dead[0]["Attributes"]["MessageGroupId"] == "team-a"


def test_given_a_spent_message_ahead_of_a_fresh_one_when_receiving_one_then_the_fresh_one_comes_and_the_spent_one_is_dead(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url, dlq = queue_with_dead_letters(queues, max_receives=1)
    queues.send_message(QueueUrl=url, MessageBody="poison")
    receive(queues, url, VisibilityTimeout=0)
    clock.move(1)
    queues.send_message(QueueUrl=url, MessageBody="fresh")

    received = bodies(receive(queues, url, MaxNumberOfMessages=1))

    assert received == ["fresh"]
    assert bodies(receive(queues, dlq)) == ["poison"]


def test_given_a_redrive_policy_naming_no_queue_when_creating_then_the_queue_does_not_exist(
    queues: SqliteQueues,
) -> None:
    policy = json.dumps(
        {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:nowhere", "maxReceiveCount": 3}
    )

    with pytest.raises(queues.exceptions.QueueDoesNotExist):
        queues.create_queue(QueueName="runs", Attributes={"RedrivePolicy": policy})
    assert "QueueUrls" not in queues.list_queues()


# --- Retention and purge ----------------------------------------------------------------------


def test_given_messages_past_their_retention_when_the_queue_is_read_then_they_are_dropped_for_good(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, MessageRetentionPeriod="60")
    queues.send_message(QueueUrl=url, MessageBody="old")
    clock.move(30)
    queues.send_message(QueueUrl=url, MessageBody="young")
    clock.move(31)

    received = bodies(receive(queues, url, VisibilityTimeout=0))
    # a longer retention now would bring back a message only hidden, not one deleted
    queues.set_queue_attributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "3600"})

    assert received == ["young"]
    assert bodies(receive(queues, url)) == ["young"]


def test_given_more_expired_messages_than_one_step_when_the_queue_is_read_then_they_go_in_bounded_steps(
    queues: SqliteQueues, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_queues, "RETENTION_STEP", 2)
    url = make_queue(queues, MessageRetentionPeriod="60")
    queues.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)]
    )
    clock.move(61)
    receive(queues, url)  # deletes two
    queues.set_queue_attributes(QueueUrl=url, Attributes={"MessageRetentionPeriod": "3600"})

    assert len(receive(queues, url)) == 3


def test_given_a_queue_with_messages_when_purged_then_none_is_left(queues: SqliteQueues) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="a")
    queues.send_message(QueueUrl=url, MessageBody="b", DelaySeconds=60)
    receive(queues, url, MaxNumberOfMessages=1)

    queues.purge_queue(QueueUrl=url)

    assert counts(queues, url) == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
        "ApproximateNumberOfMessagesDelayed": "0",
    }


# --- Batches and errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "error_name", "code"),
    [
        ([], "EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest"),
        (
            [{"Id": str(i), "MessageBody": "x"} for i in range(11)],
            "TooManyEntriesInBatchRequest",
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        ),
        (
            [{"Id": "same", "MessageBody": "x"}, {"Id": "same", "MessageBody": "y"}],
            "BatchEntryIdsNotDistinct",
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        ),
        (
            [{"Id": "not valid!", "MessageBody": "x"}],
            "InvalidBatchEntryId",
            "AWS.SimpleQueueService.InvalidBatchEntryId",
        ),
        (
            [{"Id": str(i), "MessageBody": "x" * 100_000} for i in range(3)],
            "BatchRequestTooLong",
            "AWS.SimpleQueueService.BatchRequestTooLong",
        ),
    ],
    ids=["empty", "eleven", "same-ids", "bad-id", "too-long"],
)
def test_given_a_malformed_batch_when_sent_then_it_is_refused_whole_with_the_sqs_error(
    queues: SqliteQueues, entries: list[dict[str, Any]], error_name: str, code: str
) -> None:
    url = make_queue(queues)

    with pytest.raises(getattr(queues.exceptions, error_name)) as error:
        queues.send_message_batch(QueueUrl=url, Entries=entries)

    assert error_code(error) == code
    assert receive(queues, url) == []


@pytest.mark.parametrize("method", ["delete_message_batch", "change_message_visibility_batch"])
@pytest.mark.parametrize(
    ("ids", "error_name"),
    [
        ([], "EmptyBatchRequest"),
        ([f"e{i}" for i in range(11)], "TooManyEntriesInBatchRequest"),
        (["same", "same"], "BatchEntryIdsNotDistinct"),
    ],
    ids=["empty", "eleven", "same-ids"],
)
def test_given_a_malformed_batch_of_handles_when_sent_then_it_is_refused_whole(
    queues: SqliteQueues, method: str, ids: list[str], error_name: str
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="run")
    (message,) = receive(queues, url)
    extra = {"VisibilityTimeout": 0} if method == "change_message_visibility_batch" else {}
    entries = [{"Id": i, "ReceiptHandle": message["ReceiptHandle"], **extra} for i in ids]

    with pytest.raises(getattr(queues.exceptions, error_name)):
        getattr(queues, method)(QueueUrl=url, Entries=entries)

    assert counts(queues, url)["ApproximateNumberOfMessagesNotVisible"] == "1"


def test_given_a_batch_with_one_bad_entry_when_sent_then_the_others_are_sent_and_it_alone_fails(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)

    answer = queues.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "a", "MessageBody": "hello"},
            {"Id": "b", "MessageBody": "x", "DelaySeconds": 901},
            {"Id": "c", "MessageBody": "bad \x01 character"},
        ],
    )

    assert [(s["Id"], s["MD5OfMessageBody"]) for s in answer["Successful"]] == [
        ("a", "5d41402abc4b2a76b9719d911017c592")
    ]
    assert [(f["Id"], f["Code"]) for f in answer["Failed"]] == [
        ("b", "InvalidParameterValue"),
        ("c", "InvalidMessageContents"),
    ]
    assert bodies(receive(queues, url)) == ["hello"]


def test_given_message_attributes_when_sent_and_received_then_their_md5_is_the_one_sqs_computes(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    attributes: dict[str, dict[str, Any]] = {
        "a": {"DataType": "String", "StringValue": "v"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
    }

    sent = queues.send_message(QueueUrl=url, MessageBody="hello", MessageAttributes=attributes)
    (message,) = receive(queues, url, MessageAttributeNames=["All"])

    # (the value SQS gives for the attribute "a" alone, as moto reproduces it)
    assert attributes_md5({"a": attributes["a"]}) == "a18cbb58171ebf4ce88d9fb787f9210b"
    assert sent["MD5OfMessageAttributes"] == attributes_md5(attributes)
    assert message["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert message["MessageAttributes"] == attributes


def test_given_a_receive_naming_some_attributes_when_received_then_only_those_come(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    queues.send_message(
        QueueUrl=url,
        MessageBody="run",
        MessageGroupId="owner-1",
        MessageAttributes={
            "trace.id": {"DataType": "String", "StringValue": "t"},
            "kind": {"DataType": "String", "StringValue": "k"},
        },
    )

    (message,) = receive(
        queues,
        url,
        MessageSystemAttributeNames=["ApproximateReceiveCount", "MessageGroupId"],
        MessageAttributeNames=["trace.*"],
    )

    assert message["Attributes"] == {"ApproximateReceiveCount": "1", "MessageGroupId": "owner-1"}
    assert list(message["MessageAttributes"]) == ["trace.id"]


@pytest.mark.parametrize(
    "request_",
    [{"MaxNumberOfMessages": 11}, {"MaxNumberOfMessages": 0}, {"WaitTimeSeconds": 21}],
    ids=["eleven", "none", "long-wait"],
)
def test_given_an_out_of_range_receive_when_made_then_the_parameter_is_invalid(
    queues: SqliteQueues, request_: dict[str, Any]
) -> None:
    url = make_queue(queues)

    with pytest.raises(queues.exceptions.InvalidParameterValue) as error:
        queues.receive_message(QueueUrl=url, **request_)

    assert error_code(error) == "InvalidParameterValue"


def test_given_no_such_queue_when_called_then_the_queue_does_not_exist_as_sqs_says(
    queues: SqliteQueues,
) -> None:
    missing = "https://sqs.us-east-1.amazonaws.com/123456789012/missing"

    with pytest.raises(queues.exceptions.QueueDoesNotExist) as by_name:
        queues.get_queue_url(QueueName="missing")
    with pytest.raises(queues.exceptions.QueueDoesNotExist) as by_url:
        queues.send_message(QueueUrl=missing, MessageBody="x")

    assert error_code(by_name) == error_code(by_url) == "AWS.SimpleQueueService.NonExistentQueue"
    assert dict(by_url.value.response["Error"]).get("QueryErrorCode") == "QueueDoesNotExist"
    assert by_url.value.operation_name == "SendMessage"


# --- Queues ------------------------------------------------------------------------------------


def test_given_a_queue_when_created_again_with_the_same_attributes_then_it_is_the_same_and_with_others_it_is_refused(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues, VisibilityTimeout="180")

    again = make_queue(queues, VisibilityTimeout="180")
    with pytest.raises(queues.exceptions.QueueNameExists) as error:
        make_queue(queues, VisibilityTimeout="30")

    assert again == url == "https://sqs.us-east-1.amazonaws.com/123456789012/runs"
    assert error_code(error) == "QueueAlreadyExists"
    assert queues.get_queue_url(QueueName="runs") == {"QueueUrl": url}


def test_given_queues_when_listed_with_a_prefix_then_only_theirs_come(queues: SqliteQueues) -> None:
    for name in ("runs-high", "runs-low", "other"):
        make_queue(queues, name)

    listed = queues.list_queues(QueueNamePrefix="runs-")["QueueUrls"]

    assert [u.rsplit("/", 1)[-1] for u in listed] == ["runs-high", "runs-low"]


def test_given_a_queue_when_its_attributes_are_set_and_read_then_they_are_answered_as_sqs_does(
    queues: SqliteQueues,
) -> None:
    url, _ = queue_with_dead_letters(queues, max_receives=5)

    queues.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "45"})
    attributes = queues.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    with pytest.raises(queues.exceptions.InvalidAttributeValue):
        queues.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "-1"})
    with pytest.raises(queues.exceptions.InvalidAttributeName):
        queues.set_queue_attributes(QueueUrl=url, Attributes={"Colour": "blue"})

    assert attributes["VisibilityTimeout"] == "45"
    assert attributes["QueueArn"] == "arn:aws:sqs:us-east-1:123456789012:runs"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:dead",
        "maxReceiveCount": 5,
    }


def test_given_an_observer_when_calls_succeed_and_fail_then_it_hears_each_with_its_request_and_answer(
    clock: FakeClock,
) -> None:
    heard: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    queues = SqliteQueues(None, clock.now, observer=lambda *call: heard.append(call))
    url = make_queue(queues)

    sent = queues.send_message(QueueUrl=url, MessageBody="x")
    with pytest.raises(queues.exceptions.ReceiptHandleIsInvalid):
        queues.delete_message(QueueUrl=url, ReceiptHandle="garbled")

    assert [h[0] for h in heard] == ["sqs:CreateQueue", "sqs:SendMessage", "sqs:DeleteMessage"]
    assert heard[1][1] == {"QueueUrl": url, "MessageBody": "x"}
    assert heard[1][2] is sent
    assert heard[2][2]["Error"]["Code"] == "ReceiptHandleIsInvalid"


# --- Long polling -------------------------------------------------------------------------------


class Receiver(threading.Thread):
    """A long-polling receive in its own thread."""

    def __init__(self, queues: SqliteQueues, url: str, wait_seconds: int = 20) -> None:
        super().__init__(daemon=True)
        self._queues = queues
        self._url = url
        self._wait = wait_seconds
        self.answer: dict[str, Any] | None = None

    def run(self) -> None:
        self.answer = self._queues.receive_message(
            QueueUrl=self._url, WaitTimeSeconds=self._wait, MaxNumberOfMessages=10
        )

    def started_waiting(self) -> Receiver:
        """Start, and return once the receive is in its long poll."""
        self.start()
        wait_for(lambda: self._queues.waiting, timeout=PATIENCE_SECONDS, interval=0.001)
        return self

    def result(self) -> dict[str, Any]:
        self.join(PATIENCE_SECONDS)
        assert not self.is_alive(), "the long poll did not return"
        assert self.answer is not None
        return self.answer


@pytest.fixture
def no_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long poll looks again only when told (its periodic look is longer than any test)."""
    monkeypatch.setattr(engine_queues, "LONG_POLL_LOOK_SECONDS", 60.0)


@pytest.mark.usefixtures("no_polling")
def test_given_a_long_poll_when_another_thread_sends_then_it_returns_the_message(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    receiver = Receiver(queues, url).started_waiting()

    queues.send_message(QueueUrl=url, MessageBody="arrived")

    assert bodies(receiver.result()["Messages"]) == ["arrived"]


@pytest.mark.usefixtures("no_polling")
def test_given_a_long_poll_on_a_delayed_message_when_the_clock_moves_and_wakes_it_then_it_returns_the_message(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="due", DelaySeconds=5)
    receiver = Receiver(queues, url).started_waiting()

    clock.move(5)
    queues.wake()

    assert bodies(receiver.result()["Messages"]) == ["due"]


@pytest.mark.usefixtures("no_polling")
def test_given_a_long_poll_when_the_clock_passes_its_end_then_it_returns_empty(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    receiver = Receiver(queues, url, wait_seconds=2).started_waiting()

    clock.move(2)
    queues.wake()

    assert receiver.result() == {}


def test_given_a_long_poll_on_a_clock_that_moves_untold_when_a_delayed_message_is_due_then_it_returns_it(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    queues.send_message(QueueUrl=url, MessageBody="due", DelaySeconds=5)
    receiver = Receiver(queues, url).started_waiting()

    clock.move(5)  # no wake: the poll looks again by itself

    assert bodies(receiver.result()["Messages"]) == ["due"]


@pytest.mark.usefixtures("no_polling")
def test_given_a_long_poll_when_the_queues_close_then_it_returns_empty(
    clock: FakeClock,
) -> None:
    queues = SqliteQueues(None, clock.now)
    url = make_queue(queues)
    receiver = Receiver(queues, url).started_waiting()

    queues.close()

    assert receiver.result() == {}


def test_given_threads_sending_and_receiving_at_once_when_all_is_drained_then_each_message_came_exactly_once(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues, VisibilityTimeout="600")
    expected = sorted(f"{sender}-{i}" for sender in range(4) for i in range(100))
    received: list[str] = []

    def send(sender: int) -> None:
        for start in range(0, 100, 10):
            entries = [{"Id": str(i), "MessageBody": f"{sender}-{start + i}"} for i in range(10)]
            queues.send_message_batch(QueueUrl=url, Entries=entries)

    def drain() -> None:
        while len(received) < len(expected):
            messages = receive(queues, url, WaitTimeSeconds=1)
            received.extend(bodies(messages))
            if messages:
                queues.delete_message_batch(QueueUrl=url, Entries=handles(messages))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=drain) for _ in range(2)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(received) >= len(expected), timeout=PATIENCE_SECONDS, interval=0.01)

    def ended() -> bool:
        # a drainer still polling an empty queue (it may only now begin to): its wait ends
        clock.move(1)
        queues.wake()
        return not any(t.is_alive() for t in threads)

    wait_for(ended, timeout=PATIENCE_SECONDS, interval=0.01)
    assert sorted(received) == expected


# --- Durability -------------------------------------------------------------------------------


def test_given_a_file_database_when_closed_and_reopened_then_its_queues_and_messages_are_there(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "queues.db"
    first = SqliteQueues(path, clock.now)
    url, dlq = queue_with_dead_letters(first, max_receives=1)
    first.send_message(QueueUrl=url, MessageBody="kept")
    receive(first, url, VisibilityTimeout=0)
    first.close()

    second = SqliteQueues(path, clock.now)
    later = receive(second, url)  # already received once: redriven
    dead = bodies(receive(second, dlq))
    second.close()

    assert later == []
    assert dead == ["kept"]


def test_given_a_redrive_set_later_to_a_newer_queue_when_reopened_then_it_still_redrives(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "queues.db"
    first = SqliteQueues(path, clock.now)
    url = make_queue(first, "runs")
    dlq = make_queue(first, "dead")
    arn = "arn:aws:sqs:us-east-1:123456789012:dead"
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 1})
    first.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": policy})
    first.send_message(QueueUrl=url, MessageBody="poison")
    receive(first, url, VisibilityTimeout=0)
    first.close()

    second = SqliteQueues(path, clock.now)
    later = receive(second, url)
    dead = bodies(receive(second, dlq))
    second.close()

    assert later == []
    assert dead == ["poison"]


CRASHING_SENDER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from chronoq.local.engine.queues import SqliteQueues

queues = SqliteQueues(Path(sys.argv[1]), lambda: datetime.now(UTC))
url = queues.create_queue(QueueName="runs")["QueueUrl"]
queues.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "survives"}])
print("sent", flush=True)
sys.stdin.read()
"""


def test_given_a_process_killed_right_after_its_send_answered_when_the_database_is_reopened_then_the_message_is_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "queues.db"
    with subprocess.Popen(
        [sys.executable, "-c", CRASHING_SENDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as sender:
        assert sender.stdout is not None
        line = sender.stdout.readline()
        sender.send_signal(signal.SIGKILL)
        sender.wait(PATIENCE_SECONDS)

    queues = SqliteQueues(path, lambda: datetime.now(UTC))
    url = queues.get_queue_url(QueueName="runs")["QueueUrl"]

    assert line == "sent\n"
    assert sender.returncode == -signal.SIGKILL
    assert bodies(receive(queues, url)) == ["survives"]
    queues.close()


def test_given_a_database_of_a_newer_schema_when_opened_then_it_is_refused_clearly(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "queues.db"
    SqliteQueues(path, clock.now).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {engine_queues.SCHEMA_VERSION + 1}")

    with pytest.raises(QueuesSchemaError, match="schema version 2"):
        SqliteQueues(path, clock.now)


# --- fair receives: message groups (owners) served in turn ------------------------------------


def send_as(queues: SqliteQueues, url: str, group: str | None, *texts: str) -> None:
    for text in texts:
        queues.send_message(
            QueueUrl=url, MessageBody=text, **({"MessageGroupId": group} if group else {})
        )


def test_given_one_groups_backlog_when_another_group_sends_then_its_messages_come_in_the_next_receive(
    queues: SqliteQueues, clock: FakeClock
) -> None:
    url = make_queue(queues)
    send_as(queues, url, "alice", *(f"alice-{n}" for n in range(100)))
    clock.move(1)
    send_as(queues, url, "bob", "bob-0", "bob-1")

    first = bodies(receive(queues, url, MaxNumberOfMessages=4))

    # one of each group in turn, the longest visible first within each
    assert sorted(first) == ["alice-0", "alice-1", "bob-0", "bob-1"]


def test_given_three_groups_when_received_one_at_a_time_then_they_are_served_in_turn(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    send_as(queues, url, "carol", "c0", "c1")
    send_as(queues, url, "alice", "a0", "a1", "a2")
    send_as(queues, url, "bob", "b0")

    served = [bodies(receive(queues, url, MaxNumberOfMessages=1)) for _ in range(6)]

    assert served == [["a0"], ["b0"], ["c0"], ["a1"], ["c1"], ["a2"]]


def test_given_one_group_alone_when_received_then_it_gets_every_message_it_has(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    send_as(queues, url, "alice", *(f"a{n}" for n in range(10)))

    assert bodies(receive(queues, url)) == [f"a{n}" for n in range(10)]


def test_given_messages_without_a_group_when_received_then_they_take_their_turn_as_one_group(
    queues: SqliteQueues,
) -> None:
    url = make_queue(queues)
    send_as(queues, url, None, "n0", "n1", "n2")
    send_as(queues, url, "alice", "a0", "a1", "a2")

    assert sorted(bodies(receive(queues, url, MaxNumberOfMessages=4))) == ["a0", "a1", "n0", "n1"]


def test_given_first_groups_when_received_then_theirs_come_before_every_other_groups_in_each_turn(
    clock: FakeClock,
) -> None:
    queues = SqliteQueues(None, clock.now, first_groups=frozenset({"chronoq:system"}))
    url = make_queue(queues)
    send_as(queues, url, "alice", *(f"a{n}" for n in range(5)))
    send_as(queues, url, "bob", "b0")
    send_as(queues, url, "chronoq:system", "heartbeat")

    served = [bodies(receive(queues, url, MaxNumberOfMessages=1)) for _ in range(3)]

    assert served == [["heartbeat"], ["a0"], ["b0"]]
    queues.close()
