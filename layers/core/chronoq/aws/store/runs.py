"""The RunStore port on DynamoDB: run history, one partition of the runs table per job."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.store._tables import Tables
from chronoq.domain import ids
from chronoq.domain.flow import wait_order
from chronoq.domain.runs import Attempt, Run, RunStatus, Trigger
from chronoq.domain.time import format_instant, utc_second
from chronoq.usecases.ports import Page, Position, RunFilter

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def filled_if_missing(
    run: Run, now: datetime, *set_apart: str
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """What an update that may create ``run``'s record adds to its SET: every attribute a new
    record has (but the keys, ``status`` and ``set_apart``, which the update sets itself),
    each only where the record has none yet. Answers the clauses (each after a comma), their
    names and their values."""
    base = {
        k: v
        for k, v in codecs.new_run_item(run, now).items()
        if k not in ("job_id", "run_id", "status", *set_apart) and v is not None
    }
    clauses = "".join(f", #b{i} = if_not_exists(#b{i}, :b{i})" for i in range(len(base)))
    names = {f"#b{i}": name for i, name in enumerate(base)}
    values = {f":b{i}": value for i, value in enumerate(base.values())}
    return clauses, names, values


def read_run(db: DynamoDBClient, table: str, job_id: str, run_id: str) -> Run | None:
    """A run as stored (a consistent read)."""
    item = db.get_item(
        TableName=table, Key=codecs.run_key(job_id, run_id), ConsistentRead=True
    ).get("Item")
    return codecs.run_from_item(item) if item else None


#: The statuses of a run that has not started.
_NOT_STARTED = frozenset({RunStatus.SCHEDULED.value, RunStatus.QUEUED.value})


class DynamoRuns(Tables):
    """The runs of the runs table."""

    def create_run(self, run: Run, now: datetime) -> bool:
        """Record a new run; False when a run with its id exists (left untouched)."""
        item = codecs.new_run_item(run, now)
        try:
            self._db.put_item(
                TableName=self._runs,
                Item=_dump(item),
                ConditionExpression="attribute_not_exists(run_id)",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def park_run(
        self, run: Run, held_at: datetime, flow_key: str, reason: str, now: datetime
    ) -> bool:
        """One conditional update: the record created SCHEDULED if it has none, ``held_at``
        noted unless a wait is already, and the run among ``flow_key``'s parked runs (the
        runs table's sparse index RUNS_WAITING_INDEX; parked again, it keeps its place);
        refused if it is no longer SCHEDULED."""
        filled, names, values = filled_if_missing(run, now, "held_at")
        held = run.held_at or held_at
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(run.job_id, run.id),
                UpdateExpression=(
                    "SET #s = if_not_exists(#s, :scheduled), "
                    "held_at = if_not_exists(held_at, :held), waits_on = :flow, "
                    "wait_order = if_not_exists(wait_order, :order), wait_reason = :why" + filled
                ),
                ConditionExpression="attribute_not_exists(run_id) OR #s = :scheduled",
                ExpressionAttributeNames={"#s": "status", **names},
                ExpressionAttributeValues=_dump(
                    {
                        ":scheduled": RunStatus.SCHEDULED.value,
                        ":held": format_instant(held),
                        ":flow": flow_key,
                        ":order": wait_order(run.priority.value, held, run.id),
                        ":why": reason,
                        **values,
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def count_waiting_triggers(self, job_id: str, since: datetime, most: int) -> int:
        """Pages of the job's runs from ``since`` on, newest first, only their trigger and
        status read (at most ``most`` items): those manual and not started counted."""
        waiting = looked = 0
        start: dict[str, Any] | None = None
        while looked < most:
            request: dict[str, Any] = {
                "TableName": self._runs,
                "KeyConditionExpression": "job_id = :j AND run_id >= :since",
                "ProjectionExpression": "#t, #s",
                "ExpressionAttributeNames": {"#t": "trigger", "#s": "status"},
                "ExpressionAttributeValues": _dump(
                    {":j": job_id, ":since": ids.run_id(job_id, utc_second(since))}
                ),
                "ScanIndexForward": False,
                "Limit": most - looked,
            }
            if start:
                request["ExclusiveStartKey"] = start
            answer = self._db.query(**request)
            for item in answer.get("Items", []):
                looked += 1
                trigger = item.get("trigger", {}).get("S")
                status = item.get("status", {}).get("S")
                if trigger == Trigger.MANUAL.value and status in _NOT_STARTED:
                    waiting += 1
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        return waiting

    def waiting_runs(self, flow_key: str, limit: int) -> list[Run]:
        """The first ``limit`` runs parked on ``flow_key`` that have not started, in the
        order they are woken: one query of the sparse index (eventually consistent)."""
        found: list[Run] = []
        start: dict[str, Any] | None = None
        while len(found) < limit:
            request: dict[str, Any] = {
                "TableName": self._runs,
                "IndexName": r.RUNS_WAITING_INDEX,
                "KeyConditionExpression": "waits_on = :flow",
                "FilterExpression": "#s = :scheduled",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": _dump(
                    {":flow": flow_key, ":scheduled": RunStatus.SCHEDULED.value}
                ),
                "Limit": limit - len(found),
            }
            if start:
                request["ExclusiveStartKey"] = start
            answer = self._db.query(**request)
            found += [codecs.run_from_item(item) for item in answer.get("Items", [])]
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        return found[:limit]

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        return read_run(self._db, self._runs, job_id, run_id)

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        """The newest ``limit`` runs of a job, newest first (its backfills' items left out:
        run ids begin with the job id)."""
        answer = self._db.query(
            TableName=self._runs,
            KeyConditionExpression="job_id = :j AND run_id BETWEEN :low AND :high",
            ExpressionAttributeValues=_dump(
                {":j": job_id, ":low": f"{job_id}_", ":high": f"{job_id}_~"}
            ),
            ScanIndexForward=False,
            Limit=limit,
        )
        return [codecs.run_from_item(item) for item in answer["Items"]]

    def page_runs(
        self,
        job_id: str,
        owner: str,
        limit: int,
        after: Position | None = None,
        where: RunFilter | None = None,
    ) -> Page[Run]:
        """A page of a job's runs, newest first: a key-range query of its partition, the time
        range narrowing the range of run ids (they begin with their scheduled second), the
        rest of the filter applied to what it reads, up to PAGE_SCAN_LIMIT runs. The runs of
        a job all carry its owner: a run of another owner ends the listing. A position is
        (run id,)."""
        where = where or RunFilter()
        prefix = f"{job_id}_"
        low = prefix + (ids.run_stamp(where.since) if where.since else "")
        high = prefix + (ids.run_stamp(where.until) if where.until else "") + "~"
        found: list[Run] = []
        last: Position | None = None
        looked = 0
        start = codecs.run_key(job_id, after[0]) if after else None
        while True:
            query: dict[str, Any] = {
                "TableName": self._runs,
                "KeyConditionExpression": "job_id = :j AND run_id BETWEEN :low AND :high",
                "ExpressionAttributeValues": _dump({":j": job_id, ":low": low, ":high": high}),
                "ScanIndexForward": False,
                "Limit": limit + 1 if where != RunFilter() else limit - len(found) + 1,
            }
            if start:
                query["ExclusiveStartKey"] = start
            answer = self._db.query(**query)
            for item in answer["Items"]:
                if looked == r.PAGE_SCAN_LIMIT:
                    return Page(found, last)
                run = codecs.run_from_item(item)
                if run.owner != owner:
                    return Page(found, None)
                if where.matches(run):
                    if len(found) == limit:
                        return Page(found, last)  # one more is there: a page follows
                    found.append(run)
                looked += 1
                last = (run.id,)
            start = answer.get("LastEvaluatedKey")
            if not start:
                return Page(found, None)

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        """Give a run that will not (or no longer) execute its final status, if it is still
        in one of ``only_from``; ``attempt``, the attempt it ends, joins its attempts."""
        allowed = {f":from{i}": s.value for i, s in enumerate(only_from)}
        # (a parked run leaves its flow's parked runs: the same write)
        update = "SET #s = :status, finished_at = :now, reason = :reason"
        values: dict[str, Any] = {
            ":status": status.value,
            ":now": format_instant(now),
            ":reason": reason,
            **allowed,
        }
        if attempt is not None:
            update += ", attempts = list_append(if_not_exists(attempts, :none), :attempt)"
            values.update({":none": [], ":attempt": [codecs.attempt_item(attempt)]})
        update += " REMOVE waits_on, wait_order, wait_reason"
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(run.job_id, run.id),
                UpdateExpression=update,
                ConditionExpression=f"#s IN ({', '.join(allowed)})",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_dump(values),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def delete_pending_run(self, job_id: str, run_id: str) -> bool:
        """Forget a run that is still only SCHEDULED (its occurrence was replaced)."""
        try:
            self._db.delete_item(
                TableName=self._runs,
                Key=codecs.run_key(job_id, run_id),
                ConditionExpression="#s = :scheduled",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_dump({":scheduled": RunStatus.SCHEDULED.value}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def note_notification(self, job_id: str, run_id: str, channel: str, outcome: str) -> None:
        """Keep how one notification of a run's end went (if the run is still kept)."""
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(job_id, run_id),
                UpdateExpression="SET #c = :o",
                ConditionExpression="attribute_exists(run_id)",
                ExpressionAttributeNames={"#c": codecs.NOTIFIED + channel},
                ExpressionAttributeValues=_dump({":o": outcome}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return

    def hold_run(self, run: Run, held_at: datetime, reason: str, now: datetime) -> bool:
        """One conditional update: the record created SCHEDULED if it has none, with
        ``held_at``; refused if it is no longer SCHEDULED or notes a wait already."""
        filled, names, values = filled_if_missing(run, now, "held_at")
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(run.job_id, run.id),
                UpdateExpression=(
                    "SET #s = if_not_exists(#s, :scheduled), held_at = :held, "
                    "wait_reason = :why" + filled
                ),
                ConditionExpression=(
                    "attribute_not_exists(run_id) OR (#s = :scheduled AND "
                    "attribute_not_exists(held_at))"
                ),
                ExpressionAttributeNames={"#s": "status", **names},
                ExpressionAttributeValues=_dump(
                    {
                        ":scheduled": RunStatus.SCHEDULED.value,
                        ":held": format_instant(held_at),
                        ":why": reason,
                        **values,
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True
