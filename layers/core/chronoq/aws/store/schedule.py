"""The ScheduleStore port on DynamoDB: the time index of occurrences and each shard's dispatch
checkpoint, in the schedule table."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables, chunks
from chronoq.domain import ids, keys
from chronoq.domain.runs import Occurrence
from chronoq.usecases.ports import SchedulePage


def _packs(
    occurrences: Iterable[Occurrence], shards: int, pack: str
) -> Iterator[tuple[str, list[Occurrence]]]:
    """Occurrences grouped by bucket, ``PACK_SIZE`` at most per group, each group named by
    ``pack`` and its place: the same occurrences packed again get the same names."""
    buckets: dict[str, list[Occurrence]] = defaultdict(list)
    for o in sorted(occurrences, key=lambda o: (o.starts_at, o.run_id)):
        buckets[ids.bucket(o.starts_at, ids.shard_of(o.job_id, shards))].append(o)
    for group in buckets.values():
        for n, chunk in enumerate(chunks(group, codecs.PACK_SIZE)):
            yield f"{pack}#{n}", chunk


class DynamoSchedule(Tables):
    """The schedule table: occurrences by minute and shard, and the checkpoints."""

    def put_occurrences(
        self,
        occurrences: Iterable[Occurrence],
        shards: int,
        now: datetime,
        pack: str | None = None,
    ) -> None:
        # One batch may not name the same key twice: each occurrence once.
        unique = {(o.run_id, o.scheduled_at): o for o in occurrences}
        if pack is None:
            items = [
                {"PutRequest": {"Item": _dump(codecs.occurrence_item(o, shards, now))}}
                for o in unique.values()
            ]
        else:
            items = [
                {"PutRequest": {"Item": _dump(codecs.pack_item(group, shards, now, key))}}
                for key, group in _packs(unique.values(), shards, pack)
            ]
        self._write_batches(self._schedule, items)

    def occurrence_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> tuple[list[Occurrence], str | None]:
        """At most ``limit`` items of the bucket after key ``after``: one query."""
        page = self.schedule_page(minute, shard, after, limit)
        return page.occurrences, page.after

    def schedule_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> SchedulePage:
        """At most ``limit`` items of the bucket after key ``after`` (occurrences, packs of
        them, deadlines): one query."""
        bucket = ids.bucket(minute, shard)
        query: dict[str, Any] = {
            "TableName": self._schedule,
            "KeyConditionExpression": "#b = :b",
            "ExpressionAttributeNames": {"#b": "bucket"},
            "ExpressionAttributeValues": _dump({":b": bucket}),
            "Limit": limit,
        }
        if after is not None:
            query["ExclusiveStartKey"] = _dump({"bucket": bucket, "due": after})
        answer = self._db.query(**query)
        items = answer["Items"]
        found = [
            o
            for i in items
            if not codecs.is_deadline_item(i)
            for o in codecs.occurrences_from_item(i)
        ]
        deadlines = [codecs.deadline_from_item(i) for i in items if codecs.is_deadline_item(i)]
        last = answer.get("LastEvaluatedKey")
        return SchedulePage(
            sorted(found, key=lambda o: (o.starts_at, o.run_id)),
            deadlines,
            str(_load(last)["due"]) if last else None,
        )

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        """Every occurrence due in ``minute`` on ``shard``, by due time (page after page)."""
        found: list[Occurrence] = []
        after: str | None = None
        while True:
            page, after = self.occurrence_page(minute, shard, after, r.DISPATCH_PAGE_ITEMS)
            found += page
            if after is None:
                return sorted(found, key=lambda o: (o.starts_at, o.run_id))

    def dispatch_marks(
        self, shards: int
    ) -> tuple[dict[int, datetime | None], dict[int, tuple[datetime, str]]]:
        """Each shard's last minute dispatched completely, and how far into the next one it
        got (see advance_within): one batch read of the checkpoint items."""
        done: dict[int, datetime | None] = dict.fromkeys(range(shards))
        within: dict[int, tuple[datetime, str]] = {}
        for shard, data in self._checkpoint_items(shards).items():
            if "minute" in data:
                done[shard] = ids.minute_of_bucket(data["minute"])
            if "within" in data and "after" in data:
                within[shard] = (ids.minute_of_bucket(data["within"]), data["after"])
        return done, within

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        """The last minute dispatched completely on each shard (None: never dispatched)."""
        return self.dispatch_marks(shards)[0]

    def progress(self, shards: int) -> dict[int, tuple[datetime, str]]:
        """How far into a minute each shard got (see advance_within)."""
        return self.dispatch_marks(shards)[1]

    def advance_within(self, shard: int, minute: datetime, after: str) -> None:
        """Record the items of ``minute`` up to key ``after`` as dispatched on ``shard``."""
        self._db.update_item(
            TableName=self._schedule,
            Key=self._checkpoint_key(shard),
            UpdateExpression="SET #w = :w, #a = :a",
            ExpressionAttributeNames={"#w": "within", "#a": "after"},
            ExpressionAttributeValues=_dump(
                {":w": ids.bucket(minute, shard).partition("#")[0], ":a": after}
            ),
        )

    def _checkpoint_items(self, shards: int) -> dict[int, dict[str, Any]]:
        keys = [self._checkpoint_key(s) for s in range(shards)]
        found: dict[int, dict[str, Any]] = {}
        for chunk in chunks(keys, 100):
            request: dict[str, Any] = {self._schedule: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._schedule, []):
                    data = _load(item)
                    found[int(data["due"])] = data
                request = dict(answer.get("UnprocessedKeys") or {})
        return found

    def opened_through(self, shard: int) -> datetime | None:
        """The last minute whose dispatch has begun on ``shard``."""
        item = self._db.get_item(
            TableName=self._schedule, Key=self._checkpoint_key(shard), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        data = _load(item)
        return ids.minute_of_bucket(max(data.get("opened", ""), data.get("minute", "")))

    def open_minute(self, shard: int, minute: datetime) -> None:
        """Mark ``minute`` as being dispatched on ``shard`` (before querying it)."""
        self._advance_checkpoint(shard, "opened", minute)

    def close_minute(self, shard: int, minute: datetime) -> None:
        """Record ``minute`` as dispatched completely on ``shard``."""
        self._advance_checkpoint(shard, "minute", minute)

    def reopen_minute(self, shard: int, minute: datetime) -> None:
        """Move the shard's last dispatched minute back before ``minute`` (only ever back),
        and forget how far into that minute or a later one the dispatcher got."""
        earlier = ids.bucket(minute - timedelta(minutes=1), shard).partition("#")[0]
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="SET #m = :m",
                ConditionExpression="#m > :m",
                ExpressionAttributeNames={"#m": "minute"},
                ExpressionAttributeValues=_dump({":m": earlier}),
            )
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="REMOVE #w, #a",
                ConditionExpression="#w > :m",
                ExpressionAttributeNames={"#w": "within", "#a": "after"},
                ExpressionAttributeValues=_dump({":m": earlier}),
            )

    @staticmethod
    def _checkpoint_key(shard: int) -> dict[str, Any]:
        return _dump({"bucket": keys.CHECKPOINT_BUCKET, "due": f"{shard:04d}"})

    def _advance_checkpoint(self, shard: int, attribute: str, minute: datetime) -> None:
        """Set one of the shard's checkpoint minutes; they never move back."""
        key = ids.bucket(minute, shard).partition("#")[0]
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="SET #m = :m",
                ConditionExpression="attribute_not_exists(#m) OR #m < :m",
                ExpressionAttributeNames={"#m": attribute},
                ExpressionAttributeValues=_dump({":m": key}),
            )
