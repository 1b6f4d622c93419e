"""The BackfillStore port on DynamoDB: backfills, items of their job's partition of the runs
table; their owner's usage item (jobs table) changed with them, in one transaction, where a
backfill begins or ends."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables, chunks
from chronoq.domain import keys
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.limits import Usage
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Page, Position, Tally, TallyRefused


class DynamoBackfills(Tables):
    """Backfills, in their job's partition of the runs table."""

    def put_backfill(self, backfill: Backfill) -> None:
        """Keep a backfill as it is, outside its owner's usage (``start_backfill`` enters it)."""
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

    def end_backfill(self, backfill: Backfill, state: BackfillState, now: datetime) -> bool:
        """One conditional update (a backfill whose ends are not counted, which never was in
        its owner's usage); else a transaction of two: the backfill's, and its owner's usage
        (its id taken out)."""
        update = self._ended(backfill.job_id, backfill.id, state, now)
        if not backfill.counted:
            try:
                self._db.update_item(TableName=self._runs, **update)
            except self._db.exceptions.ConditionalCheckFailedException:
                return False
            return True
        items = [
            {"Update": {"TableName": self._runs, **update}},
            {"Update": self._usage_change(backfill.owner, release=backfill)},
        ]
        return self._transact(items) is None

    def start_backfill(self, backfill: Backfill, usage: Usage) -> bool:
        """A transaction of two writes: the backfill's item, and its owner's usage item (its
        id added to the job's running backfills, the version moved on) at the version read."""
        entered = self._usage_change(backfill.owner, enter=backfill, version=usage.version)
        items = [
            {
                "Put": {
                    "TableName": self._runs,
                    "Item": _dump(codecs.backfill_item(backfill)),
                    "ConditionExpression": "attribute_not_exists(run_id)",
                }
            },
            {"Update": entered},
        ]
        return self._transact(items) is None

    def get_backfills(self, keys: Iterable[tuple[str, str]]) -> list[Backfill]:
        """Consistent batch reads, 100 at a time."""
        found: list[Backfill] = []
        for chunk in chunks(sorted(set(keys)), 100):
            request: dict[str, Any] = {
                self._runs: {
                    "Keys": [codecs.backfill_key(job, backfill) for job, backfill in chunk],
                    "ConsistentRead": True,
                }
            }
            pause = 0.05
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                found += [codecs.backfill_from_item(i) for i in answer["Responses"][self._runs]]
                request = dict(answer.get("UnprocessedKeys") or {})
                if request:  # throttled: back off, doubling the pause up to a second
                    time.sleep(pause)
                    pause = min(pause * 2, 1.0)
        return sorted(found, key=lambda b: (b.job_id, b.id))

    def count_ends(self, tally: Tally) -> TallyRefused | None:
        """One transaction: each run's mark (``counted`` false -> true, if it still has the
        status seen), the backfill's counters (ADD, at the state and ``ended`` read; its state
        too when it completes), its owner's usage (the completed backfill taken out, re-runs
        counted down). Written whole or not at all: DynamoDB says which items refused."""
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._runs,
                    "Key": codecs.run_key(end.job_id, end.run_id),
                    "UpdateExpression": "SET #c = :yes",
                    "ConditionExpression": "#c = :no AND #s = :s",
                    "ExpressionAttributeNames": {"#c": codecs.COUNTED, "#s": "status"},
                    "ExpressionAttributeValues": _dump(
                        {":yes": True, ":no": False, ":s": end.status.value}
                    ),
                }
            }
            for end in tally.ends
        ]
        backfill = tally.backfill
        if backfill is not None:
            items.append({"Update": self._counted(backfill, tally)})
        if tally.reruns or (backfill is not None and tally.completed_at is not None):
            completed = backfill if tally.completed_at is not None else None
            items.append(
                {"Update": self._usage_change(tally.owner, release=completed, reruns=-tally.reruns)}
            )
        refused = self._transact(items)
        if refused is None:
            return None
        runs = frozenset(tally.ends[i].run_id for i in refused if i < len(tally.ends))
        return TallyRefused(runs, backfill is not None and len(tally.ends) in refused)

    # --- helpers ----------------------------------------------------------------------------

    def _ended(
        self, job_id: str, backfill_id: str, state: BackfillState, now: datetime
    ) -> dict[str, Any]:
        """The update giving a RUNNING backfill its final state."""
        return {
            "Key": codecs.backfill_key(job_id, backfill_id),
            "UpdateExpression": "SET #state = :state, finished_at = :now",
            "ConditionExpression": "#state = :running",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": _dump(
                {
                    ":state": state.value,
                    ":now": format_instant(now),
                    ":running": BackfillState.RUNNING.value,
                }
            ),
        }

    def _counted(self, backfill: Backfill, tally: Tally) -> dict[str, Any]:
        """The update moving a backfill's counters on by ``tally``'s ends."""
        by_status = Counter(end.status.value for end in tally.ends)
        names = {"#state": "state", "#ended": codecs.ENDED}
        values: dict[str, Any] = {
            ":k": len(tally.ends),
            ":state": backfill.state.value,
            ":ended": backfill.ended,
        }
        adds = ["#ended :k"]
        for i, (status, count) in enumerate(sorted(by_status.items())):
            names[f"#e{i}"] = codecs.ENDED_IN + status
            values[f":e{i}"] = count
            adds.append(f"#e{i} :e{i}")
        update = "ADD " + ", ".join(adds)
        if tally.completed_at is not None:
            update += " SET #state = :done, finished_at = :now"
            values[":done"] = BackfillState.COMPLETED.value
            values[":now"] = format_instant(tally.completed_at)
        return {
            "TableName": self._runs,
            "Key": codecs.backfill_key(backfill.job_id, backfill.id),
            "UpdateExpression": update,
            "ConditionExpression": "#state = :state AND #ended = :ended",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": _dump(values),
        }

    def _usage_change(
        self,
        owner: str,
        enter: Backfill | None = None,
        release: Backfill | None = None,
        reruns: int = 0,
        version: int | None = None,
    ) -> dict[str, Any]:
        """An update of the owner's usage item: a backfill entered in its job's running ones
        (the version moved on, at ``version``), or taken out; re-runs added or counted down."""
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        adds, deletes = [], []
        if enter is not None:
            names["#run"] = codecs.RUNNING + enter.job_id
            values[":id"] = {enter.id}
            adds.append("#run :id")
        if release is not None:
            names["#run"] = codecs.RUNNING + release.job_id
            values[":id"] = {release.id}
            deletes.append("#run :id")
        if reruns:
            names["#reruns"] = codecs.RERUNS
            values[":reruns"] = reruns
            adds.append("#reruns :reruns")
        change: dict[str, Any] = {"TableName": self._jobs, "Key": codecs.usage_key(owner)}
        if version is not None:
            names["#v"] = codecs.VERSION
            values[":one"] = 1
            adds.append("#v :one")
            if version:
                values[":v"] = version
                change["ConditionExpression"] = "#v = :v"
            else:
                change["ConditionExpression"] = "attribute_not_exists(#v)"
        clauses = [f"ADD {', '.join(adds)}"] if adds else []
        clauses += [f"DELETE {', '.join(deletes)}"] if deletes else []
        change["UpdateExpression"] = " ".join(clauses)
        change["ExpressionAttributeNames"] = names
        change["ExpressionAttributeValues"] = _dump(values)
        return change
