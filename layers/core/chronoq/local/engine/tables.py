"""The local engine's tables: the part of DynamoDB's low-level client API chronoq uses, over
one SQLite database file (or memory), so that ``chronoq local`` runs its hot path without
moto. DynamoStore, S3Artifacts and the run state machine's DynamoDB tasks call it exactly
as they call boto3's ``dynamodb`` client: same methods, keyword arguments, typed values,
answers and error codes.

Storage: one SQLite table per DynamoDB table, unique on (pk, sk): the item's key values,
``""`` as sort key for a table without one. Each row holds the item as its typed JSON (the
form every answer carries, so a read is one ``json.loads``), compressed when that saves
much. Each global secondary index is a pair of columns with an SQLite index over them and
the table's keys (only items carrying the index's keys have them); the TTL attribute's value
is a column of its own, indexed, for the expiry sweep. (A rowid table rather than one
WITHOUT ROWID: SQLite keeps rows of up to about 4 KB in their B-tree page in a rowid table,
about 1 KB in the other; a run record of 2.4 KB takes 2.2 KB of disk rather than 4.8 KB.)

The database runs in WAL mode with ``synchronous=NORMAL``: a process killed at any point
loses no committed write. Its schema version is kept in ``PRAGMA user_version``; a database
of a newer version is refused.

Streams: every write that changes an item of a table with ``stream=True`` appends a record
(INSERT, MODIFY or REMOVE, with keys and both images) to the streams' log in the same SQLite
transaction: a record is never lost, nor written for a write that was not.

(The SQL text is built from chronoq's own table definitions only; every value a request
brings is a bound parameter.)

Why this module is long: it answers every DynamoDB call chronoq makes (items, queries and
scans, batches, transactions, PartiQL, TTL, streams) over one SQLite schema; the calls share
that schema, the key encoding and the transaction that writes a stream record with its item.
The expression language is in expressions.py already.
"""

from __future__ import annotations

import base64
import functools
import json
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import orjson
from botocore.exceptions import ClientError, ParamValidationError

from chronoq import resources as r
from chronoq.local.engine import expressions as ex
from chronoq.local.engine.expressions import ExpressionError, Item, Typed
from chronoq.local.engine.schema import NewerSchema, Step, migrate, statements
from chronoq.local.partiql import StatementError, parse_insert

#: The version of the database layout this code writes (``PRAGMA user_version``): one per
#: step of STEPS (see chronoq.local.engine.schema).
SCHEMA_VERSION = 2
#: What a Query or Scan reads at most before it answers a page (DynamoDB's 1 MB).
PAGE_BYTES = 1024 * 1024
#: DynamoDB's largest item.
MAX_ITEM_BYTES = 400 * 1024
#: Stored items at least this long (JSON text) are compressed, if that saves a quarter: a
#: run record of 1.2 KB (DynamoDB's count) then takes about 1.15 KB of disk, indexes
#: included, rather than 2 KB.
COMPRESS_FROM = 512
#: The region stream records name (chronoq local's).
REGION = "us-east-1"
#: Who deletes expired items, as their stream records show it.
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

#: Called after each call that succeeded or whose condition failed: (operation, e.g.
#: ``"dynamodb:PutItem"``, the request's keyword arguments, the answer).
Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]


# --- Errors ------------------------------------------------------------------------------------


class ConditionalCheckFailedException(ClientError):
    """A write's condition did not hold: nothing was written."""


class TransactionCanceledException(ClientError):
    """A transaction was refused as a whole."""


class ResourceNotFoundException(ClientError):
    """No table of that name."""


class ValidationException(ClientError):
    """A request DynamoDB refuses as invalid (an expression, a key, a parameter)."""


class DuplicateItemException(ClientError):
    """A PartiQL INSERT of a key that exists: nothing was written."""


class TableErrors:
    """The error classes, reachable as boto3 exposes its modeled ones
    (``client.exceptions.ConditionalCheckFailedException``)."""

    ClientError = ClientError
    ConditionalCheckFailedException = ConditionalCheckFailedException
    TransactionCanceledException = TransactionCanceledException
    ResourceNotFoundException = ResourceNotFoundException
    ValidationException = ValidationException
    DuplicateItemException = DuplicateItemException


#: The database file was written by a newer chronoq (a later schema version).
UnsupportedDatabase = NewerSchema


def _invalid(message: str, operation: str) -> ValidationException:
    return ValidationException(
        {"Error": {"Code": "ValidationException", "Message": message}}, operation
    )


def _operation(
    name: str,
) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """A client method answering DynamoDB's ``name`` operation: expression problems become
    ValidationExceptions."""

    def decorate(method: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @functools.wraps(method)
        def call(self: SqliteTables, **request: Any) -> dict[str, Any]:
            try:
                return method(self, **request)
            except ExpressionError as problem:
                raise _invalid(str(problem), name) from None

        return call

    return decorate


def _check_parameters(
    request: Mapping[str, Any], allowed: frozenset[str], required: frozenset[str]
) -> None:
    """Refuse unknown or missing parameters, as botocore's validation does."""
    if request.keys() <= allowed and required <= request.keys():
        return
    problems = [
        f'Unknown parameter in input: "{p}", must be one of: {", ".join(sorted(allowed))}'
        for p in sorted(request.keys() - allowed)
    ] + [f'Missing required parameter in input: "{p}"' for p in sorted(required - request.keys())]
    raise ParamValidationError(report="\n".join(problems))


_EXPRESSION_PARAMETERS = ("ExpressionAttributeNames", "ExpressionAttributeValues")
_CONDITIONAL = ("ConditionExpression", "ReturnValuesOnConditionCheckFailure")
_WRITE_PARAMETERS = (
    "ConditionExpression",
    "ReturnValues",
    "ReturnValuesOnConditionCheckFailure",
    "ReturnConsumedCapacity",
    "ReturnItemCollectionMetrics",
    *_EXPRESSION_PARAMETERS,
)
_GET = frozenset(
    {
        "TableName",
        "Key",
        "ProjectionExpression",
        "ExpressionAttributeNames",
        "ConsistentRead",
        "ReturnConsumedCapacity",
    }
)
_PUT = frozenset({"TableName", "Item", *_WRITE_PARAMETERS})
_UPDATE = frozenset({"TableName", "Key", "UpdateExpression", *_WRITE_PARAMETERS})
_DELETE = frozenset({"TableName", "Key", *_WRITE_PARAMETERS})
_READ_MANY = (
    "TableName",
    "IndexName",
    "Limit",
    "ExclusiveStartKey",
    "FilterExpression",
    "ProjectionExpression",
    "Select",
    "ConsistentRead",
    "ReturnConsumedCapacity",
    *_EXPRESSION_PARAMETERS,
)
_QUERY = frozenset({"KeyConditionExpression", "ScanIndexForward", *_READ_MANY})
_SCAN = frozenset(_READ_MANY)
_TABLE_ONLY = frozenset({"TableName"})
_STATEMENT = frozenset(
    {
        "Statement",
        "Parameters",
        "ConsistentRead",
        "NextToken",
        "ReturnConsumedCapacity",
        "Limit",
        "ReturnValuesOnConditionCheckFailure",
    }
)
_KEY_REQUIRED = frozenset({"TableName", "Key"})
_ITEM_REQUIRED = frozenset({"TableName", "Item"})
_TRANSACT = frozenset(
    {
        "TransactItems",
        "ClientRequestToken",
        "ReturnConsumedCapacity",
        "ReturnItemCollectionMetrics",
    }
)
_TRANSACT_PUT = frozenset({"TableName", "Item", *_EXPRESSION_PARAMETERS, *_CONDITIONAL})
_TRANSACT_UPDATE = frozenset(
    {"TableName", "Key", "UpdateExpression", *_EXPRESSION_PARAMETERS, *_CONDITIONAL}
)
_TRANSACT_KEYED = frozenset({"TableName", "Key", *_EXPRESSION_PARAMETERS, *_CONDITIONAL})
#: The most items one TransactWriteItems may write (DynamoDB's limit).
MAX_TRANSACT_ITEMS = 100
_TOO_LARGE = "Item size has exceeded the maximum allowed size"
_TOO_LARGE_AFTER_UPDATE = "Item size to update has exceeded the maximum allowed size"
_SELECTS = frozenset({"ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "SPECIFIC_ATTRIBUTES", "COUNT"})


# --- Values ------------------------------------------------------------------------------------


def _scalar(value: Typed) -> str | int | float | bytes:
    """A key attribute's value as SQLite keeps and orders it."""
    text = value.get("S")
    if text is not None:
        if not text:
            raise ExpressionError(
                "One or more parameter values are not valid. The AttributeValue for a key "
                "attribute cannot contain an empty string value."
            )
        return str(text)
    if "N" in value:
        number = ex.decimal(value["N"])
        if number == number.to_integral_value() and abs(number) < 2**63:
            return int(number)
        return float(number)
    if "B" in value:
        return bytes(value["B"])
    raise ExpressionError("The provided key element does not match the schema")


def _index_scalar(value: Typed | None) -> str | int | float | bytes | None:
    """An index key attribute's value (None: the item is not in the index)."""
    if value is None:
        return None
    try:
        return _scalar(value)
    except ExpressionError:
        return None


def _expiry(value: Typed | None) -> int | None:
    """A TTL attribute's epoch seconds (None: not a number, never expires)."""
    if value is None or "N" not in value:
        return None
    try:
        return int(Decimal(value["N"]))
    except (InvalidOperation, ValueError, OverflowError):
        return None


class _Binary:
    """JSON's ``default``: binary values as base64 text, noting that there were some."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, value: Any) -> str:
        if isinstance(value, bytes | bytearray | memoryview):
            self.seen = True
            return base64.b64encode(value).decode()
        raise TypeError(f"not a DynamoDB value: {value!r}")


def _binary_values(document: dict[str, Any]) -> dict[str, Any]:
    """JSON's ``object_hook`` for items holding binary values: base64 text back to bytes."""
    if len(document) == 1:
        if isinstance(document.get("B"), str):
            return {"B": base64.b64decode(document["B"])}
        members = document.get("BS")
        if isinstance(members, list) and all(isinstance(m, str) for m in members):
            return {"BS": [base64.b64decode(m) for m in members]}
    return document


def encode(item: Mapping[str, Any]) -> str | bytes:
    """An item as stored: its typed JSON (``b`` first when it holds binary values), zlib
    compressed when long and that saves a quarter of it."""
    return _encoded(item)[0]


def _encoded(item: Mapping[str, Any]) -> tuple[str | bytes, int]:
    """An item as stored, and the length of its JSON text."""
    binary = _Binary()
    try:
        text = orjson.dumps(item, default=binary).decode()
    except orjson.JSONEncodeError:  # (what orjson refuses, a number past 64 bits, json takes)
        binary = _Binary()
        text = json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=binary)
    if binary.seen:
        text = "b" + text
    if len(text) < COMPRESS_FROM:
        return text, len(text)
    data = text.encode()
    packed = zlib.compress(data, 1)
    return (packed if len(packed) * 4 <= len(data) * 3 else text), len(text)


def decode(stored: str | bytes) -> Item:
    """An item as ``encode`` stored it."""
    text = zlib.decompress(stored) if isinstance(stored, bytes) else stored
    if text[:1] in ("{", b"{"):
        return orjson.loads(text)  # type: ignore[no-any-return]
    if isinstance(text, bytes):
        text = text.decode()
    return json.loads(text[1:], object_hook=_binary_values)  # type: ignore[no-any-return]


def _value_size(value: Typed) -> int:
    kind = ex.kind_of(value)
    data = value[kind]
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        return len(data.strip("-").lstrip("0").replace(".", "")) // 2 + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(m.encode()) for m in data)
    if kind == "NS":
        return sum(_value_size({"N": m}) for m in data)
    if kind == "BS":
        return sum(len(m) for m in data)
    if kind == "L":
        return 3 + sum(1 + _value_size(e) for e in data)
    return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in data.items())


def item_size(item: Mapping[str, Typed]) -> int:
    """An item's size as DynamoDB counts it (names and values, in bytes)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _stored(item: Mapping[str, Typed], message: str) -> str | bytes:
    """The item as stored; refused (``message``) when larger than DynamoDB allows."""
    try:
        stored, length = _encoded(item)
    except TypeError as problem:  # (a value no typed attribute value can be)
        raise ParamValidationError(report=str(problem)) from None
    # (a JSON text of fewer characters than a third of the limit holds fewer bytes)
    if length * 3 > MAX_ITEM_BYTES and item_size(item) > MAX_ITEM_BYTES:
        raise ExpressionError(message)
    return stored


def _after_prefix(prefix: str) -> str | None:
    """The first string after every string beginning with ``prefix`` (None: none is)."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code == 0xD800:  # (surrogates are no characters of UTF-8 text)
            code = 0xE000
        if code <= 0x10FFFF:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None


# --- Tables ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Index:
    name: str
    column: str  # its columns are <column>_pk and <column>_sk
    partition_key: str
    sort_key: str | None
    keys_only: bool
    #: The attributes an entry of a KEYS_ONLY index shows: the table's keys and its own.
    shown: tuple[str, ...]


@dataclass(frozen=True)
class _Table:
    """One table: its definition, its name as callers give it, its SQL."""

    name: str
    definition: r.Table
    sql: str
    #: Does the table publish a stream?
    streamed: bool
    indexes: dict[str, _Index]

    @property
    def partition_key(self) -> str:
        return self.definition.partition_key

    @property
    def sort_key(self) -> str | None:
        return self.definition.sort_key

    @functools.cached_property
    def key_names(self) -> frozenset[str]:
        return frozenset(k for k in (self.partition_key, self.sort_key) if k)

    @functools.cached_property
    def columns(self) -> str:
        extra = [f"{i.column}_pk, {i.column}_sk" for i in self.indexes.values()]
        return ", ".join(["pk", "sk", "item", "expires", *extra])

    @functools.cached_property
    def upsert(self) -> str:
        marks = ", ".join("?" * (4 + 2 * len(self.indexes)))
        return f"INSERT OR REPLACE INTO {self.sql} ({self.columns}) VALUES ({marks})"  # noqa: S608

    @functools.cached_property
    def select(self) -> str:
        return f"SELECT item FROM {self.sql} WHERE pk = ? AND sk = ?"  # noqa: S608

    @functools.cached_property
    def delete(self) -> str:
        return f"DELETE FROM {self.sql} WHERE pk = ? AND sk = ?"  # noqa: S608

    def keys(self, item: Mapping[str, Typed]) -> Item:
        """The item's key attributes (the table's)."""
        return {k: item[k] for k in (self.partition_key, self.sort_key) if k and k in item}

    def key_of(self, key: Mapping[str, Typed]) -> tuple[Any, Any]:
        """The (pk, sk) columns of a Key parameter."""
        partition = key.get(self.partition_key)
        sort = key.get(self.sort_key) if self.sort_key else None
        if len(key) == len(self.key_names) and partition is not None:
            if self.sort_key is None:
                return _scalar(partition), ""
            if sort is not None:
                return _scalar(partition), _scalar(sort)
        raise ExpressionError("The provided key element does not match the schema")

    def key_of_item(self, item: Mapping[str, Typed]) -> tuple[Any, Any]:
        """The (pk, sk) columns of an item."""
        for name in self.key_names:
            if name not in item:
                raise ExpressionError(
                    f"One or more parameter values were invalid: Missing the key {name} in the item"
                )
        return self.key_of(self.keys(item))

    def row(
        self, key: tuple[Any, Any], item: Mapping[str, Typed], stored: str | bytes
    ) -> tuple[Any, ...]:
        """Every column of the item's row."""
        ttl = self.definition.ttl_attribute
        values: list[Any] = [*key, stored, _expiry(item.get(ttl)) if ttl else None]
        for index in self.indexes.values():
            partition = _index_scalar(item.get(index.partition_key))
            sort = _index_scalar(item.get(index.sort_key)) if index.sort_key else ""
            values += (
                [partition, sort] if partition is not None and sort is not None else [None, None]
            )
        return tuple(values)

    def entry(self, item: Item, index: _Index | None) -> Item:
        """What a query of ``index`` (or of the table) shows of the item."""
        if index is None or not index.keys_only:
            return item
        return {k: item[k] for k in index.shown if k in item}

    def last_key(self, item: Mapping[str, Typed], index: _Index | None) -> Item:
        """A LastEvaluatedKey: the table's keys, and the index's when reading one."""
        names = [self.partition_key, self.sort_key]
        if index is not None:
            names += [index.partition_key, index.sort_key]
        return {k: item[k] for k in dict.fromkeys(names) if k and k in item}


def _definitions(tables: Iterable[r.Table], names: Mapping[str, str] | None) -> dict[str, _Table]:
    found: dict[str, _Table] = {}
    for definition in tables:
        name = (names or {}).get(definition.id, definition.id)
        indexes = {}
        for n, index in enumerate(definition.indexes):
            shown = [
                definition.partition_key,
                definition.sort_key,
                index.partition_key,
                index.sort_key,
            ]
            indexes[index.name] = _Index(
                name=index.name,
                column=f"i{n}",
                partition_key=index.partition_key,
                sort_key=index.sort_key,
                keys_only=index.projection is r.Projection.KEYS_ONLY,
                shown=tuple(k for k in dict.fromkeys(shown) if k),
            )
        found[name] = _Table(
            name=name,
            definition=definition,
            sql=f'"items_{definition.id}"',
            streamed=definition.stream,
            indexes=indexes,
        )
    return found


#: The streams' log: every table's records, in one sequence.
_STREAM_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stream (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "table_id TEXT NOT NULL, event TEXT NOT NULL, old, new, at REAL NOT NULL, "
    "by_ttl INTEGER NOT NULL)"
)
_APPEND = "INSERT INTO stream (table_id, event, old, new, at, by_ttl) VALUES (?, ?, ?, ?, ?, ?)"
_READ_STREAM = (
    "SELECT seq, event, old, new, at, by_ttl FROM stream WHERE table_id = ? AND seq > ? "
    "ORDER BY seq LIMIT ?"
)


#: Where each reader of the streams is: the last sequence number handed over to it (records
#: every reader has had are dropped). Version 2: the runs stream got its second reader.
_READERS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stream_readers (reader TEXT PRIMARY KEY, position INTEGER NOT NULL)"
)

#: The steps of the database's layout (see chronoq.local.engine.schema); each table's own
#: storage is made from its definition when the database is opened.
STEPS: tuple[Step, ...] = (statements(_STREAM_SCHEMA), statements(_READERS_SCHEMA))
assert len(STEPS) == SCHEMA_VERSION


def _schema(table: _Table) -> list[str]:
    """The SQL creating a table's storage (none of it replaces what exists)."""
    index_columns = "".join(f", {i.column}_pk, {i.column}_sk" for i in table.indexes.values())
    bare = table.sql.strip('"')
    statements = [
        f"CREATE TABLE IF NOT EXISTS {table.sql} (pk NOT NULL, sk NOT NULL, item NOT NULL, "
        f"expires INTEGER{index_columns}, UNIQUE (pk, sk))"
    ]
    for index in table.indexes.values():
        statements.append(
            f'CREATE INDEX IF NOT EXISTS "{bare}_{index.name}" ON {table.sql} '
            f"({index.column}_pk, {index.column}_sk, pk, sk) WHERE {index.column}_pk IS NOT NULL"
        )
    if table.definition.ttl_attribute:
        statements.append(
            f'CREATE INDEX IF NOT EXISTS "{bare}_expiry" ON {table.sql} (expires) '
            "WHERE expires IS NOT NULL"
        )
    return statements


def _utc_now() -> datetime:
    return datetime.now(UTC)


class _Paginator:
    """``get_paginator("query"|"scan")``: pages, following LastEvaluatedKey (PageSize sets
    the Limit of each request)."""

    def __init__(self, call: Callable[..., dict[str, Any]]) -> None:
        self._call = call

    def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
        config = dict(request.pop("PaginationConfig", None) or {})
        if "PageSize" in config:
            request["Limit"] = config.pop("PageSize")
        if config:
            raise ParamValidationError(
                report=f"PaginationConfig not supported here: {sorted(config)}"
            )
        while True:
            page = self._call(**request)
            yield page
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            request = {**request, "ExclusiveStartKey": last}


@dataclass
class _Write:
    """One item written (or refused) by a call: the images before and after."""

    table: _Table
    key: tuple[Any, Any]
    old_stored: str | bytes | None
    old: Item | None
    new: Item | None
    new_stored: str | bytes | None = None


@dataclass
class _Step:
    """One item of a TransactWriteItems: what it does to which item, on what condition."""

    kind: str
    table: _Table
    key: tuple[Any, Any]
    request: Mapping[str, Any]
    condition: ex.Condition | None
    update: ex.Update | None = None

    def apply(
        self, old: Item | None, names: Mapping[str, str], values: Mapping[str, Typed]
    ) -> Item | None:
        """The item this step leaves (``old`` for a ConditionCheck)."""
        if self.kind == "Put":
            return dict(self.request["Item"])
        if self.kind == "Delete":
            return None
        if self.kind == "Update":
            base = old or dict(self.request["Key"])
            if self.update is None:
                return base
            new, _ = self.update.apply(base, names, values, self.table.key_names)
            return new
        return old


_STEP_PARAMETERS = {
    "Put": _TRANSACT_PUT,
    "Update": _TRANSACT_UPDATE,
    "Delete": _TRANSACT_KEYED,
    "ConditionCheck": _TRANSACT_KEYED,
}
_STEP_REQUIRED = {
    "Put": _ITEM_REQUIRED,
    "Update": frozenset({"TableName", "Key", "UpdateExpression"}),
    "Delete": _KEY_REQUIRED,
    "ConditionCheck": frozenset({"TableName", "Key", "ConditionExpression"}),
}


class SqliteTables:
    """DynamoDB's low-level client, the part chronoq uses, over one SQLite database.

    ``tables`` are chronoq's table definitions (key schema, indexes and their projection, TTL
    attribute, stream); ``names`` maps each definition's id to the name callers give as
    TableName (default: the id). ``path`` None keeps the database in memory.

    Methods take the keyword arguments of boto3's ``dynamodb`` client and answer as it does
    (without ResponseMetadata): get_item, put_item, update_item, delete_item, query, scan,
    batch_get_item, batch_write_item, transact_write_items, execute_statement (the INSERT chronoq
    sends), describe_table, get_paginator.
    Errors are ClientErrors with DynamoDB's codes, their classes reachable as
    ``exceptions.<Code>``. Reads are always consistent. A Query or Scan reads at most
    ``Limit`` items and about 1 MB before answering a page; it answers a LastEvaluatedKey only
    when more items may follow.

    Besides DynamoDB's API: ``sweep_expired`` deletes items whose TTL has passed, a few at a
    time (until then they are still read, as in DynamoDB); ``read_stream`` and
    ``trim_stream`` read and drop a stream's records; ``stored`` reads an item for metering,
    unobserved.

    ``observer``, if given, hears of every call that succeeded or whose condition failed:
    (``"dynamodb:<Operation>"``, the request's keyword arguments, the answer; for a failed
    condition the error response). The answer it hears of a write also carries, under the
    key ``"_written"``, a list of ``(table name, item before or None, item after or None)``
    for each item the call wrote (for a failed condition: the item, before and after, as it
    stays); the caller's answer does not.

    One connection serves every thread, behind a lock: a write's read, condition and write
    are one step, and SQLite answers a call in microseconds.
    """

    exceptions = TableErrors

    def __init__(
        self,
        path: Path | None,
        tables: Iterable[r.Table],
        names: Mapping[str, str] | None = None,
        clock: Callable[[], datetime] = _utc_now,
        observer: Observer | None = None,
    ) -> None:
        self._tables = _definitions(tables, names)
        self._by_id = {t.definition.id: t for t in self._tables.values()}
        self._clock = clock
        self._observer = observer
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path),
            check_same_thread=False,
            isolation_level=None,
            cached_statements=256,
        )
        self._open(path)

    def _open(self, path: Path | None) -> None:
        db = self._db
        if path is not None:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA temp_store=MEMORY")
        try:
            migrate(db, STEPS, f"{path or 'the tables database'}")
        except NewerSchema:
            db.close()
            raise
        # (a table the deployment has gained since the database was made: created empty; an
        # index a table has gained: its columns added, empty, as no item stored carries its
        # keys yet)
        db.execute("BEGIN IMMEDIATE")
        try:
            for table in self._tables.values():
                create, *indexes = _schema(table)
                db.execute(create)
                have = {row[1] for row in db.execute(f"PRAGMA table_info({table.sql})")}
                for index in table.indexes.values():
                    for column in (f"{index.column}_pk", f"{index.column}_sk"):
                        if column not in have:
                            db.execute(f"ALTER TABLE {table.sql} ADD COLUMN {column}")
                for statement in indexes:
                    db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close the database (every later call fails)."""
        with self._lock:
            self._db.close()

    # --- helpers ---------------------------------------------------------------------------

    def _table(self, name: str, operation: str) -> _Table:
        table = self._tables.get(name)
        if table is None:
            raise ResourceNotFoundException(
                {
                    "Error": {
                        "Code": "ResourceNotFoundException",
                        "Message": "Requested resource not found",
                    }
                },
                operation,
            )
        return table

    def _observe(
        self,
        operation: str,
        request: dict[str, Any],
        response: dict[str, Any],
        writes: Iterable[_Write] = (),
    ) -> None:
        if self._observer is None:
            return
        written = [(w.table.name, w.old, w.new) for w in writes]
        self._observer(
            f"dynamodb:{operation}",
            request,
            {**response, "_written": written} if written else response,
        )

    def _read(self, table: _Table, key: tuple[Any, Any]) -> str | bytes | None:
        row = self._db.execute(table.select, key).fetchone()
        return None if row is None else row[0]

    def _commit(self, writes: list[_Write]) -> None:
        """Store what the writes leave (and their stream records) in one transaction."""
        statements: list[tuple[str, tuple[Any, ...]]] = []
        at: float | None = None
        for w in writes:
            if w.new is not None:
                assert w.new_stored is not None
                statements.append((w.table.upsert, w.table.row(w.key, w.new, w.new_stored)))
            elif w.old is not None:
                statements.append((w.table.delete, w.key))
            if w.table.streamed and w.old != w.new:
                at = self._clock().timestamp() if at is None else at
                event = "INSERT" if w.old is None else "REMOVE" if w.new is None else "MODIFY"
                record = (w.table.definition.id, event, w.old_stored, w.new_stored, at, 0)
                statements.append((_APPEND, record))
        if len(statements) == 1:
            self._db.execute(*statements[0])
            return
        if not statements:
            return
        self._db.execute("BEGIN")
        try:
            for statement in statements:
                self._db.execute(*statement)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _condition_failed(
        self, operation: str, request: dict[str, Any], write: _Write
    ) -> ConditionalCheckFailedException:
        message = "The conditional request failed"
        response: dict[str, Any] = {
            "Error": {"Code": "ConditionalCheckFailedException", "Message": message},
            "message": message,
        }
        if request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and write.old:
            response["Item"] = write.old
        write.new = write.old
        self._observe(operation, request, response, [write])
        return ConditionalCheckFailedException(response, operation)  # type: ignore[arg-type]

    def _needs_old(self, table: _Table, conditional: bool, returns: str) -> bool:
        """Must a put or delete read the item it replaces first? (A condition, an answer, a
        stream record or the meter needs it.)"""
        return conditional or returns != "NONE" or table.streamed or self._observer is not None

    # --- single items ----------------------------------------------------------------------

    @_operation("GetItem")
    def get_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _GET, _KEY_REQUIRED)
        table = self._table(request["TableName"], "GetItem")
        key = table.key_of(request["Key"])
        projection = _projection(request)
        with self._lock:
            stored = self._read(table, key)
        response: dict[str, Any] = {}
        if stored is not None:
            item = decode(stored)
            if projection is not None:
                item = projection.apply(item, request.get("ExpressionAttributeNames") or {})
            response["Item"] = item
        self._observe("GetItem", request, response)
        return response

    @_operation("PutItem")
    def put_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _PUT, _ITEM_REQUIRED)
        table = self._table(request["TableName"], "PutItem")
        item: Item = request["Item"]
        key = table.key_of_item(item)
        condition = _condition(request, ())
        returns = _returns(request, ("NONE", "ALL_OLD"))
        stored = _stored(item, _TOO_LARGE)
        names, values = _placeholders(request)
        needs_old = self._needs_old(table, condition is not None, returns)
        with self._lock:
            old_stored = self._read(table, key) if needs_old else None
            write = _Write(
                table, key, old_stored, decode(old_stored) if old_stored else None, item, stored
            )
            refused = condition is not None and not condition.test(write.old or {}, names, values)
            if not refused:
                self._commit([write])
        if refused:
            raise self._condition_failed("PutItem", request, write)
        response = {"Attributes": write.old} if returns == "ALL_OLD" and write.old else {}
        self._observe("PutItem", request, response, [write])
        return response

    @_operation("UpdateItem")
    def update_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _UPDATE, _KEY_REQUIRED)
        table = self._table(request["TableName"], "UpdateItem")
        given_key: Item = request["Key"]
        key = table.key_of(given_key)
        text = request.get("UpdateExpression")
        try:
            update = ex.update(text) if text is not None else None
        except ex.InvalidExpression as problem:
            raise ExpressionError(f"Invalid UpdateExpression: {problem}") from None
        condition = _condition(request, [update] if update else [])
        returns = _returns(request, ("NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW"))
        names, values = _placeholders(request)
        with self._lock:
            old_stored = self._read(table, key)
            old = decode(old_stored) if old_stored else None
            write = _Write(table, key, old_stored, old, None)
            if condition is not None and not condition.test(old or {}, names, values):
                refused = True
            else:
                refused = False
                new, touched = (
                    update.apply(old or dict(given_key), names, values, table.key_names)
                    if update is not None
                    else (old or dict(given_key), [])
                )
                write.new = new
                if old is None or new != old:
                    write.new_stored = _stored(new, _TOO_LARGE_AFTER_UPDATE)
                    self._commit([write])
        if refused:
            raise self._condition_failed("UpdateItem", request, write)
        response = _update_answer(returns, old, new, touched)
        self._observe("UpdateItem", request, response, [write])
        return response

    @_operation("DeleteItem")
    def delete_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _DELETE, _KEY_REQUIRED)
        table = self._table(request["TableName"], "DeleteItem")
        key = table.key_of(request["Key"])
        condition = _condition(request, ())
        returns = _returns(request, ("NONE", "ALL_OLD"))
        names, values = _placeholders(request)
        needs_old = self._needs_old(table, condition is not None, returns)
        with self._lock:
            old_stored = self._read(table, key) if needs_old else None
            old = decode(old_stored) if old_stored else None
            write = _Write(table, key, old_stored, old, None)
            refused = condition is not None and not condition.test(old or {}, names, values)
            if not refused:
                if needs_old:
                    self._commit([write])
                else:
                    self._db.execute(table.delete, key)
        if refused:
            raise self._condition_failed("DeleteItem", request, write)
        response = {"Attributes": old} if returns == "ALL_OLD" and old else {}
        self._observe("DeleteItem", request, response, [write])
        return response

    @_operation("ExecuteStatement")
    def execute_statement(self, **request: Any) -> dict[str, Any]:
        """PartiQL, the one form chronoq writes with (chronoq.aws.audit): ``INSERT INTO
        "table" VALUE {'name': ?, ...}`` with one parameter per value. As in DynamoDB, an
        INSERT of a key that exists is refused (DuplicateItemException): nothing is written
        over. Any other statement is a ValidationException."""
        _check_parameters(request, _STATEMENT, frozenset({"Statement"}))
        try:
            table_name, item = parse_insert(request["Statement"], request.get("Parameters"))
        except StatementError as problem:
            raise ExpressionError(str(problem)) from None
        table = self._table(table_name, "ExecuteStatement")
        key = table.key_of_item(item)
        stored = _stored(item, _TOO_LARGE)
        with self._lock:
            old_stored = self._read(table, key)
            write = _Write(
                table, key, old_stored, decode(old_stored) if old_stored else None, item, stored
            )
            if old_stored is None:
                self._commit([write])
        if old_stored is not None:
            message = "Duplicate primary key exists in table"
            response: dict[str, Any] = {
                "Error": {"Code": "DuplicateItemException", "Message": message},
                "message": message,
            }
            write.new = write.old
            self._observe("ExecuteStatement", request, response, [write])
            raise DuplicateItemException(response, "ExecuteStatement")  # type: ignore[arg-type]
        answer: dict[str, Any] = {"Items": []}
        self._observe("ExecuteStatement", request, answer, [write])
        return answer

    # --- many items ------------------------------------------------------------------------

    @_operation("Query")
    def query(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _QUERY, frozenset({"TableName", "KeyConditionExpression"}))
        table = self._table(request["TableName"], "Query")
        index = _index(table, request)
        key_condition = _parse(
            ex.key_condition, request["KeyConditionExpression"], "KeyConditionExpression"
        )
        reading = _Reading.of(request, key_condition)
        partition_key = index.partition_key if index else table.partition_key
        sort_key = index.sort_key if index else table.sort_key
        where, parameters = _key_range(
            key_condition, reading.values, reading.names, partition_key, sort_key, index
        )
        forward = request.get("ScanIndexForward", True)
        order = ["sk"] if index is None else [f"{index.column}_sk", "pk", "sk"]
        start = request.get("ExclusiveStartKey")
        if start is not None:
            position = _start(table, index, start)
            bound = position[1:] if index is None else (position[3], position[0], position[1])
            where.append(
                f"({', '.join(order)}) {'>' if forward else '<'} ({', '.join('?' * len(bound))})"
            )
            parameters.extend(bound)
        ordering = ", ".join(f"{c} {'ASC' if forward else 'DESC'}" for c in order)
        sql = f"SELECT item FROM {table.sql} WHERE {' AND '.join(where)} ORDER BY {ordering}"  # noqa: S608
        response = self._page(table, index, sql, parameters, reading, request.get("Limit"))
        self._observe("Query", request, response)
        return response

    @_operation("Scan")
    def scan(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _SCAN, _TABLE_ONLY)
        table = self._table(request["TableName"], "Scan")
        index = _index(table, request)
        reading = _Reading.of(request, None)
        order = (
            ["pk", "sk"]
            if index is None
            else [f"{index.column}_pk", f"{index.column}_sk", "pk", "sk"]
        )
        where = [] if index is None else [f"{index.column}_pk IS NOT NULL"]
        parameters: list[Any] = []
        start = request.get("ExclusiveStartKey")
        if start is not None:
            position = _start(table, index, start)
            bound = position[:2] if index is None else (position[2], position[3], *position[:2])
            where.append(f"({', '.join(order)}) > ({', '.join('?' * len(bound))})")
            parameters.extend(bound)
        sql = (
            f"SELECT item FROM {table.sql}"  # noqa: S608
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {', '.join(order)}"
        )
        response = self._page(table, index, sql, parameters, reading, request.get("Limit"))
        self._observe("Scan", request, response)
        return response

    def _page(
        self,
        table: _Table,
        index: _Index | None,
        sql: str,
        parameters: list[Any],
        reading: _Reading,
        limit: int | None,
    ) -> dict[str, Any]:
        """One page of a Query or Scan: at most ``limit`` items read (then the filter), and
        about PAGE_BYTES; a LastEvaluatedKey when more may follow."""
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ExpressionError("Limit must be at least 1")
        rows: list[str | bytes] = []
        size = 0
        more = False
        with self._lock:
            cursor = self._db.execute(
                f"{sql} LIMIT ?", (*parameters, -1 if limit is None else limit + 1)
            )
            try:
                for (stored,) in cursor:
                    if (limit is not None and len(rows) == limit) or size >= PAGE_BYTES:
                        more = True
                        break
                    rows.append(stored)
                    size += len(stored)
            finally:
                cursor.close()
        items: list[Item] = []
        last: Item | None = None
        for stored in rows:
            last = decode(stored)
            entry = table.entry(last, index)
            if reading.keep(entry):
                items.append(reading.show(entry))
        response: dict[str, Any] = {"Count": len(items), "ScannedCount": len(rows)}
        if reading.select != "COUNT":
            response["Items"] = items
        if more and last is not None:
            response["LastEvaluatedKey"] = table.last_key(last, index)
        return response

    @_operation("BatchGetItem")
    def batch_get_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(
            request,
            frozenset({"RequestItems", "ReturnConsumedCapacity"}),
            frozenset({"RequestItems"}),
        )
        asked: dict[str, Any] = request["RequestItems"]
        if sum(len(a.get("Keys", ())) for a in asked.values()) > 100:
            raise ExpressionError("Too many items requested for the BatchGetItem call")
        reads = []
        for name, wanted in asked.items():
            table = self._table(name, "BatchGetItem")
            projection = _projection(wanted)
            keys = [table.key_of(k) for k in wanted["Keys"]]
            if len(set(keys)) != len(keys):
                raise ExpressionError("Provided list of item keys contains duplicates")
            reads.append((table, keys, projection, wanted.get("ExpressionAttributeNames") or {}))
        responses: dict[str, list[Item]] = {}
        for table, keys, projection, names in reads:
            with self._lock:
                found = [s for s in (self._read(table, k) for k in keys) if s is not None]
            items = [decode(s) for s in found]
            responses[table.name] = (
                [projection.apply(i, names) for i in items] if projection else items
            )
        response = {"Responses": responses, "UnprocessedKeys": {}}
        self._observe("BatchGetItem", request, response)
        return response

    @_operation("BatchWriteItem")
    def batch_write_item(self, **request: Any) -> dict[str, Any]:
        _check_parameters(
            request,
            frozenset({"RequestItems", "ReturnConsumedCapacity", "ReturnItemCollectionMetrics"}),
            frozenset({"RequestItems"}),
        )
        asked: dict[str, list[dict[str, Any]]] = request["RequestItems"]
        if sum(len(a) for a in asked.values()) > 25:
            raise ExpressionError("Too many items requested for the BatchWriteItem call")
        planned: list[tuple[_Table, tuple[Any, Any], Item | None]] = []
        for name, requests in asked.items():
            table = self._table(name, "BatchWriteItem")
            keys: set[tuple[Any, Any]] = set()
            for one in requests:
                item: Item | None = (one.get("PutRequest") or {}).get("Item")
                key = (
                    table.key_of_item(item)
                    if item is not None
                    else table.key_of(one["DeleteRequest"]["Key"])
                )
                if key in keys:
                    raise ExpressionError("Provided list of item keys contains duplicates")
                keys.add(key)
                planned.append((table, key, item))
        writes = [
            _Write(table, key, None, None, item, _stored(item, _TOO_LARGE) if item else None)
            for table, key, item in planned
        ]
        with self._lock:
            for w in writes:
                if w.table.streamed or self._observer is not None or w.new is None:
                    w.old_stored = self._read(w.table, w.key)
                    w.old = decode(w.old_stored) if w.old_stored else None
            self._commit(writes)
        response: dict[str, Any] = {"UnprocessedItems": {}}
        self._observe("BatchWriteItem", request, response, writes)
        return response

    # --- tables ----------------------------------------------------------------------------

    @_operation("TransactWriteItems")
    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        """Put, Update, Delete and ConditionCheck items together: every condition is tested
        against the items as they are, then every write is made in one SQLite transaction,
        or none is (TransactionCanceledException, with one CancellationReason per item)."""
        _check_parameters(request, _TRANSACT, frozenset({"TransactItems"}))
        entries: list[dict[str, Any]] = request["TransactItems"]
        if not 1 <= len(entries) <= MAX_TRANSACT_ITEMS:
            raise ExpressionError(
                "Member must have length less than or equal to 100 and at least 1"
            )
        planned = [self._transact_step(entry) for entry in entries]
        if len({(step.table.name, step.key) for step in planned}) != len(planned):
            raise ExpressionError(
                "Transaction request cannot include multiple operations on one item"
            )
        with self._lock:
            writes: list[_Write] = []
            reasons: list[dict[str, Any]] = []
            for step in planned:
                old_stored = self._read(step.table, step.key)
                old = decode(old_stored) if old_stored else None
                names, values = _placeholders(step.request)
                write = _Write(step.table, step.key, old_stored, old, old)
                writes.append(write)
                if step.condition is not None and not step.condition.test(old or {}, names, values):
                    reason: dict[str, Any] = {
                        "Code": "ConditionalCheckFailed",
                        "Message": "The conditional request failed",
                    }
                    failure = step.request.get("ReturnValuesOnConditionCheckFailure")
                    if failure == "ALL_OLD" and old:
                        reason["Item"] = old
                    reasons.append(reason)
                    continue
                reasons.append({"Code": "None"})
                write.new = step.apply(old, names, values)
            refused = any(reason["Code"] != "None" for reason in reasons)
            changed = [
                w for w, s in zip(writes, planned, strict=True) if s.kind != "ConditionCheck"
            ]
            if not refused:
                for w in changed:
                    if w.new is not None and w.new != w.old:
                        w.new_stored = _stored(w.new, _TOO_LARGE_AFTER_UPDATE)
                self._commit([w for w in changed if w.new != w.old])
        if refused:
            codes = ", ".join(reason["Code"] for reason in reasons)
            message = (
                "Transaction cancelled, please refer cancellation reasons for specific reasons"
                f" [{codes}]"
            )
            response: dict[str, Any] = {
                "Error": {"Code": "TransactionCanceledException", "Message": message},
                "Message": message,
                "CancellationReasons": reasons,
            }
            for w in writes:
                w.new = w.old
            self._observe("TransactWriteItems", request, response, writes)
            raise TransactionCanceledException(response, "TransactWriteItems")  # type: ignore[arg-type]
        self._observe("TransactWriteItems", request, {}, writes)
        return {}

    def _transact_step(self, entry: Mapping[str, Any]) -> _Step:
        """One item of a TransactWriteItems, parsed and checked (nothing read yet)."""
        if len(entry) != 1 or next(iter(entry)) not in _STEP_PARAMETERS:
            raise ExpressionError(
                "TransactItems must each hold one of Put, Update, Delete, ConditionCheck"
            )
        ((kind, request),) = entry.items()
        _check_parameters(request, _STEP_PARAMETERS[kind], _STEP_REQUIRED[kind])
        table = self._table(request["TableName"], "TransactWriteItems")
        if kind == "Put":
            item: Item = request["Item"]
            _stored(item, _TOO_LARGE)
            return _Step(kind, table, table.key_of_item(item), request, _condition(request, ()))
        key = table.key_of(request["Key"])
        if kind == "Update":
            try:
                update = ex.update(request["UpdateExpression"])
            except ex.InvalidExpression as problem:
                raise ExpressionError(f"Invalid UpdateExpression: {problem}") from None
            condition = _condition(request, [update])
            return _Step(kind, table, key, request, condition, update)
        return _Step(kind, table, key, request, _condition(request, ()))

    @_operation("DescribeTable")
    def describe_table(self, **request: Any) -> dict[str, Any]:
        _check_parameters(request, _TABLE_ONLY, _TABLE_ONLY)
        table = self._table(request["TableName"], "DescribeTable")
        with self._lock:
            count = self._db.execute(f"SELECT count(*) FROM {table.sql}").fetchone()[0]  # noqa: S608
        definition = table.definition
        attributes = {table.partition_key, *([table.sort_key] if table.sort_key else [])}
        described: dict[str, Any] = {
            "TableName": table.name,
            "TableStatus": "ACTIVE",
            "KeySchema": _key_schema(table.partition_key, table.sort_key),
            "ItemCount": count,
            "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
        }
        if table.indexes:
            described["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": i.name,
                    "KeySchema": _key_schema(i.partition_key, i.sort_key),
                    "Projection": {"ProjectionType": "KEYS_ONLY" if i.keys_only else "ALL"},
                    "IndexStatus": "ACTIVE",
                }
                for i in table.indexes.values()
            ]
            for i in table.indexes.values():
                attributes |= {i.partition_key, *([i.sort_key] if i.sort_key else [])}
        described["AttributeDefinitions"] = [
            {"AttributeName": a, "AttributeType": "S"} for a in sorted(attributes)
        ]
        if definition.stream:
            described["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            }
        response = {"Table": described}
        self._observe("DescribeTable", request, response)
        return response

    def get_paginator(self, operation: str) -> _Paginator:
        """A paginator of ``"query"`` or ``"scan"``."""
        calls = {"query": self.query, "scan": self.scan}
        if operation not in calls:
            raise ValueError(f"no paginator for {operation!r}")
        return _Paginator(calls[operation])

    # --- beyond DynamoDB's API -------------------------------------------------------------

    def stored(self, table_name: str, key: Mapping[str, Any]) -> Item | None:
        """The item as stored now (the typed item), unobserved; None when there is none (or
        no such table, or no such key)."""
        table = self._tables.get(table_name)
        if table is None:
            return None
        try:
            position = table.key_of(key)
        except ExpressionError:
            return None
        with self._lock:
            stored = self._read(table, position)
        return decode(stored) if stored is not None else None

    def sweep_expired(self, limit: int = 100) -> int:
        """Delete at most ``limit`` items whose TTL has passed (the earliest expired first),
        each with a REMOVE record in its table's stream as DynamoDB's TTL deletes make;
        the number deleted. Call it again and again: each call does a bounded amount."""
        now = int(self._clock().timestamp())
        removed = 0
        for table in self._tables.values():
            if not table.definition.ttl_attribute or removed >= limit:
                continue
            removed += self._sweep(table, now, limit - removed)
        return removed

    def _sweep(self, table: _Table, now: int, limit: int) -> int:
        with self._lock:
            self._db.execute("BEGIN")
            try:
                gone = self._db.execute(
                    f"DELETE FROM {table.sql} WHERE rowid IN (SELECT rowid FROM {table.sql} "  # noqa: S608
                    "WHERE expires < ? ORDER BY expires LIMIT ?) RETURNING item",
                    (now, limit),
                ).fetchall()
                if table.streamed and gone:
                    at = self._clock().timestamp()
                    table_id = table.definition.id
                    self._db.executemany(
                        _APPEND, [(table_id, "REMOVE", s, None, at, 1) for (s,) in gone]
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return len(gone)

    def read_stream(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        """The stream records of table ``table_id`` (its definition's id) after sequence
        number ``after``, oldest first, at most ``limit``: as DynamoDB Streams' GetRecords
        answers them (NEW_AND_OLD_IMAGES)."""
        table = self._by_id[table_id]
        if not table.streamed:
            raise ValueError(f"table {table_id} has no stream")
        with self._lock:
            rows = self._db.execute(_READ_STREAM, (table_id, after, limit)).fetchall()
        return [_record(table, *row) for row in rows]

    def stream_head(self) -> int:
        """The highest sequence number in the streams' log (0: none), of any table."""
        with self._lock:
            (head,) = self._db.execute("SELECT coalesce(max(seq), 0) FROM stream").fetchone()
        return int(head)

    def trim_stream(self, through: int) -> None:
        """Drop the stream records up to sequence number ``through`` (sequence numbers
        increase across every table's stream: they share one log)."""
        with self._lock:
            self._db.execute("DELETE FROM stream WHERE seq <= ?", (through,))

    def stream_position(self, reader: str) -> int:
        """The last sequence number handed over to ``reader`` (0: none yet; a reader asking
        for the first time is known from then on: records are kept until it has had them)."""
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO stream_readers (reader, position) VALUES (?, 0)", (reader,)
            )
            (position,) = self._db.execute(
                "SELECT position FROM stream_readers WHERE reader = ?", (reader,)
            ).fetchone()
        return int(position)

    def handed_over(self, reader: str, through: int) -> None:
        """``reader`` has had the records up to sequence number ``through``: those every
        reader has had are dropped."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO stream_readers (reader, position) VALUES (?, ?) "
                    "ON CONFLICT (reader) DO UPDATE "
                    "SET position = max(position, excluded.position)",
                    (reader, through),
                )
                self._db.execute(
                    "DELETE FROM stream WHERE seq <= (SELECT min(position) FROM stream_readers)"
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise


# --- Requests ----------------------------------------------------------------------------------


def _parse(parser: Callable[[str], Any], text: str, parameter: str) -> Any:
    try:
        return parser(text)
    except ex.InvalidExpression as problem:
        raise ExpressionError(f"Invalid {parameter}: {problem}") from None


def _check_placeholders(request: Mapping[str, Any], parsed: Iterable[Any]) -> None:
    names: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    for p in parsed:
        names = names | p.names if names else p.names
        values = (
            values | getattr(p, "values", frozenset())
            if values
            else getattr(p, "values", frozenset())
        )
    ex.check_placeholders(
        request.get("ExpressionAttributeNames"),
        request.get("ExpressionAttributeValues"),
        names,
        values,
    )


def _placeholders(request: Mapping[str, Any]) -> tuple[Mapping[str, str], Mapping[str, Typed]]:
    return request.get("ExpressionAttributeNames") or {}, request.get(
        "ExpressionAttributeValues"
    ) or {}


def _condition(request: Mapping[str, Any], others: Iterable[Any]) -> ex.Condition | None:
    """The request's ConditionExpression, parsed; every placeholder checked."""
    text = request.get("ConditionExpression")
    condition = _parse(ex.condition, text, "ConditionExpression") if text is not None else None
    _check_placeholders(request, [*others, condition] if condition else others)
    return condition


def _projection(request: Mapping[str, Any]) -> ex.Projection | None:
    text = request.get("ProjectionExpression")
    if text is None:
        if request.get("ExpressionAttributeNames") is not None:
            _check_placeholders(request, ())
        return None
    projection: ex.Projection = _parse(ex.projection, text, "ProjectionExpression")
    ex.check_placeholders(
        request.get("ExpressionAttributeNames"), None, projection.names, frozenset()
    )
    return projection


def _returns(request: Mapping[str, Any], allowed: tuple[str, ...]) -> str:
    returns = request.get("ReturnValues", "NONE")
    if returns not in allowed:
        raise ExpressionError("Return values set to invalid value")
    return str(returns)


def _update_answer(
    returns: str, old: Item | None, new: Item, touched: list[ex.Steps]
) -> dict[str, Any]:
    if returns == "ALL_NEW":
        shown: Item | None = new
    elif returns == "ALL_OLD":
        shown = old
    elif returns == "UPDATED_NEW":
        shown = ex.project(new, touched)
    elif returns == "UPDATED_OLD":
        shown = ex.project(old, touched) if old else None
    else:
        shown = None
    return {"Attributes": shown} if shown else {}


def _index(table: _Table, request: Mapping[str, Any]) -> _Index | None:
    name = request.get("IndexName")
    if name is None:
        return None
    index = table.indexes.get(name)
    if index is None:
        raise ExpressionError(f"The table does not have the specified index: {name}")
    if request.get("ConsistentRead"):
        raise ExpressionError("Consistent reads are not supported on global secondary indexes")
    return index


def _start(table: _Table, index: _Index | None, start: Mapping[str, Typed]) -> tuple[Any, ...]:
    """An ExclusiveStartKey's columns: pk, sk (and the index's pk, sk)."""
    try:
        position = table.key_of({k: start[k] for k in table.key_names})
        if index is None:
            if len(start) != len(table.key_names):
                raise KeyError
            return position
        partition = _scalar(start[index.partition_key])
        sort = _scalar(start[index.sort_key]) if index.sort_key else ""
    except (KeyError, ExpressionError):
        raise ExpressionError(
            "The provided starting key is invalid: The provided key element does not match "
            "the schema"
        ) from None
    return (*position, partition, sort)


@dataclass(frozen=True)
class _Reading:
    """What a Query or Scan keeps and shows of the items it reads."""

    filter: ex.Condition | None
    projection: ex.Projection | None
    names: Mapping[str, str]
    values: Mapping[str, Typed]
    select: str

    @classmethod
    def of(cls, request: Mapping[str, Any], key_condition: ex.KeyCondition | None) -> _Reading:
        text = request.get("FilterExpression")
        found = _parse(ex.condition, text, "FilterExpression") if text is not None else None
        shown = request.get("ProjectionExpression")
        projection = (
            _parse(ex.projection, shown, "ProjectionExpression") if shown is not None else None
        )
        _check_placeholders(
            request, [p for p in (key_condition, found, projection) if p is not None]
        )
        select = request.get("Select", "ALL_ATTRIBUTES")
        if select not in _SELECTS:
            raise ExpressionError(f"Select has an invalid value: {select}")
        names, values = _placeholders(request)
        return cls(found, projection, names, values, select)

    def keep(self, item: Item) -> bool:
        return self.filter is None or self.filter.test(item, self.names, self.values)

    def show(self, item: Item) -> Item:
        return item if self.projection is None else self.projection.apply(item, self.names)


_SORT_OPERATORS = {"=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _key_range(
    condition: ex.KeyCondition,
    values: Mapping[str, Typed],
    names: Mapping[str, str],
    partition_key: str,
    sort_key: str | None,
    index: _Index | None,
) -> tuple[list[str], list[Any]]:
    """The SQL conditions (and their parameters) selecting a key condition's items."""
    prefix = "" if index is None else f"{index.column}_"
    parts = {str(p.path.resolve(names)[0]): p for p in condition.parts}
    partition = parts.pop(partition_key, None)
    if partition is None or partition.operator != "=":
        raise ExpressionError(f"Query condition missed key schema element: {partition_key}")
    where, parameters = [f"{prefix}pk = ?"], [_scalar(values[partition.values[0]])]
    if not parts:
        return where, parameters
    name, sort = parts.popitem()
    if name != sort_key:
        raise ExpressionError("Query key condition not supported")
    bounds = [values[v] for v in sort.values]
    column = f"{prefix}sk"
    if sort.operator == "BETWEEN":
        if (ex.order(bounds[0], bounds[1]) or 0) > 0:
            raise ExpressionError(
                "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to "
                "be greater than or equal to lower bound"
            )
        where.append(f"{column} BETWEEN ? AND ?")
        parameters += [_scalar(b) for b in bounds]
    elif sort.operator == "begins_with":
        text = bounds[0].get("S")
        if text is None:
            kind = ex.kind_of(bounds[0])
            raise ExpressionError(
                "Invalid KeyConditionExpression: Incorrect operand type for operator or "
                f"function; operator or function: begins_with, operand type: {kind}"
            )
        where.append(f"{column} >= ?")
        parameters.append(text)
        after = _after_prefix(text)
        if after is not None:
            where.append(f"{column} < ?")
            parameters.append(after)
    else:
        where.append(f"{column} {_SORT_OPERATORS[sort.operator]} ?")
        parameters.append(_scalar(bounds[0]))
    return where, parameters


def _key_schema(partition_key: str, sort_key: str | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition_key, "KeyType": "HASH"}]
    if sort_key:
        schema.append({"AttributeName": sort_key, "KeyType": "RANGE"})
    return schema


def _record(
    table: _Table,
    sequence: int,
    event: str,
    old_stored: str | bytes | None,
    new_stored: str | bytes | None,
    at: float,
    by_ttl: int,
) -> dict[str, Any]:
    """A stream record as GetRecords answers it."""
    old = decode(old_stored) if old_stored is not None else None
    new = decode(new_stored) if new_stored is not None else None
    image = new if new is not None else old
    assert image is not None
    keys = table.keys(image)
    change: dict[str, Any] = {
        "ApproximateCreationDateTime": datetime.fromtimestamp(at, UTC),
        "Keys": keys,
        "SequenceNumber": str(sequence),
        # (the images as stored: what the record takes, without sizing each value again)
        "SizeBytes": len(old_stored or "") + len(new_stored or ""),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new is not None:
        change["NewImage"] = new
    if old is not None:
        change["OldImage"] = old
    record: dict[str, Any] = {
        "eventID": f"{sequence:032x}",
        "eventName": event,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": change,
    }
    if by_ttl:
        record["userIdentity"] = dict(TTL_IDENTITY)
    return record
