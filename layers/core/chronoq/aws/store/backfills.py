"""The BackfillStore port on DynamoDB: backfills, items of their job's partition of the runs
table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain import keys
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Page, Position


class DynamoBackfills(Tables):
    """Backfills, in their job's partition of the runs table."""

    def put_backfill(self, backfill: Backfill) -> None:
        self._db.put_item(
            TableName=self._runs,
            Item=_dump(codecs.backfill_item(backfill)),
            ConditionExpression="attribute_not_exists(run_id)",
        )

    def get_backfill(self, job_id: str, backfill_id: str) -> Backfill | None:
        item = self._db.get_item(
            TableName=self._runs,
            Key=codecs.backfill_key(job_id, backfill_id),
            ConsistentRead=True,
        ).get("Item")
        return codecs.backfill_from_item(item) if item else None

    def page_backfills(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[Backfill]:
        """Newest first: the items of the job's partition whose sort key begins with
        ``backfill#`` (backfill ids sort by creation). A position is (backfill id,)."""
        query: dict[str, Any] = {
            "TableName": self._runs,
            "KeyConditionExpression": "job_id = :j AND begins_with(run_id, :p)",
            "ExpressionAttributeValues": _dump({":j": job_id, ":p": keys.BACKFILL}),
            "ScanIndexForward": False,
            "Limit": limit + 1,
        }
        if after:
            query["ExclusiveStartKey"] = codecs.backfill_key(job_id, after[0])
        items = self._db.query(**query)["Items"]
        found = [codecs.backfill_from_item(i) for i in items]
        mine = [b for b in found if b.owner == owner]
        if len(found) > limit:
            return Page(mine[:limit], (found[limit - 1].id,))
        return Page(mine, None)

    def end_backfill(
        self, job_id: str, backfill_id: str, state: BackfillState, now: datetime
    ) -> bool:
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.backfill_key(job_id, backfill_id),
                UpdateExpression="SET #state = :state, finished_at = :now",
                ConditionExpression="#state = :running",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=_dump(
                    {
                        ":state": state.value,
                        ":now": format_instant(now),
                        ":running": BackfillState.RUNNING.value,
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True
