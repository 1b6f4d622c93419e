"""What every part of the DynamoDB adapter shares: the client, the tables' names, and how
batch requests are cut."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")
#: Items BatchWriteItem takes at a time.
BATCH_WRITE = 25


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
