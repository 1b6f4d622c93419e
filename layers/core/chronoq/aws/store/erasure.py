"""The ErasureStore port on DynamoDB: an owner's data taken out of the tables (see
chronoq.usecases.erasure): a job's partition of the runs table, and the owner's own items of
the jobs table."""

from __future__ import annotations

from typing import Any

from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain import flow, inflight, keys


class DynamoErasure(Tables):
    def erase_job_partition(self, job_id: str) -> int:
        """Every item of the job's partition of the runs table (its runs and backfills),
        deleted: pages of keys (a query reading keys only), 25 deletes a request."""
        erased = 0
        start: dict[str, Any] | None = None
        while True:
            request: dict[str, Any] = {
                "TableName": self._runs,
                "KeyConditionExpression": "job_id = :j",
                "ExpressionAttributeValues": _dump({":j": job_id}),
                "ProjectionExpression": "job_id, run_id",
            }
            if start:
                request["ExclusiveStartKey"] = start
            page = self._db.query(**request)
            keys_ = [{"job_id": i["job_id"], "run_id": i["run_id"]} for i in page["Items"]]
            self._write_batches(self._runs, [{"DeleteRequest": {"Key": k}} for k in keys_])
            erased += len(keys_)
            start = page.get("LastEvaluatedKey")
            if not start:
                return erased

    def erase_owner_items(self, owner: str) -> int:
        """The owner's own items of the jobs table: its job count, its backfills' and
        re-runs' usage, its secrets' names, its runs in flight, its runs asked for under way
        (how many there were)."""
        erased = 0
        for key in owner_item_keys(owner):
            gone = self._db.delete_item(
                TableName=self._jobs, Key=_dump({"job_id": key}), ReturnValues="ALL_OLD"
            )
            erased += 1 if gone.get("Attributes") else 0
        return erased


def owner_item_keys(owner: str) -> tuple[str, ...]:
    """The keys of the jobs table's items that belong to an owner rather than to a job."""
    return (
        keys.count_key(owner),
        keys.usage_key(owner),
        keys.secrets_key(owner),
        keys.calendars_key(owner),
        inflight.item_key(owner),
        flow.owner_item_key(owner),
        keys.graph_key(owner),  # (completion triggers: its pipeline graph)
    )
