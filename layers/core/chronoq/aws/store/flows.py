"""The FlowStore port on DynamoDB: flows' items, in the jobs table."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain.flow import FlowState


class DynamoFlows(Tables):
    """Flows' items of the jobs table."""

    def get_flow(self, key: str) -> FlowState:
        item = self._db.get_item(
            TableName=self._jobs, Key=_dump({"job_id": key}), ConsistentRead=True
        ).get("Item")
        return codecs.flow_from_item(item)

    def save_flow(self, key: str, before: FlowState, after: FlowState, now: datetime) -> bool:
        """One conditional write of the flow's item: a new item, or only the holders added
        and removed, the frontier and the version, if it is still at ``before``'s version
        (a run's end takes its holder out without changing the version: never in the way)."""
        expires = int(now.timestamp()) + r.FLOW_RETENTION_SECONDS
        try:
            if before.version == 0:
                self._db.update_item(
                    TableName=self._jobs,
                    Key=_dump({"job_id": key}),
                    UpdateExpression=(
                        "SET holders = :h, frontier = :f, starts = :s, version = :v, "
                        "expires_at = :e"
                        + (", max_running = :m" if after.max_running is not None else "")
                    ),
                    ConditionExpression="attribute_not_exists(job_id)",
                    ExpressionAttributeValues=_dump(
                        {
                            ":h": dict(after.holders),
                            ":f": after.frontier,
                            ":s": after.starts,
                            ":v": 1,
                            ":e": expires,
                            ":m": after.max_running,
                        }
                    ),
                )
                return True
            added = {k: v for k, v in after.holders.items() if before.holders.get(k) != v}
            removed = sorted(set(before.holders) - set(after.holders))
            names: dict[str, str] = {}
            values: dict[str, Any] = {
                ":f": after.frontier,
                ":s": after.starts,
                ":v": before.version,
                ":next": before.version + 1,
                ":e": expires,
                ":m": after.max_running,
            }
            sets = ["frontier = :f", "starts = :s", "version = :next", "expires_at = :e"]
            removes = []
            if after.max_running is not None:
                sets.append("max_running = :m")
            elif before.max_running is not None:
                removes.append("max_running")
            for i, (run_id, second) in enumerate(sorted(added.items())):
                names[f"#a{i}"] = run_id
                values[f":a{i}"] = second
                sets.append(f"holders.#a{i} = :a{i}")
            update = "SET " + ", ".join(sets)
            names.update({f"#r{i}": run_id for i, run_id in enumerate(removed)})
            removes += [f"holders.#r{i}" for i in range(len(removed))]
            if removes:
                update += " REMOVE " + ", ".join(removes)
            request: dict[str, Any] = {
                "TableName": self._jobs,
                "Key": _dump({"job_id": key}),
                "UpdateExpression": update,
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": _dump(values),
            }
            if names:
                request["ExpressionAttributeNames"] = names
            self._db.update_item(**request)
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release_flow(self, key: str, run_id: str) -> None:
        """As the state machine's ReleaseFlow state: the run's holder taken out."""
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression="REMOVE holders.#run",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeNames={"#run": run_id},
            )
