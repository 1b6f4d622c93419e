"""chronoq local's state on disk: the embedded DynamoDB kept in the data directory.

Every write to a table (put, update, delete, transaction, batch) is followed, under one lock,
by a line in a journal giving the written item's new state (or its deletion); a snapshot of
every table compacts the journal now and then and on a clean stop (written to a temporary
file, then renamed over the last one). A start reads the snapshot and replays the journal
after it, so a ``kill -9`` loses no write that a caller saw succeed: a line is appended (to
the operating system, not flushed to the disk: a crash of the machine may lose its last
writes) before the call that made it returns. Items keep their TTL attributes; those past
their TTL are dropped at a start, as DynamoDB would expire them.

What is not kept: SQS messages and Step Functions executions in flight. ``recover`` hands
them back to the system after a restart (see there)."""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.domain.runs import Run, RunMessage, RunStatus

if TYPE_CHECKING:
    from chronoq.aws.queues import SqsQueues
    from chronoq.aws.store import DynamoStore

logger = logging.getLogger(__name__)

STATE_DIR = "state"
SNAPSHOT_FILE = "dynamodb.json"
JOURNAL_FILE = "dynamodb.journal"
#: A journal longer than this is compacted into a new snapshot.
COMPACT_BYTES = 4 * 1024 * 1024

_WRITES = ("put_item", "update_item", "delete_item")


def _json(value: Any) -> str:
    """DynamoDB JSON as a request carries it: binary values in base64."""
    return json.dumps(value, sort_keys=True, default=lambda b: base64.b64encode(b).decode("ascii"))


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


@dataclass(frozen=True)
class Kept:
    """What a data directory of the moto engine kept: every item not expired, as (table id,
    typed item), and when the files last changed (epoch seconds)."""

    items: list[tuple[str, dict[str, Any]]]
    saved_at: float


def kept_items(directory: Path, tables: dict[str, r.Table], now: float) -> Kept:
    """The items kept in ``directory`` (its snapshot, then its journal), by table id
    (``tables``: the deployment's tables by id; a kept table is named ``<prefix>-<id>``)."""
    found = [p for p in (directory / SNAPSHOT_FILE, directory / JOURNAL_FILE) if p.exists()]
    by_name = {t.id.lower(): t for t in tables.values()}
    kept: dict[str, dict[str, dict[str, Any]]] = {}

    def table_of(name: str) -> r.Table | None:
        return by_name.get(name.rsplit("-", 1)[-1])

    def key_text(table: r.Table, item: dict[str, Any]) -> str:
        names = [n for n in (table.partition_key, table.sort_key) if n]
        return _json({n: item[n] for n in names})

    snapshot = directory / SNAPSHOT_FILE
    if snapshot.exists():
        for name, items in json.loads(snapshot.read_text()).items():
            table = table_of(name)
            if table is not None:
                kept[table.id] = {key_text(table, i): i for i in items}
    journal = directory / JOURNAL_FILE
    if journal.exists():
        for line in journal.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:  # the last line, cut short by a kill
                continue
            table = table_of(entry["t"])
            if table is None:
                continue
            items = kept.setdefault(table.id, {})
            if entry["i"] is None:
                items.pop(_json(entry["k"]), None)
            else:
                items[_json(entry["k"])] = entry["i"]
    alive = [
        (table_id, {name: _bytes(value) for name, value in item.items()})
        for table_id, items in kept.items()
        for item in items.values()
        if not _expired_item(tables[table_id].ttl_attribute, item, now)
    ]
    saved_at = max((p.stat().st_mtime for p in found), default=now)
    return Kept(alive, saved_at)


def _bytes(value: dict[str, Any]) -> dict[str, Any]:
    """A typed value as kept (binary in base64) as a request carries it (binary as bytes)."""
    ((kind, data),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(data)}
    if kind == "BS":
        return {"BS": [base64.b64decode(d) for d in data]}
    if kind == "M":
        return {"M": {k: _bytes(v) for k, v in data.items()}}
    if kind == "L":
        return {"L": [_bytes(v) for v in data]}
    return value


def _expired_item(attribute: str | None, item: dict[str, Any], now: float) -> bool:
    value = item.get(attribute, {}).get("N") if attribute else None
    return value is not None and float(value) < now


class TableState:
    """The items of a moto DynamoDB backend's tables, kept in ``directory``."""

    def __init__(self, directory: Path, backend: Any, ttl_attributes: dict[str, str]) -> None:
        self.directory = directory
        self._backend = backend
        #: Each table's TTL attribute (tables with none are absent).
        self._ttl = ttl_attributes
        self._lock = threading.RLock()
        self._local = threading.local()
        self._journal_fd: int | None = None
        self._originals: dict[str, Callable[..., Any]] = {}
        #: When the state on disk last changed (epoch seconds; None: there was none).
        self.saved_at: float | None = None

    @property
    def snapshot_path(self) -> Path:
        return self.directory / SNAPSHOT_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    # --- start: read back what was kept -------------------------------------------------------

    def restore(self) -> bool:
        """Put the kept items into the (new, empty) tables; True if there were any files."""
        found = [p for p in (self.snapshot_path, self.journal_path) if p.exists()]
        if not found:
            return False
        self.saved_at = max(p.stat().st_mtime for p in found)
        items: dict[str, dict[str, dict[str, Any]]] = {}
        if self.snapshot_path.exists():
            tables = json.loads(self.snapshot_path.read_text())
            for table, kept in tables.items():
                items[table] = {self._key_text(table, i): i for i in kept}
        if self.journal_path.exists():
            for line in self.journal_path.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:  # the last line, cut short by a kill
                    logger.warning("ignoring an incomplete journal line")
                    continue
                kept = items.setdefault(entry["t"], {})
                key = _json(entry["k"])
                if entry["i"] is None:
                    kept.pop(key, None)
                else:
                    kept[key] = entry["i"]
        now = time.time()
        for table, kept in items.items():
            if table not in self._backend.tables:
                logger.warning("ignoring the kept items of unknown table %s", table)
                continue
            for item in kept.values():
                if not self._expired(table, item, now):
                    self._backend.put_item(table, item)
        return True

    def _expired(self, table: str, item: dict[str, Any], now: float) -> bool:
        attribute = self._ttl.get(table)
        value = item.get(attribute, {}).get("N") if attribute else None
        return value is not None and float(value) < now

    def _key_of(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        schema = self._backend.tables[table]
        key = {schema.hash_key_attr: item[schema.hash_key_attr]}
        if schema.range_key_attr is not None:
            key[schema.range_key_attr] = item[schema.range_key_attr]
        return key

    def _key_text(self, table: str, item: dict[str, Any]) -> str:
        return _json(self._key_of(table, item))

    # --- running: journal every write ---------------------------------------------------------

    def start(self) -> None:
        """Compact what was restored into a new snapshot, then journal every write."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock:
            self._snapshot()
            self._journal_fd = os.open(
                self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
            )
        for name in _WRITES:
            self._originals[name] = getattr(self._backend, name)
            setattr(self._backend, name, self._journaled(name))
        self._originals["transact_write_items"] = self._backend.transact_write_items
        self._backend.transact_write_items = self._journaled_transaction

    def stop(self) -> None:
        """Stop journaling; a last snapshot (the journal emptied)."""
        for name, original in self._originals.items():
            setattr(self._backend, name, original)
        self._originals.clear()
        with self._lock:
            if self._journal_fd is not None:
                self._snapshot()
                os.close(self._journal_fd)
                self._journal_fd = None

    def compact_if_long(self) -> None:
        with self._lock:
            if self._journal_fd is not None and os.fstat(self._journal_fd).st_size > COMPACT_BYTES:
                self._snapshot()

    @contextlib.contextmanager
    def _outermost(self) -> Iterator[bool]:
        """True for a write that is not part of another (a transaction's own writes are
        journaled once it has succeeded)."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            yield depth == 0
        finally:
            self._local.depth = depth

    def _journaled(self, name: str) -> Callable[..., Any]:
        original = self._originals[name]

        @functools.wraps(original)
        def write(table_name: str, item_or_key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            with self._lock, self._outermost() as outermost:
                result = original(table_name, item_or_key, *args, **kwargs)
                if outermost:
                    self._record([(table_name, self._key_of(table_name, item_or_key))])
                return result

        return write

    def _journaled_transaction(self, transact_items: list[dict[str, Any]]) -> None:
        with self._lock, self._outermost() as outermost:
            self._originals["transact_write_items"](transact_items)
            if outermost:
                written = []
                for entry in transact_items:
                    kind, op = next(iter(entry.items()))
                    if kind == "ConditionCheck":
                        continue
                    table = op["TableName"]
                    written.append(
                        (table, self._key_of(table, op["Item"]) if kind == "Put" else op["Key"])
                    )
                self._record(written)

    def _record(self, written: list[tuple[str, dict[str, Any]]]) -> None:
        """Journal the current state of each (table, key) just written."""
        if self._journal_fd is None:
            return
        lines = []
        for table, key in written:
            item = self._backend.get_item(table, key)
            state = item.to_json()["Attributes"] if item is not None else None
            lines.append(_json({"t": table, "k": key, "i": state}))
        os.write(self._journal_fd, ("\n".join(lines) + "\n").encode())

    def _snapshot(self) -> None:
        """Every table's items into a new snapshot file; the journal emptied (lock held)."""
        tables = {
            name: [item.to_json()["Attributes"] for item in table.all_items()]
            for name, table in list(self._backend.tables.items())
        }
        _atomic_write(self.snapshot_path, _json(tables))
        if self._journal_fd is not None:
            os.ftruncate(self._journal_fd, 0)
        elif self.journal_path.exists():
            self.journal_path.unlink()


# --- after a restart: what was in flight ------------------------------------------------------

#: Why a run that was running when chronoq local stopped ended.
INTERRUPTED = "chronoq local stopped while the run was running; it was not run again"


def recover(
    client: Any,
    store: DynamoStore,
    queues: SqsQueues,
    runs_table: str,
    shards: int,
    saved_at: datetime,
    now: datetime,
) -> dict[str, int]:
    """Hand back to the system what a stop lost (SQS messages, executions in flight):

    - each shard's checkpoint moves back to the minute of ``saved_at`` (when the state was
      last written) less the default start deadline, so that the dispatcher sends again the
      occurrences whose messages may have been waiting on a queue: those that ran are
      dropped as duplicates by the worker and the run's first state, those too late are
      recorded MISSED, the others run (late, within their deadline);
    - a run with a record that had not started (SCHEDULED or QUEUED: a manual trigger, a
      claimed run) is sent again;
    - a run that was RUNNING lost its execution: it ends FAILED (``INTERRUPTED``), and it
      is not run again (its target may have been called already).

    Returns the counts of each, for the log."""
    since = ids.minute_of(saved_at) - timedelta(seconds=lim.DEFAULT_START_DEADLINE_SECONDS)
    for shard in range(shards):
        store.reopen_minute(shard, since)
    return give_back(store, queues, _unfinished_runs(client, runs_table), now)


def give_back(
    store: DynamoStore, queues: SqsQueues, runs: Iterable[Run], now: datetime
) -> dict[str, int]:
    """Runs not ended whose message or execution a stop lost: a RUNNING one ends FAILED
    (``INTERRUPTED``), the others are sent again (see ``recover``)."""
    pending: list[Run] = []
    interrupted = 0
    for run in runs:
        if run.status is RunStatus.RUNNING:
            if store.end_run(run, RunStatus.FAILED, now, INTERRUPTED, [RunStatus.RUNNING]):
                interrupted += 1
            store.release_run(run.job_id, run.id)
        else:
            pending.append(run)
    queues.send(
        (
            (
                run.priority,
                RunMessage.of(run, now),
            )
            for run in pending
        ),
        now,
    )
    return {"resent": len(pending), "interrupted": interrupted}


def _unfinished_runs(client: Any, runs_table: str) -> Iterator[Run]:
    pages = client.get_paginator("scan").paginate(
        TableName=runs_table,
        FilterExpression="#s IN (:s, :q, :r)",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={
            ":s": {"S": RunStatus.SCHEDULED.value},
            ":q": {"S": RunStatus.QUEUED.value},
            ":r": {"S": RunStatus.RUNNING.value},
        },
    )
    for page in pages:
        for item in page["Items"]:
            yield codecs.run_from_item(item)
