"""The AfterStore port on DynamoDB (see chronoq.domain.after): an owner's pipeline graph
(``graph#<owner>``), the followers on an upstream job's item (``followed_by``, a string set
beside its spec: save_job never writes it), and the fan-in items (``fanin#<job id>#<instant>``)
of the jobs table, which expire (``expires_at``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables
from chronoq.domain import keys
from chronoq.domain import limits as lim
from chronoq.domain.after import FanIn, Graph, fanin_key
from chronoq.domain.time import format_instant


class DynamoAfter(Tables):
    def get_graph(self, owner: str) -> Graph:
        item = self._db.get_item(
            TableName=self._jobs, Key=_dump({"job_id": keys.graph_key(owner)}), ConsistentRead=True
        ).get("Item")
        if not item:
            return Graph(owner=owner)
        data = _load(item)
        edges = {k: frozenset(v) for k, v in json.loads(str(data["edges"])).items()}
        return Graph(owner=owner, edges=edges, version=int(data["version"]))

    def save_graph(self, graph: Graph) -> bool:
        """One conditional put (the edges as JSON text: one attribute, any job ids). A stored
        graph's version is at least 1: expecting 0 is expecting none."""
        edges = json.dumps({k: sorted(v) for k, v in sorted(graph.edges.items())})
        try:
            self._db.put_item(
                TableName=self._jobs,
                Item=_dump(
                    {
                        "job_id": keys.graph_key(graph.owner),
                        "edges": edges,
                        "version": graph.version + 1,
                    }
                ),
                ConditionExpression="attribute_not_exists(job_id) OR version = :expected",
                ExpressionAttributeValues=_dump({":expected": graph.version}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def follow(self, job_id: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """One update per direction (DynamoDB takes no ADD and DELETE of one attribute in one
        expression), on condition that the job is there."""
        for verb, ids_ in (("ADD", set(add)), ("DELETE", set(remove))):
            if not ids_:
                continue
            try:
                self._db.update_item(
                    TableName=self._jobs,
                    Key=_dump({"job_id": job_id}),
                    UpdateExpression=f"{verb} followed_by :f",
                    ConditionExpression="attribute_exists(spec)",
                    ExpressionAttributeValues={":f": {"SS": sorted(ids_)}},
                )
            except self._db.exceptions.ConditionalCheckFailedException:
                return  # (the job is gone)

    def arrive(
        self, job_id: str, instant: datetime, upstream_id: str, run_id: str, now: datetime
    ) -> FanIn:
        """One update, answered with the item as it is then."""
        answer = self._db.update_item(
            TableName=self._jobs,
            Key=_dump({"job_id": fanin_key(job_id, instant)}),
            UpdateExpression=(
                "ADD arrived :u, upstream_runs :r "
                "SET first_at = if_not_exists(first_at, :now), "
                "expires_at = if_not_exists(expires_at, :expires)"
            ),
            ExpressionAttributeValues={
                ":u": {"SS": [upstream_id]},
                ":r": {"SS": [run_id]},
                ":now": {"S": format_instant(now)},
                ":expires": {"N": str(int(now.timestamp()) + _keep_seconds())},
            },
            ReturnValues="ALL_NEW",
        )
        return _fanin(job_id, instant, answer["Attributes"])

    def get_fanin(self, job_id: str, instant: datetime) -> FanIn | None:
        item = self._db.get_item(
            TableName=self._jobs,
            Key=_dump({"job_id": fanin_key(job_id, instant)}),
            ConsistentRead=True,
        ).get("Item")
        return _fanin(job_id, instant, item) if item else None

    def job_named(self, owner: str, name: str) -> str | None:
        item = self._db.get_item(
            TableName=self._jobs,
            Key=_dump({"job_id": keys.name_key(owner, name)}),
            ConsistentRead=True,
        ).get("Item")
        return str(_load(item).get("job", "")) or None if item else None


def _keep_seconds() -> int:
    return lim.MAX_AFTER_WITHIN_SECONDS + r.FANIN_RETENTION_SECONDS


def _fanin(job_id: str, instant: datetime, item: dict[str, Any]) -> FanIn:
    data = _load(item)
    return FanIn(
        job_id=job_id,
        instant=instant,
        arrived=frozenset(data.get("arrived", ())),
        runs=frozenset(data.get("upstream_runs", ())),
        first_at=data.get("first_at"),
    )
