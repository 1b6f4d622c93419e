"""The ExpectStore port on DynamoDB: jobs' expectations of success (``expect#<job id>`` items of
the jobs table), their deadlines (entries of the schedule table) and their silences' records
(the runs table). See chronoq.domain.silence.

An expectation's instants are kept as fixed-width text (codecs.fixed_instant), so that the
conditions compare them in time order, and ``silent_since`` sorts the silent index."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import fixed_instant
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables, chunks
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent
from chronoq.usecases.ports import Page, Position

#: What an expectation's silence is kept as (the silent index's keys).
_SILENT = ("silent_since", "silent_owner")


class DynamoExpect(Tables):
    def start_expectation(self, job_id: str, within: int, since: datetime) -> Expectation:
        """One update (made if missing), its silence's attributes removed; answered with the
        item as it is then."""
        answer = self._db.update_item(
            TableName=self._jobs,
            Key=codecs.expectation_key(job_id),
            UpdateExpression="SET #w = :w, #s = :s REMOVE silent_since, silent_owner",
            ExpressionAttributeNames={"#w": "within", "#s": "since"},
            ExpressionAttributeValues=_dump({":w": within, ":s": fixed_instant(since)}),
            ReturnValues="ALL_NEW",
        )
        return codecs.expectation_from_item(answer["Attributes"])

    def change_expectation(self, job_id: str, within: int) -> Expectation | None:
        try:
            answer = self._db.update_item(
                TableName=self._jobs,
                Key=codecs.expectation_key(job_id),
                UpdateExpression="SET #w = :w",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeNames={"#w": "within"},
                ExpressionAttributeValues=_dump({":w": within}),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        return codecs.expectation_from_item(answer["Attributes"])

    def pause_expectation(self, job_id: str, at: datetime) -> Expectation | None:
        try:
            answer = self._db.update_item(
                TableName=self._jobs,
                Key=codecs.expectation_key(job_id),
                UpdateExpression="SET #s = :s REMOVE silent_since, silent_owner",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeNames={"#s": "since"},
                ExpressionAttributeValues=_dump({":s": fixed_instant(at)}),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        return codecs.expectation_from_item(answer["Attributes"])

    def end_expectation(self, job_id: str) -> None:
        self._db.delete_item(TableName=self._jobs, Key=codecs.expectation_key(job_id))

    def get_expectation(self, job_id: str) -> Expectation | None:
        item = self._db.get_item(
            TableName=self._jobs, Key=codecs.expectation_key(job_id), ConsistentRead=True
        ).get("Item")
        return codecs.expectation_from_item(item) if item else None

    def get_expectations(self, job_ids: Iterable[str]) -> dict[str, Expectation]:
        """Batch reads (eventually consistent), 100 at a time."""
        found: dict[str, Expectation] = {}
        for chunk in chunks(sorted(set(job_ids)), 100):
            request: dict[str, Any] = {
                self._jobs: {"Keys": [codecs.expectation_key(j) for j in chunk]}
            }
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._jobs, []):
                    expectation = codecs.expectation_from_item(item)
                    found[expectation.job_id] = expectation
                request = dict(answer.get("UnprocessedKeys") or {})
                if request:
                    time.sleep(0.05)
        return found

    def record_success(self, job_id: str, at: datetime) -> Expectation | None:
        """One conditional update, answered with the item as it is then."""
        try:
            answer = self._db.update_item(
                TableName=self._jobs,
                Key=codecs.expectation_key(job_id),
                UpdateExpression="SET #s = :t, last_success_at = :t",
                ConditionExpression=(
                    "attribute_exists(job_id) AND attribute_not_exists(silent_since) AND #s < :t"
                ),
                ExpressionAttributeNames={"#s": "since"},
                ExpressionAttributeValues=_dump({":t": fixed_instant(at)}),
                ReturnValues="ALL_NEW",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        return codecs.expectation_from_item(answer["Attributes"])

    def mark_silent(self, expectation: Expectation, event: SilenceEvent) -> bool:
        """A transaction of two: the expectation's update, the SILENT record's put."""
        marked = {
            "TableName": self._jobs,
            "Key": codecs.expectation_key(expectation.job_id),
            "UpdateExpression": "SET silent_since = :ss, silent_owner = :o",
            "ConditionExpression": "#s = :s AND #w = :w AND attribute_not_exists(silent_since)",
            "ExpressionAttributeNames": {"#s": "since", "#w": "within"},
            "ExpressionAttributeValues": _dump(
                {
                    ":ss": fixed_instant(event.silent_since),
                    ":o": event.owner,
                    ":s": fixed_instant(expectation.since),
                    ":w": expectation.within,
                }
            ),
        }
        return self._written([{"Update": marked}, {"Put": self._event(event)}])

    def end_silence(self, expectation: Expectation, event: SilenceEvent) -> bool:
        """A transaction of two: the expectation's update, the RECOVERED record's put."""
        assert event.recovered_at is not None
        assert expectation.silent_since is not None
        moved = {
            "TableName": self._jobs,
            "Key": codecs.expectation_key(expectation.job_id),
            "UpdateExpression": "SET #s = :t, last_success_at = :t REMOVE " + ", ".join(_SILENT),
            "ConditionExpression": "#s = :s AND silent_since = :ss",
            "ExpressionAttributeNames": {"#s": "since"},
            "ExpressionAttributeValues": _dump(
                {
                    ":t": fixed_instant(event.recovered_at),
                    ":s": fixed_instant(expectation.since),
                    ":ss": fixed_instant(expectation.silent_since),
                }
            ),
        }
        return self._written([{"Update": moved}, {"Put": self._event(event)}])

    def _event(self, event: SilenceEvent) -> dict[str, Any]:
        return {
            "TableName": self._runs,
            "Item": _dump(
                codecs.silence_event_item(event, event.recovered_at or event.silent_since)
            ),
            "ConditionExpression": "attribute_not_exists(run_id)",
        }

    def _written(self, items: list[dict[str, Any]]) -> bool:
        """Write ``items`` in one transaction: False when a condition refused it. Any other
        reason (a conflict with another transaction, throttling) is raised: the caller's
        caller tries again."""
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except self._db.exceptions.TransactionCanceledException as error:
            reasons = error.response.get("CancellationReasons") or []
            codes = {why.get("Code") for why in reasons} - {"None", None}
            if codes != {"ConditionalCheckFailed"}:
                raise
            return False
        return True

    def silent_jobs(
        self, owner: str, limit: int, after: Position | None = None
    ) -> Page[Expectation]:
        """One query of the silent index (one key more than ``limit``, to know whether a
        page follows). A position is (``silent_since``, item key)."""
        query: dict[str, Any] = {
            "TableName": self._jobs,
            "IndexName": r.JOBS_SILENT_INDEX,
            "KeyConditionExpression": "silent_owner = :o",
            "ExpressionAttributeValues": _dump({":o": owner}),
            "Limit": limit + 1,
        }
        if after:
            query["ExclusiveStartKey"] = _dump(
                {"silent_owner": owner, "silent_since": after[0], "job_id": after[1]}
            )
        items = self._db.query(**query)["Items"]
        found = [codecs.expectation_from_item(i) for i in items[:limit]]
        if len(items) <= limit:
            return Page(found, None)
        last = _load(items[limit - 1])
        return Page(found, (str(last["silent_since"]), str(last["job_id"])))

    def put_deadlines(self, deadlines: Iterable[Deadline], shards: int, now: datetime) -> None:
        """Batch writes, 25 at a time."""
        unique = {(d.job_id, d.at, d.instant): d for d in deadlines}  # (instant: an after wait)
        items = [
            {"PutRequest": {"Item": _dump(codecs.deadline_item(d, shards, now))}}
            for d in unique.values()
        ]
        self._write_batches(self._schedule, items)

    def get_silence(self, job_id: str, key: str) -> SilenceEvent | None:
        item = self._db.get_item(
            TableName=self._runs, Key=codecs.run_key(job_id, key), ConsistentRead=True
        ).get("Item")
        return codecs.silence_event_from_item(item) if item else None
