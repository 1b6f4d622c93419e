"""The FlowStore port on DynamoDB: flows' items and owners' counts of runs in flight, in
the jobs table."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain import inflight
from chronoq.domain.flow import FlowState
from chronoq.domain.inflight import InFlight


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

    # --- runs in flight (see chronoq.domain.inflight) -----------------------------------------

    def get_in_flight(self, key: str) -> InFlight:
        item = self._db.get_item(
            TableName=self._jobs, Key=_dump({"job_id": key}), ConsistentRead=True
        ).get("Item")
        return codecs.in_flight_from_item(item)

    def take_in_flight(
        self, key: str, buckets: Mapping[str, int], limit: int, now: datetime
    ) -> InFlight | None:
        """One conditional write: the total and each bucket raised, if the total stays
        within ``limit``; the item kept (TTL) until its latest bucket has expired."""
        wanted = sum(buckets.values())
        latest = max((inflight.bucket_end(b) for b in buckets), default=int(now.timestamp()))
        names = {f"#b{i}": name for i, name in enumerate(sorted(buckets))}
        values: dict[str, Any] = {f":b{i}": buckets[name] for i, name in enumerate(sorted(buckets))}
        values |= {
            ":n": wanted,
            ":room": limit - wanted,
            ":e": latest + inflight.BUCKET_GRACE_SECONDS + r.FLOW_RETENTION_SECONDS,
        }
        adds = ", ".join(["#t :n", *(f"{n} {n.replace('#', ':')}" for n in names)])
        try:
            item = self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression=f"ADD {adds} SET expires_at = :e",
                ConditionExpression="attribute_not_exists(#t) OR #t <= :room",
                ExpressionAttributeNames={"#t": "total", **names},
                ExpressionAttributeValues=_dump(values),
                ReturnValues="ALL_NEW",
            ).get("Attributes")
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        return codecs.in_flight_from_item(item)

    def give_in_flight(self, key: str, buckets: Mapping[str, int]) -> InFlight:
        """One write: the total and each bucket lowered (no item: nothing written)."""
        names = {f"#b{i}": name for i, name in enumerate(sorted(buckets))}
        values: dict[str, Any] = {
            f":b{i}": -buckets[name] for i, name in enumerate(sorted(buckets))
        }
        values[":n"] = -sum(buckets.values())
        adds = ", ".join(["#t :n", *(f"{n} {n.replace('#', ':')}" for n in names)])
        try:
            item = self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression=f"ADD {adds}",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeNames={"#t": "total", **names},
                ExpressionAttributeValues=_dump(values),
                ReturnValues="ALL_NEW",
            ).get("Attributes")
        except self._db.exceptions.ConditionalCheckFailedException:
            return InFlight()
        return codecs.in_flight_from_item(item)

    def heal_in_flight(self, key: str, expired: Mapping[str, int]) -> None:
        """One conditional write: the expired buckets removed and their counts taken out of
        the total, if each still holds what was read."""
        if not expired:
            return
        names = {f"#b{i}": name for i, name in enumerate(sorted(expired))}
        values: dict[str, Any] = {f":b{i}": expired[name] for i, name in enumerate(sorted(expired))}
        values[":n"] = -sum(expired.values())
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression=f"ADD #t :n REMOVE {', '.join(names)}",
                ConditionExpression=" AND ".join(f"{n} = {n.replace('#', ':')}" for n in names),
                ExpressionAttributeNames={"#t": "total", **names},
                ExpressionAttributeValues=_dump(values),
            )

    def mark_in_flight_parked(self, key: str, now: datetime) -> None:
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression="SET parked_at = :now",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeValues=_dump({":now": int(now.timestamp())}),
            )

    def clear_in_flight_parked(self, key: str, parked_at: int) -> None:
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": key}),
                UpdateExpression="REMOVE parked_at",
                ConditionExpression="parked_at = :read",
                ExpressionAttributeValues=_dump({":read": parked_at}),
            )
