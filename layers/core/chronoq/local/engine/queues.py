"""chronoq local's run queues: the subset of the SQS API chronoq uses, answered in-process
over one SQLite database, durable and fast.

``SqliteQueues`` takes the calls ``chronoq.aws.queues.SqsQueues`` and the local pollers
(``chronoq.local.drivers.QueuePoller``) make to a boto3 SQS client, with the same method
names, keyword arguments, answer shapes and error codes, so that chronoq's own code runs
unchanged against it. It keeps what chronoq relies on from SQS: per-message delays, the
visibility timeout and its changes, receive counts, receipt handles (only the latest one of a
message deletes it), redrive to a dead-letter queue after ``maxReceiveCount`` receives,
retention, purges and long polling. A send that answered is on disk (WAL): a killed process
loses none. Every decision on time takes the injected clock, so a test moves time instead of
waiting for it.

Order: a queue serves first the message that has been visible the longest (then the one sent
first): the oldest run due goes to a worker first, which chronoq's lag measurement assumes.

Why this module is long: it is the SQS semantics chronoq relies on (delays, visibility, receive
counts, receipt handles, redrive, retention, purges, long polling) with SQS's own parameter
checks and error codes, all over one SQLite schema under one lock; a third of it mirrors SQS's
errors and validation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from botocore.exceptions import ClientError, ParamValidationError

from chronoq.local.engine.schema import NewerSchema, Step, connect, statements

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]
Clock = Callable[[], datetime]
Answer = dict[str, Any]

#: The schema this code writes, kept in PRAGMA user_version: one per step of STEPS (see
#: chronoq.local.engine.schema).
SCHEMA_VERSION = 1
#: Most entries in one batch request.
MAX_BATCH_ENTRIES = 10
#: A queue's largest message, and largest batch, unless its MaximumMessageSize says otherwise
#: (stricter than AWS's 1 MiB: what passes here passes there).
MAX_MESSAGE_BYTES = 262_144
#: Longest real wait of a long poll before it looks at the clock again (a test's clock may
#: move without telling).
LONG_POLL_LOOK_SECONDS = 0.1
#: Most expired messages one look at a queue deletes (retention works in small steps).
RETENTION_STEP = 100
#: How often (clock milliseconds) a queue in use is looked at for expired messages.
RETENTION_EVERY_MS = 1000
#: Who sent every message, as the SenderId system attribute says.
SENDER_ID = "AIDACHRONOQLOCALSENDER"

_SCHEMA = """
CREATE TABLE queues (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    attributes TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    modified_at INTEGER NOT NULL
);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    queue INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    body TEXT NOT NULL,
    body_md5 TEXT NOT NULL,
    attributes TEXT,
    attributes_md5 TEXT,
    group_id TEXT,
    sent_at INTEGER NOT NULL,
    visible_at INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    first_received_at INTEGER,
    receipt INTEGER
);
CREATE INDEX messages_ready ON messages (queue, visible_at);
CREATE INDEX messages_sent ON messages (queue, sent_at);
CREATE INDEX messages_in_flight ON messages (queue, visible_at) WHERE receive_count > 0;
CREATE INDEX messages_group ON messages (queue, group_id, visible_at)
    WHERE group_id IS NOT NULL;
"""
#: The steps of the database's layout (see chronoq.local.engine.schema).
STEPS: tuple[Step, ...] = (statements(_SCHEMA),)


_INSERT = (
    "INSERT INTO messages (queue, message_id, body, body_md5, attributes, attributes_md5,"
    " group_id, sent_at, visible_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_RECEIVED = (
    "UPDATE messages SET visible_at = ?, receive_count = receive_count + 1,"
    " first_received_at = COALESCE(first_received_at, ?), receipt = ? WHERE seq = ?"
)
_REDRIVEN = (
    "UPDATE messages SET queue = ?, visible_at = ?, receive_count = 0,"
    " first_received_at = NULL, receipt = NULL WHERE seq = ?"
)
#: The message groups of a queue, in order, from one after a given group: the index jumps
#: from group to group (one look per group, whatever its backlog).
_NEXT_GROUP = (
    "SELECT group_id FROM messages INDEXED BY messages_group"
    " WHERE queue = ? AND group_id IS NOT NULL AND group_id > ? ORDER BY group_id LIMIT 1"
)
#: A group's next visible, unexpired messages, the longest visible first.
_GROUP_READY = (
    "SELECT seq, message_id, body, body_md5, attributes, attributes_md5, group_id, sent_at,"
    " visible_at, receive_count, first_received_at FROM messages INDEXED BY messages_group"
    " WHERE queue = ? AND group_id = ? AND visible_at <= ? AND sent_at > ?"
    " ORDER BY visible_at, seq LIMIT ?"
)
#: The next visible messages sent without a group.
_UNGROUPED_READY = (
    "SELECT seq, message_id, body, body_md5, attributes, attributes_md5, group_id, sent_at,"
    " visible_at, receive_count, first_received_at FROM messages INDEXED BY messages_ready"
    " WHERE queue = ? AND visible_at <= ? AND sent_at > ? AND group_id IS NULL"
    " ORDER BY visible_at, seq LIMIT ?"
)
#: A queue's messages visible, in flight and delayed.
_COUNTS_QUERY = (
    "SELECT (SELECT COUNT(*) FROM messages INDEXED BY messages_ready"
    " WHERE queue = ?1 AND visible_at <= ?2),"
    " (SELECT COUNT(*) FROM messages INDEXED BY messages_ready"
    " WHERE queue = ?1 AND visible_at > ?2),"
    " (SELECT COUNT(*) FROM messages INDEXED BY messages_in_flight"
    " WHERE queue = ?1 AND visible_at > ?2 AND receive_count > 0)"
)
_DELETE = "DELETE FROM messages WHERE seq = ? AND queue = ? AND receipt = ?"


# --- Errors -------------------------------------------------------------------------------


class QueueDoesNotExist(ClientError):
    """No queue has that name or URL."""


class QueueNameExists(ClientError):
    """A queue of that name exists with other attributes."""


class ReceiptHandleIsInvalid(ClientError):
    """The receipt handle is not one this service gave."""


class MessageNotInflight(ClientError):
    """The message's visibility cannot change: it is not being processed."""


class BatchEntryIdsNotDistinct(ClientError):
    """Two entries of a batch share an Id."""


class EmptyBatchRequest(ClientError):
    """A batch without entries."""


class TooManyEntriesInBatchRequest(ClientError):
    """A batch of more than ten entries."""


class BatchRequestTooLong(ClientError):
    """A batch whose messages together exceed the largest message."""


class InvalidBatchEntryId(ClientError):
    """A batch entry Id with characters other than letters, digits, - and _, or too long."""


class InvalidAttributeName(ClientError):
    """A queue attribute this service does not know."""


class InvalidAttributeValue(ClientError):
    """A queue attribute's value is out of range or malformed."""


class InvalidMessageContents(ClientError):
    """A message body with characters SQS does not carry."""


class InvalidParameterValue(ClientError):
    """A request parameter is out of range (boto3 raises this as a plain ClientError)."""


#: Each error's code as AWS answers it (QueryErrorCode is the class name).
_CODES: dict[type[ClientError], str] = {
    QueueDoesNotExist: "AWS.SimpleQueueService.NonExistentQueue",
    QueueNameExists: "QueueAlreadyExists",
    ReceiptHandleIsInvalid: "ReceiptHandleIsInvalid",
    MessageNotInflight: "AWS.SimpleQueueService.MessageNotInflight",
    BatchEntryIdsNotDistinct: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
    EmptyBatchRequest: "AWS.SimpleQueueService.EmptyBatchRequest",
    TooManyEntriesInBatchRequest: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
    BatchRequestTooLong: "AWS.SimpleQueueService.BatchRequestTooLong",
    InvalidBatchEntryId: "AWS.SimpleQueueService.InvalidBatchEntryId",
    InvalidAttributeName: "InvalidAttributeName",
    InvalidAttributeValue: "InvalidAttributeValue",
    InvalidMessageContents: "InvalidMessageContents",
    InvalidParameterValue: "InvalidParameterValue",
}


class SqsExceptions:
    """The errors of ``SqliteQueues`` by name, as a boto3 SQS client's ``exceptions``."""

    ClientError = ClientError
    QueueDoesNotExist = QueueDoesNotExist
    QueueNameExists = QueueNameExists
    ReceiptHandleIsInvalid = ReceiptHandleIsInvalid
    MessageNotInflight = MessageNotInflight
    BatchEntryIdsNotDistinct = BatchEntryIdsNotDistinct
    EmptyBatchRequest = EmptyBatchRequest
    TooManyEntriesInBatchRequest = TooManyEntriesInBatchRequest
    BatchRequestTooLong = BatchRequestTooLong
    InvalidBatchEntryId = InvalidBatchEntryId
    InvalidAttributeName = InvalidAttributeName
    InvalidAttributeValue = InvalidAttributeValue
    InvalidMessageContents = InvalidMessageContents
    InvalidParameterValue = InvalidParameterValue


#: The queues database was written by a newer chronoq.
QueuesSchemaError = NewerSchema


class _Refusal(Exception):
    """A request refused: becomes the ClientError of ``kind`` for the operation refused."""

    def __init__(self, kind: type[ClientError], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def client_error(self, operation: str) -> ClientError:
        error = {
            "Code": _CODES[self.kind],
            "Message": self.message,
            "QueryErrorCode": self.kind.__name__,
            "Type": "Sender",
        }
        response: Any = {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return self.kind(response, operation)

    def failed(self, entry_id: str) -> Answer:
        """The refusal as the Failed entry of a batch."""
        return {
            "Id": entry_id,
            "SenderFault": True,
            "Code": _CODES[self.kind],
            "Message": self.message,
        }


# --- Queue attributes ---------------------------------------------------------------------

#: The numeric attributes chronoq's queues use: default and allowed range.
_NUMERIC: dict[str, tuple[int, int, int]] = {
    "DelaySeconds": (0, 0, 900),
    "VisibilityTimeout": (30, 0, 43_200),
    "MessageRetentionPeriod": (345_600, 60, 1_209_600),
    "MaximumMessageSize": (MAX_MESSAGE_BYTES, 1024, 1_048_576),
    "ReceiveMessageWaitTimeSeconds": (0, 0, 20),
}
#: Attributes kept and answered, with no effect here.
_KEPT = frozenset(
    {"Policy", "RedriveAllowPolicy", "SqsManagedSseEnabled", "KmsMasterKeyId"}
    | {"KmsDataKeyReusePeriodSeconds"}
)
_COUNTS = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
_READ_ONLY = frozenset({"QueueArn", "CreatedTimestamp", "LastModifiedTimestamp", *_COUNTS})


@dataclass(slots=True)
class _Queue:
    """A queue as its messages' handling needs it (attributes parsed, times in ms)."""

    id: int
    name: str
    url: str
    arn: str
    attributes: dict[str, str]
    created_at: int
    modified_at: int
    delay_ms: int = 0
    visibility_ms: int = 30_000
    retention_ms: int = 345_600_000
    max_bytes: int = MAX_MESSAGE_BYTES
    wait_seconds: int = 0
    dead_letters: int | None = None
    max_receives: int = 0
    next_sweep: int = 0
    #: The message group served last ("": messages sent without one; fair receives go on
    #: from the next one; the groups served first, out of turn, are not noted).
    last_group: str | None = None


def _number(name: str, value: str) -> int:
    _, low, high = _NUMERIC[name]
    try:
        number = int(value)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise _Refusal(InvalidAttributeValue, f"Invalid value for the parameter {name}: {value!r}.")
    return number


def _redrive(value: str) -> tuple[str, int] | None:
    """The dead-letter queue's ARN and the receives before redrive; None for no policy."""
    if value == "":
        return None
    try:
        policy = json.loads(value)
        arn, count = str(policy["deadLetterTargetArn"]), int(policy["maxReceiveCount"])
    except (ValueError, TypeError, KeyError):
        raise _Refusal(
            InvalidAttributeValue, f"Value {value} for parameter RedrivePolicy is invalid."
        ) from None
    if not 1 <= count <= 1000:
        raise _Refusal(
            InvalidAttributeValue, "Value for parameter RedrivePolicy is invalid: maxReceiveCount."
        )
    return arn, count


def _canonical(attributes: Mapping[str, str]) -> dict[str, str]:
    """Attributes checked and written as the service answers them."""
    canonical: dict[str, str] = {}
    for name, value in attributes.items():
        if name in _NUMERIC:
            canonical[name] = str(_number(name, str(value)))
        elif name == "RedrivePolicy":
            policy = _redrive(str(value))
            canonical[name] = (
                json.dumps({"deadLetterTargetArn": policy[0], "maxReceiveCount": policy[1]})
                if policy
                else ""
            )
        elif name in _KEPT:
            canonical[name] = str(value)
        else:
            raise _Refusal(InvalidAttributeName, f"Unknown Attribute {name}.")
    return canonical


# --- Messages -----------------------------------------------------------------------------

#: Characters SQS does not carry in a message body.
_BAD_CHARACTERS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ENTRY_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
#: Message attribute names, as ReceiveMessage asks for them, that mean every one.
_ALL = frozenset({"All", ".*"})
_SYSTEM_ATTRIBUTES = (
    "SenderId",
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "MessageGroupId",
)


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _length_prefixed(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def attributes_md5(attributes: Mapping[str, Mapping[str, Any]]) -> str:
    """MD5OfMessageAttributes as SQS computes it: over each attribute, by name, its name,
    data type, transport type (1 string, 2 binary) and value, each length-prefixed."""
    digest = bytearray()
    for name in sorted(attributes):
        attribute = attributes[name]
        digest += _length_prefixed(name.encode())
        digest += _length_prefixed(str(attribute["DataType"]).encode())
        if "StringValue" in attribute:
            digest += b"\x01" + _length_prefixed(str(attribute["StringValue"]).encode())
        else:
            digest += b"\x02" + _length_prefixed(bytes(attribute["BinaryValue"]))
    return _md5(bytes(digest))


def _attribute_size(name: str, attribute: Mapping[str, Any]) -> int:
    value = attribute.get("StringValue")
    size = len(value.encode()) if value is not None else len(attribute.get("BinaryValue", b""))
    return len(name.encode()) + len(str(attribute.get("DataType", "")).encode()) + size


def _check_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> None:
    if len(attributes) > 10:
        raise _Refusal(InvalidParameterValue, "Number of message attributes exceeds 10.")
    for name, attribute in attributes.items():
        data_type = str(attribute.get("DataType", ""))
        if not data_type.startswith(("String", "Number", "Binary")):
            raise _Refusal(
                InvalidParameterValue, f"The message attribute '{name}' has an invalid type."
            )
        if ("StringValue" in attribute) == ("BinaryValue" in attribute):
            raise _Refusal(
                InvalidParameterValue, f"The message attribute '{name}' must have one value."
            )


def _stored_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(
        {
            name: [a["DataType"], "s", a["StringValue"]]
            if "StringValue" in a
            else [a["DataType"], "b", base64.b64encode(bytes(a["BinaryValue"])).decode()]
            for name, a in attributes.items()
        }
    )


def _loaded_attributes(stored: str, wanted: frozenset[str]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for name, (data_type, kind, value) in json.loads(stored).items():
        if not _wanted(name, wanted):
            continue
        if kind == "s":
            attributes[name] = {"StringValue": value, "DataType": data_type}
        else:
            attributes[name] = {"BinaryValue": base64.b64decode(value), "DataType": data_type}
    return attributes


def _wanted(name: str, wanted: frozenset[str]) -> bool:
    if name in wanted or wanted & _ALL:
        return True
    return any(w.endswith(".*") and name.startswith(w[:-1]) for w in wanted)


class _Row(NamedTuple):
    """A message as the queries that serve it read it."""

    seq: int
    message_id: str
    body: str
    body_md5: str
    attributes: str | None
    attributes_md5: str | None
    group_id: str | None
    sent_at: int
    visible_at: int
    receive_count: int
    first_received_at: int | None


@dataclass(frozen=True, slots=True)
class _Outgoing:
    """A message checked and ready to be written, with the answer to its send."""

    row: tuple[Any, ...]
    size: int
    answer: Answer


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a ReceiveMessage asked to see of each message."""

    system: tuple[str, ...]
    message: frozenset[str]

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> _Shape:
        names = {
            *request.get("AttributeNames", ()),
            *request.get("MessageSystemAttributeNames", ()),
        }
        system = (
            _SYSTEM_ATTRIBUTES
            if "All" in names
            else tuple(n for n in _SYSTEM_ATTRIBUTES if n in names)
        )
        return cls(system, frozenset(request.get("MessageAttributeNames", ())))


def _handle(seq: int, receipt: int) -> str:
    return f"cq1-{seq:x}-{receipt:x}"


def _parse_handle(handle: Any) -> tuple[int, int]:
    """A receipt handle's message and receive; ReceiptHandleIsInvalid if it is not one."""
    parts = handle.split("-") if isinstance(handle, str) else ()
    try:
        if len(parts) == 3 and parts[0] == "cq1":
            return int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        pass
    raise _Refusal(
        ReceiptHandleIsInvalid,
        f'The input receipt handle "{handle}" is not a valid receipt handle.',
    )


def _required(request: Mapping[str, Any], name: str) -> Any:
    if name not in request:
        raise ParamValidationError(report=f'Missing required parameter in input: "{name}"')
    return request[name]


def _int_parameter(request: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = request.get(name, default)
    if not isinstance(value, int) or not low <= value <= high:
        raise _Refusal(
            InvalidParameterValue,
            f"Value {value} for parameter {name} is invalid. Reason: must be between {low}"
            f" and {high}.",
        )
    return value


def _check_batch(entries: Sequence[Mapping[str, Any]], entry_name: str) -> None:
    """The checks SQS makes of a whole batch before any entry."""
    if not entries:
        raise _Refusal(
            EmptyBatchRequest, f"There should be at least one {entry_name} in the request."
        )
    if len(entries) > MAX_BATCH_ENTRIES:
        raise _Refusal(
            TooManyEntriesInBatchRequest,
            f"Maximum number of entries per request are {MAX_BATCH_ENTRIES}."
            f" You have sent {len(entries)}.",
        )
    seen: set[str] = set()
    for entry in entries:
        entry_id = _required(entry, "Id")
        if not isinstance(entry_id, str) or not _ENTRY_ID.fullmatch(entry_id):
            raise _Refusal(
                InvalidBatchEntryId,
                "A batch entry id can only contain alphanumeric characters, hyphens and"
                " underscores. It can be at most 80 letters long.",
            )
        if entry_id in seen:
            raise _Refusal(BatchEntryIdsNotDistinct, f"Id {entry_id} repeated.")
        seen.add(entry_id)


# --- The service --------------------------------------------------------------------------


class SqliteQueues:
    """An SQS client's queue operations, over one SQLite database (``path`` None: in memory).

    Thread-safe: one connection behind a lock; long polls wait outside it. ``wake()`` tells
    waiting receives that the clock moved; ``close()`` ends them and closes the database.
    """

    def __init__(
        self,
        path: Path | None,
        clock: Clock,
        region: str = "us-east-1",
        account: str = "123456789012",
        observer: Observer | None = None,
        first_groups: frozenset[str] = frozenset(),
    ) -> None:
        """``first_groups``: message groups served before the others in each turn of a fair
        receive (chronoq's own heartbeat: no owner's backlog makes it late)."""
        self.exceptions = SqsExceptions
        self._first_groups = first_groups
        self._clock = clock
        self._region = region
        self._account = account
        self._observer = observer
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        #: Bumped on every send, redrive and wake: a long poll that saw it unchanged waits.
        self._generation = 0
        self._waiters = 0
        self._closed = False
        self._db = _open(path)
        self._queues: dict[str, _Queue] = {}
        for row in self._db.execute(
            "SELECT id, name, attributes, created_at, modified_at FROM queues"
        ):
            self._remember(_Queue(row[0], row[1], "", "", json.loads(row[2]), row[3], row[4]))
        for queue in self._queues.values():  # (once every dead-letter queue is known)
            self._settle(queue)

    # --- Lifecycle and time ---

    @property
    def waiting(self) -> int:
        """How many receives are long polling now."""
        return self._waiters

    def wake(self) -> None:
        """The clock moved: waiting receives look again (a delayed message may be visible)."""
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def close(self) -> None:
        """End every wait and close the database."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        with self._lock:
            self._db.close()

    def _now(self) -> int:
        return round(self._clock().timestamp() * 1000)

    def _notify(self) -> None:
        if self._waiters:
            self.wake()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._begun() as db:
            yield db

    @contextmanager
    def _begun(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the lock held)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _call(
        self, operation: str, handler: Callable[[dict[str, Any]], Answer], request: dict[str, Any]
    ) -> Answer:
        try:
            answer = handler(request)
        except _Refusal as refusal:
            error = refusal.client_error(operation[4:])
            if self._observer is not None:
                self._observer(operation, request, dict(error.response))
            raise error from None
        if self._observer is not None:
            self._observer(operation, request, answer)
        return answer

    # --- Queues ---

    def create_queue(self, **request: Any) -> Answer:
        return self._call("sqs:CreateQueue", self._create_queue, request)

    def get_queue_url(self, **request: Any) -> Answer:
        return self._call("sqs:GetQueueUrl", self._get_queue_url, request)

    def get_queue_attributes(self, **request: Any) -> Answer:
        return self._call("sqs:GetQueueAttributes", self._get_queue_attributes, request)

    def set_queue_attributes(self, **request: Any) -> Answer:
        return self._call("sqs:SetQueueAttributes", self._set_queue_attributes, request)

    def list_queues(self, **request: Any) -> Answer:
        return self._call("sqs:ListQueues", self._list_queues, request)

    def purge_queue(self, **request: Any) -> Answer:
        return self._call("sqs:PurgeQueue", self._purge_queue, request)

    def _create_queue(self, request: dict[str, Any]) -> Answer:
        name = _required(request, "QueueName")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,80}", name):
            raise _Refusal(
                InvalidParameterValue,
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in"
                " length",
            )
        attributes = _canonical(request.get("Attributes") or {})
        existing = self._queues.get(name)
        if existing is not None:
            if any(
                existing.attributes.get(k, self._default(k)) != v for k, v in attributes.items()
            ):
                raise _Refusal(QueueNameExists, "The specified queue already exists.")
            return {"QueueUrl": existing.url}
        now = self._now()
        queue = _Queue(0, name, "", "", attributes, now, now)
        self._settle(queue)
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO queues (name, attributes, created_at, modified_at)"
                " VALUES (?, ?, ?, ?)",
                (name, json.dumps(attributes), now, now),
            )
        queue.id = int(cursor.lastrowid or 0)
        self._remember(queue)
        return {"QueueUrl": queue.url}

    @staticmethod
    def _default(name: str) -> str:
        return str(_NUMERIC[name][0]) if name in _NUMERIC else ""

    def _remember(self, queue: _Queue) -> None:
        queue.url = f"https://sqs.{self._region}.amazonaws.com/{self._account}/{queue.name}"
        queue.arn = f"arn:aws:sqs:{self._region}:{self._account}:{queue.name}"
        self._queues[queue.name] = queue

    def _settle(self, queue: _Queue) -> None:
        """Parse a queue's attributes into what handling its messages needs."""
        number = {
            k: int(queue.attributes.get(k, default)) for k, (default, _, _) in _NUMERIC.items()
        }
        queue.delay_ms = number["DelaySeconds"] * 1000
        queue.visibility_ms = number["VisibilityTimeout"] * 1000
        queue.retention_ms = number["MessageRetentionPeriod"] * 1000
        queue.max_bytes = number["MaximumMessageSize"]
        queue.wait_seconds = number["ReceiveMessageWaitTimeSeconds"]
        policy = _redrive(queue.attributes.get("RedrivePolicy", ""))
        queue.dead_letters, queue.max_receives = None, 0
        if policy is not None:
            target = next((q for q in self._queues.values() if q.arn == policy[0]), None)
            if target is None:
                raise _Refusal(QueueDoesNotExist, f"Could not find DLQ for {policy[0]}")
            queue.dead_letters, queue.max_receives = target.id, policy[1]

    def _queue(self, request: Mapping[str, Any]) -> _Queue:
        url = _required(request, "QueueUrl")
        queue = self._queues.get(str(url).rsplit("/", 1)[-1])
        if queue is None:
            raise _Refusal(QueueDoesNotExist, "The specified queue does not exist.")
        return queue

    def _get_queue_url(self, request: dict[str, Any]) -> Answer:
        queue = self._queues.get(_required(request, "QueueName"))
        if queue is None:
            raise _Refusal(QueueDoesNotExist, "The specified queue does not exist.")
        return {"QueueUrl": queue.url}

    def _get_queue_attributes(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        names = set(request.get("AttributeNames", ()))
        everything = "All" in names
        known = {*_NUMERIC, *_KEPT, *_READ_ONLY, "RedrivePolicy"}
        unknown = sorted(names - known - {"All"})
        if unknown:
            raise _Refusal(InvalidAttributeName, f"Unknown Attribute {unknown[0]}.")
        values = {
            **{k: str(v[0]) for k, v in _NUMERIC.items()},
            "SqsManagedSseEnabled": "true",
            **{k: v for k, v in queue.attributes.items() if v != ""},
            "QueueArn": queue.arn,
            "CreatedTimestamp": str(queue.created_at // 1000),
            "LastModifiedTimestamp": str(queue.modified_at // 1000),
        }
        if everything or names & set(_COUNTS):
            values.update(zip(_COUNTS, map(str, self._counts(queue)), strict=True))
        chosen = {k: v for k, v in values.items() if everything or k in names}
        return {"Attributes": chosen} if chosen else {}

    def _counts(self, queue: _Queue) -> tuple[int, int, int]:
        """Messages visible, in flight and delayed (approximate, as SQS says: messages past
        their retention count until swept)."""
        with self._lock:
            visible, hidden, in_flight = self._db.execute(
                _COUNTS_QUERY, (queue.id, self._now())
            ).fetchone()
        return int(visible), int(in_flight), int(hidden - in_flight)

    def return_in_flight(self) -> int:
        """Make every message received and not deleted visible again at once: what a start
        does, since whoever received them was the process that stopped (its event source
        mappings, its workers); without it they would wait out their visibility timeout.
        How many (not an SQS call)."""
        now = self._now()
        with self._transaction() as db:
            returned = db.execute(
                "UPDATE messages SET visible_at = ? WHERE receive_count > 0 AND visible_at > ?",
                (now, now),
            ).rowcount
        self._notify()
        return int(returned)

    def delayed_until(self, url: str) -> list[datetime | None]:
        """Each message of the queue at ``url``: when it becomes visible if it has not been
        received yet and is still delayed; None if it is visible, or received and in flight
        (not an SQS call: chronoq local's tests ask what is due next)."""
        queue = self._queue({"QueueUrl": url})
        with self._lock:
            rows = self._db.execute(
                "SELECT visible_at, receive_count FROM messages WHERE queue = ?", (queue.id,)
            ).fetchall()
        now = self._now()
        return [
            datetime.fromtimestamp(visible_at / 1000, UTC)
            if receive_count == 0 and visible_at > now
            else None
            for visible_at, receive_count in rows
        ]

    def _set_queue_attributes(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        given = _canonical(_required(request, "Attributes"))
        previous = dict(queue.attributes)
        queue.attributes.update(given)
        try:
            self._settle(queue)
        except _Refusal:
            queue.attributes = previous
            self._settle(queue)
            raise
        queue.modified_at = self._now()
        with self._transaction() as db:
            db.execute(
                "UPDATE queues SET attributes = ?, modified_at = ? WHERE id = ?",
                (json.dumps(queue.attributes), queue.modified_at, queue.id),
            )
        self._notify()
        return {}

    def _list_queues(self, request: dict[str, Any]) -> Answer:
        prefix = request.get("QueueNamePrefix", "")
        names = sorted(n for n in self._queues if n.startswith(prefix))
        after = request.get("NextToken")
        if after:
            names = [n for n in names if n > after]
        limit = request.get("MaxResults")
        answer: Answer = {}
        if limit is not None and len(names) > limit:
            names = names[:limit]
            answer["NextToken"] = names[-1]
        if names:
            answer["QueueUrls"] = [self._queues[n].url for n in names]
        return answer

    def _purge_queue(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        with self._transaction() as db:
            db.execute("DELETE FROM messages WHERE queue = ?", (queue.id,))
        return {}

    # --- Sending ---

    def send_message(self, **request: Any) -> Answer:
        return self._call("sqs:SendMessage", self._send_message, request)

    def send_message_batch(self, **request: Any) -> Answer:
        return self._call("sqs:SendMessageBatch", self._send_message_batch, request)

    def _send_message(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        outgoing = self._outgoing(queue, request, self._now())
        if outgoing.size > queue.max_bytes:
            raise _Refusal(
                InvalidParameterValue,
                f"One or more parameters are invalid. Reason: Message must be shorter than"
                f" {queue.max_bytes} bytes.",
            )
        with self._lock:
            self._db.execute(_INSERT, outgoing.row)
        self._notify()
        return outgoing.answer

    def _send_message_batch(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        entries = _required(request, "Entries")
        _check_batch(entries, "SendMessageBatchRequestEntry")
        now = self._now()
        sent: list[tuple[str, _Outgoing]] = []
        failed: list[Answer] = []
        for entry in entries:
            try:
                sent.append((entry["Id"], self._outgoing(queue, entry, now)))
            except _Refusal as refusal:
                failed.append(refusal.failed(entry["Id"]))
        size = sum(o.size for _, o in sent)
        if size > queue.max_bytes:
            raise _Refusal(
                BatchRequestTooLong,
                f"Batch requests cannot be longer than {queue.max_bytes} bytes. You have sent"
                f" {size} bytes.",
            )
        if sent:
            with self._transaction() as db:
                db.executemany(_INSERT, [o.row for _, o in sent])
            self._notify()
        return {"Successful": [{"Id": i, **o.answer} for i, o in sent], "Failed": failed}

    def _outgoing(self, queue: _Queue, request: Mapping[str, Any], now: int) -> _Outgoing:
        """A message to send, checked; refused as SQS refuses it."""
        body = _required(request, "MessageBody")
        if not isinstance(body, str) or not body:
            raise _Refusal(
                InvalidParameterValue, "The request must contain the parameter MessageBody."
            )
        if _BAD_CHARACTERS.search(body):
            raise _Refusal(InvalidMessageContents, "Invalid characters found in the message body.")
        delay = _int_parameter(request, "DelaySeconds", queue.delay_ms // 1000, 0, 900)
        attributes = request.get("MessageAttributes") or {}
        encoded = body.encode()
        size = len(encoded)
        answer: Answer = {"MD5OfMessageBody": _md5(encoded)}
        stored = digest = None
        if attributes:
            _check_attributes(attributes)
            size += sum(_attribute_size(n, a) for n, a in attributes.items())
            stored, digest = _stored_attributes(attributes), attributes_md5(attributes)
            answer["MD5OfMessageAttributes"] = digest
        message_id = str(uuid.uuid4())
        answer["MessageId"] = message_id
        row = (
            queue.id,
            message_id,
            body,
            answer["MD5OfMessageBody"],
            stored,
            digest,
            request.get("MessageGroupId"),
            now,
            now + delay * 1000,
        )
        return _Outgoing(row, size, answer)

    # --- Receiving ---

    def receive_message(self, **request: Any) -> Answer:
        return self._call("sqs:ReceiveMessage", self._receive_message, request)

    def _receive_message(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        limit = _int_parameter(request, "MaxNumberOfMessages", 1, 1, 10)
        visibility = _int_parameter(
            request, "VisibilityTimeout", queue.visibility_ms // 1000, 0, 43_200
        )
        wait = _int_parameter(request, "WaitTimeSeconds", queue.wait_seconds, 0, 20)
        shape = _Shape.of(request)
        messages = self._take(queue, limit, visibility * 1000, shape)
        if not messages and wait:
            messages = self._wait(queue, limit, visibility * 1000, shape, wait * 1000)
        return {"Messages": messages} if messages else {}

    def _take(self, queue: _Queue, limit: int, visibility_ms: int, shape: _Shape) -> list[Answer]:
        """Receive up to ``limit`` visible messages, oldest visible first; redrive those
        received ``maxReceiveCount`` times already instead."""
        now = self._now()
        with self._lock:
            if self._closed:
                return []
            with self._begun() as db:
                self._expire(queue, now)
                rows, redriven = self._serve(queue, now, limit)
                receipts = [secrets.randbits(62) for _ in rows]
                db.executemany(
                    _RECEIVED,
                    [
                        (now + visibility_ms, now, receipt, row.seq)
                        for row, receipt in zip(rows, receipts, strict=True)
                    ],
                )
        if redriven:
            self._notify()
        return [
            _received(row, receipt, now, shape) for row, receipt in zip(rows, receipts, strict=True)
        ]

    def _serve(self, queue: _Queue, now: int, limit: int) -> tuple[list[_Row], bool]:
        """The messages to hand out, after moving those spent on the way to the dead-letter
        queue (the transaction begun); and whether any moved."""
        taken: list[_Row] = []
        redriven = False
        while len(taken) < limit:
            rows = self._fair(queue, now, limit - len(taken), {r.seq for r in taken})
            if not rows:
                break
            spent = [r.seq for r in rows if _spent(queue, r)]
            taken += [r for r in rows if not _spent(queue, r)]
            if not spent:
                break
            self._db.executemany(_REDRIVEN, [(queue.dead_letters, now, seq) for seq in spent])
            redriven = True
        return taken, redriven

    def _fair(self, queue: _Queue, now: int, limit: int, skip: set[int]) -> list[_Row]:
        """Up to ``limit`` visible messages, as SQS fair queues aim to serve them: one of
        each message group in turn (round robin, from the group after the one served last;
        messages sent without a group are one more group), the longest visible first within
        a group. So one group's backlog, however long, delays another group's messages by
        one turn of the groups that have some, not by the backlog."""
        oldest = now - queue.retention_ms
        ready: dict[str | None, list[_Row]] = {}
        ungrouped = [
            _Row(*row)
            for row in self._db.execute(
                _UNGROUPED_READY, (queue.id, now, oldest, limit + len(skip))
            )
            if row[0] not in skip
        ]
        if ungrouped:
            ready[None] = ungrouped
        group = ""
        while (found := self._db.execute(_NEXT_GROUP, (queue.id, group)).fetchone()) is not None:
            group = found[0]
            rows = [
                _Row(*row)
                for row in self._db.execute(
                    _GROUP_READY, (queue.id, group, now, oldest, limit + len(skip))
                )
                if row[0] not in skip
            ]
            if rows:
                ready[group] = rows
        if not ready:
            return []

        def key(g: str | None) -> str:  # (messages without a group: the group "")
            return "" if g is None else g

        order = sorted(ready, key=key)
        last = queue.last_group  # (None: no group served yet)
        turn: list[str | None] = [g for g in order if last is not None and key(g) > last]
        turn += [g for g in order if g not in turn]
        turn.sort(key=lambda g: g not in self._first_groups)  # (stable: the rest keep their turn)
        served: list[_Row] = []
        depth = 0
        while len(served) < limit:
            added = False
            for g in turn:
                rows = ready[g]
                if depth < len(rows) and len(served) < limit:
                    served.append(rows[depth])
                    if g not in self._first_groups:  # (served first, out of turn)
                        queue.last_group = key(g)
                    added = True
            if not added:
                break
            depth += 1
        return served

    def _expire(self, queue: _Queue, now: int) -> None:
        """Delete a few of the queue's messages past their retention, now and then."""
        if now < queue.next_sweep:
            return
        deleted = self._db.execute(
            "DELETE FROM messages WHERE seq IN (SELECT seq FROM messages WHERE queue = ?"
            " AND sent_at <= ? LIMIT ?)",
            (queue.id, now - queue.retention_ms, RETENTION_STEP),
        ).rowcount
        queue.next_sweep = now if deleted >= RETENTION_STEP else now + RETENTION_EVERY_MS

    def _wait(
        self, queue: _Queue, limit: int, visibility_ms: int, shape: _Shape, wait_ms: int
    ) -> list[Answer]:
        """Long poll: receive as soon as a message is visible, or nothing once the clock has
        passed the end of the wait."""
        deadline = self._now() + wait_ms
        with self._changed:
            self._waiters += 1
        try:
            while not self._closed:
                seen = self._generation
                messages = self._take(queue, limit, visibility_ms, shape)
                now = self._now()
                if messages or now >= deadline:
                    return messages
                pause = self._pause(queue, now, deadline)
                with self._changed:
                    if self._generation == seen and not self._closed:
                        self._changed.wait(pause)
            return []
        finally:
            with self._changed:
                self._waiters -= 1

    def _pause(self, queue: _Queue, now: int, deadline: int) -> float:
        """Real seconds to wait before looking again: until the queue's next message becomes
        visible or the wait ends, whichever is first, and never long."""
        with self._lock:
            if self._closed:
                return 0.0
            (next_visible,) = self._db.execute(
                "SELECT MIN(visible_at) FROM messages WHERE queue = ? AND visible_at > ?",
                (queue.id, now),
            ).fetchone()
        until = min(deadline, next_visible if next_visible is not None else deadline)
        return min(LONG_POLL_LOOK_SECONDS, max(0.001, (until - now) / 1000))

    # --- Deleting and visibility ---

    def delete_message(self, **request: Any) -> Answer:
        return self._call("sqs:DeleteMessage", self._delete_message, request)

    def delete_message_batch(self, **request: Any) -> Answer:
        return self._call("sqs:DeleteMessageBatch", self._delete_message_batch, request)

    def change_message_visibility(self, **request: Any) -> Answer:
        return self._call("sqs:ChangeMessageVisibility", self._change_message_visibility, request)

    def change_message_visibility_batch(self, **request: Any) -> Answer:
        return self._call(
            "sqs:ChangeMessageVisibilityBatch", self._change_message_visibility_batch, request
        )

    def _delete_message(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        seq, receipt = _parse_handle(_required(request, "ReceiptHandle"))
        with self._lock:
            self._db.execute(_DELETE, (seq, queue.id, receipt))
        return {}

    def _delete_message_batch(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        entries = _required(request, "Entries")
        _check_batch(entries, "DeleteMessageBatchRequestEntry")
        deletes: list[tuple[int, int, int]] = []
        successful: list[Answer] = []
        failed: list[Answer] = []
        for entry in entries:
            try:
                seq, receipt = _parse_handle(_required(entry, "ReceiptHandle"))
            except _Refusal as refusal:
                failed.append(refusal.failed(entry["Id"]))
                continue
            deletes.append((seq, queue.id, receipt))
            successful.append({"Id": entry["Id"]})
        if deletes:
            with self._transaction() as db:
                db.executemany(_DELETE, deletes)
        return {"Successful": successful, "Failed": failed}

    def _change_message_visibility(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        with self._lock:
            self._change_one(queue, request, self._now())
        self._notify()
        return {}

    def _change_message_visibility_batch(self, request: dict[str, Any]) -> Answer:
        queue = self._queue(request)
        entries = _required(request, "Entries")
        _check_batch(entries, "ChangeMessageVisibilityBatchRequestEntry")
        now = self._now()
        successful: list[Answer] = []
        failed: list[Answer] = []
        with self._transaction():
            for entry in entries:
                try:
                    self._change_one(queue, entry, now)
                except _Refusal as refusal:
                    failed.append(refusal.failed(entry["Id"]))
                    continue
                successful.append({"Id": entry["Id"]})
        self._notify()
        return {"Successful": successful, "Failed": failed}

    def _change_one(self, queue: _Queue, request: Mapping[str, Any], now: int) -> None:
        """Make a message received with this latest handle visible ``VisibilityTimeout``
        seconds from now (the lock held). An older handle changes nothing."""
        seq, receipt = _parse_handle(_required(request, "ReceiptHandle"))
        _required(request, "VisibilityTimeout")
        timeout = _int_parameter(request, "VisibilityTimeout", 0, 0, 43_200)
        row = self._db.execute(
            "SELECT visible_at FROM messages WHERE seq = ? AND queue = ? AND receipt = ?",
            (seq, queue.id, receipt),
        ).fetchone()
        if row is None:
            return
        if row[0] <= now:
            raise _Refusal(MessageNotInflight, "The message referred to isn't in flight.")
        self._db.execute(
            "UPDATE messages SET visible_at = ? WHERE seq = ?", (now + timeout * 1000, seq)
        )


def _spent(queue: _Queue, row: _Row) -> bool:
    """The message has been received as often as its queue's redrive policy allows."""
    return queue.dead_letters is not None and row.receive_count >= queue.max_receives


def _received(row: _Row, receipt: int, now: int, shape: _Shape) -> Answer:
    """A message as ReceiveMessage answers with it, just received."""
    message: Answer = {
        "MessageId": row.message_id,
        "ReceiptHandle": _handle(row.seq, receipt),
        "MD5OfBody": row.body_md5,
        "Body": row.body,
    }
    if shape.system:
        first = row.first_received_at
        values = {
            "SenderId": SENDER_ID,
            "SentTimestamp": str(row.sent_at),
            "ApproximateReceiveCount": str(row.receive_count + 1),
            "ApproximateFirstReceiveTimestamp": str(first if first is not None else now),
            "MessageGroupId": row.group_id,
        }
        message["Attributes"] = {n: values[n] for n in shape.system if values[n] is not None}
    if shape.message and row.attributes is not None:
        attributes = _loaded_attributes(row.attributes, shape.message)
        if attributes:
            message["MD5OfMessageAttributes"] = row.attributes_md5
            message["MessageAttributes"] = attributes
    return message


def _open(path: Path | None) -> sqlite3.Connection:
    """The queues database at ``path``, its schema made or checked."""
    return connect(path, STEPS, f"the queues database {path or '(in memory)'}")
