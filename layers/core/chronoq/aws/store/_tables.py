"""What every part of the DynamoDB adapter shares: the client, the tables' names, how batch
requests are cut, transactions, and the "uses" items (the set of the jobs using a named
thing of an owner: a secret, a calendar)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from chronoq.aws.codecs import load

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")
#: Items BatchWriteItem takes at a time.
BATCH_WRITE = 25
#: A uses item's set of job ids.
USERS = "jobs"


def jobs_table_key(value: str) -> dict[str, Any]:
    """The key of the jobs table's item ``value``."""
    return {"job_id": {"S": value}}


class Tables:
    """A part of the adapter over the tables it uses (a function may leave unnamed those it
    does not use)."""

    def _write_batches(self, table: str, requests: list[dict[str, Any]]) -> None:
        """``requests`` (PutRequest or DeleteRequest entries) in BatchWriteItem calls of 25,
        what DynamoDB leaves unprocessed sent again after a short pause."""
        for chunk in chunks(requests, BATCH_WRITE):
            pending: dict[str, Any] = {table: chunk}
            while pending:
                answer = self._db.batch_write_item(RequestItems=pending)
                pending = dict(answer.get("UnprocessedItems") or {})
                if pending:
                    time.sleep(0.05)

    def _transact(self, items: list[dict[str, Any]]) -> set[int] | None:
        """Write ``items`` in one transaction: None when written; else the indexes of the
        items whose condition failed. Any other reason (a conflict with another
        transaction, throttling) is raised: the caller's caller tries again."""
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except self._db.exceptions.TransactionCanceledException as error:
            reasons = error.response.get("CancellationReasons") or []
            failed = {
                i for i, why in enumerate(reasons) if why.get("Code") == "ConditionalCheckFailed"
            }
            others = [
                why.get("Code")
                for why in reasons
                if why.get("Code") not in ("None", "ConditionalCheckFailed", None)
            ]
            if others or not failed:
                raise
            return failed
        return None

    def _use(self, uses_key: str, job_id: str) -> dict[str, Any]:
        """The transaction item adding ``job_id`` to the uses item ``uses_key``."""
        return {
            "Update": {
                "TableName": self._jobs,
                "Key": jobs_table_key(uses_key),
                "UpdateExpression": "ADD #j :job",
                "ExpressionAttributeNames": {"#j": USERS},
                "ExpressionAttributeValues": {":job": {"SS": [job_id]}},
            }
        }

    def _unused(self, uses_key: str) -> dict[str, Any]:
        """The transaction item holding that no job uses what ``uses_key`` counts the uses of."""
        return {
            "ConditionCheck": {
                "TableName": self._jobs,
                "Key": jobs_table_key(uses_key),
                "ConditionExpression": "attribute_not_exists(#j)",
                "ExpressionAttributeNames": {"#j": USERS},
            }
        }

    def _unuse(self, uses_key: str, job_id: str) -> None:
        """``job_id`` taken out of the uses item ``uses_key`` (no read)."""
        self._db.update_item(
            TableName=self._jobs,
            Key=jobs_table_key(uses_key),
            UpdateExpression="DELETE #j :job",
            ExpressionAttributeNames={"#j": USERS},
            ExpressionAttributeValues={":job": {"SS": [job_id]}},
        )

    def _users(self, uses_key: str) -> list[str]:
        """The ids of the jobs in the uses item ``uses_key`` (a strongly consistent read)."""
        item = self._db.get_item(
            TableName=self._jobs, Key=jobs_table_key(uses_key), ConsistentRead=True
        ).get("Item")
        return sorted(load(item).get(USERS, set())) if item else []

    def __init__(
        self,
        client: DynamoDBClient,
        jobs_table: str = "",
        runs_table: str = "",
        schedule_table: str = "",
    ) -> None:
        self._db = client
        self._jobs = jobs_table
        self._runs = runs_table
        self._schedule = schedule_table


def remove(attributes: list[str]) -> str:
    """An update expression's REMOVE clause (empty when nothing is removed)."""
    return f" REMOVE {', '.join(attributes)}" if attributes else ""


def chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
