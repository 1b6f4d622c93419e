"""The UsageStore port on DynamoDB: what each owner's backfills and re-runs hold, one item of
the jobs table per owner (``usage#<owner>``, see domain.limits)."""

from __future__ import annotations

from typing import Any

from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain.limits import Usage


class DynamoUsage(Tables):
    def get_usage(self, owner: str) -> Usage:
        item = self._db.get_item(
            TableName=self._jobs, Key=codecs.usage_key(owner), ConsistentRead=True
        ).get("Item")
        return codecs.usage_from_item(item)

    def reserve_reruns(self, owner: str, runs: int, usage: Usage) -> bool:
        """One conditional update: re-runs added, the version moved on, at the version read."""
        request: dict[str, Any] = {
            "TableName": self._jobs,
            "Key": codecs.usage_key(owner),
            "UpdateExpression": "ADD #r :runs, #v :one",
            "ExpressionAttributeNames": {"#r": codecs.RERUNS, "#v": codecs.VERSION},
        }
        values: dict[str, Any] = {":runs": runs, ":one": 1}
        if usage.version:
            request["ConditionExpression"] = "#v = :v"
            values[":v"] = usage.version
        else:
            request["ConditionExpression"] = "attribute_not_exists(#v)"
        try:
            self._db.update_item(**request, ExpressionAttributeValues=_dump(values))
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release_reruns(self, owner: str, runs: int) -> None:
        self._db.update_item(
            TableName=self._jobs,
            Key=codecs.usage_key(owner),
            UpdateExpression="ADD #r :runs",
            ExpressionAttributeNames={"#r": codecs.RERUNS},
            ExpressionAttributeValues=_dump({":runs": -runs}),
        )

    def release_backfill(self, owner: str, job_id: str, backfill_id: str) -> None:
        self._db.update_item(
            TableName=self._jobs,
            Key=codecs.usage_key(owner),
            UpdateExpression="DELETE #run :id",
            ExpressionAttributeNames={"#run": codecs.RUNNING + job_id},
            ExpressionAttributeValues=_dump({":id": {backfill_id}}),
        )
