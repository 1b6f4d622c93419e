"""DynamoDB adapter: jobs, the schedule (time index) and run history."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Attempt, Occurrence, Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Claim

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_CHECKPOINT_BUCKET = "checkpoint"
#: The key of an owner's job count in the jobs table (job ids start with "job_").
_COUNT_PREFIX = "count#"


def _packs(
    occurrences: Iterable[Occurrence], shards: int, pack: str
) -> Iterator[tuple[str, list[Occurrence]]]:
    """Occurrences grouped by bucket, ``PACK_SIZE`` at most per group, each group named by
    ``pack`` and its place: the same occurrences packed again get the same names."""
    buckets: dict[str, list[Occurrence]] = defaultdict(list)
    for o in sorted(occurrences, key=lambda o: (o.scheduled_at, o.run_id)):
        buckets[ids.bucket(o.scheduled_at, ids.shard_of(o.job_id, shards))].append(o)
    for group in buckets.values():
        for n, chunk in enumerate(_chunks(group, codecs.PACK_SIZE)):
            yield f"{pack}#{n}", chunk


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class DynamoStore:
    """The jobs, schedule and runs tables (any of them may be left unnamed by a function
    that does not use it)."""

    def __init__(
        self, client: DynamoDBClient, jobs_table: str, runs_table: str, schedule_table: str = ""
    ) -> None:
        self._db = client
        self._jobs = jobs_table
        self._schedule = schedule_table
        self._runs = runs_table

    # --- jobs -----------------------------------------------------------------------------

    def put_new_job(self, job: Job) -> None:
        self._db.put_item(
            TableName=self._jobs,
            Item=_dump(codecs.job_item(job)),
            ConditionExpression="attribute_not_exists(job_id)",
        )

    def get_job(self, job_id: str) -> Job | None:
        item = self._db.get_item(
            TableName=self._jobs, Key=_dump({"job_id": job_id}), ConsistentRead=True
        ).get("Item")
        # (an owner's job count shares the table, under a key no job id has)
        return codecs.job_from_item(item) if item and "spec" in item else None

    def count_job(self, owner: str, delta: int, limit: int | None = None) -> bool:
        """The owner's job count is an item of the jobs table (not in the owner index: it
        has no ``owner`` attribute), changed by one conditional update."""
        values: dict[str, Any] = {":d": delta, ":zero": 0}
        # (no limit, or one counted down: any count will do)
        condition = "attribute_not_exists(#n) OR #n <= :room"
        values[":room"] = limit - delta if limit is not None and delta > 0 else 2**62
        try:
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": f"{_COUNT_PREFIX}{owner}"}),
                UpdateExpression="SET #n = if_not_exists(#n, :zero) + :d",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#n": "jobs"},
                ExpressionAttributeValues=_dump(values),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def list_jobs(self, owner: str) -> list[Job]:
        """The owner's jobs, in the owner index's order (oldest first). The index holds keys
        only, so that the many writes to a job do not rewrite its entry too: the keys come
        from the index (every page of it), the jobs from the table, 100 per BatchGetItem.
        Reads are eventually consistent, as the index itself is; a job deleted meanwhile is
        left out."""
        pages = self._db.get_paginator("query").paginate(
            TableName=self._jobs,
            IndexName=r.JOBS_BY_OWNER_INDEX,
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues=_dump({":o": owner}),
        )
        job_ids = list(dict.fromkeys(_load(i)["job_id"] for page in pages for i in page["Items"]))
        found: dict[str, Job] = {}
        for chunk in _chunks(job_ids, 100):
            request: dict[str, Any] = {self._jobs: {"Keys": [_dump({"job_id": j}) for j in chunk]}}
            pause = 0.05
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._jobs, []):
                    if "spec" not in item:
                        continue
                    job = codecs.job_from_item(item)
                    found[job.id] = job
                request = dict(answer.get("UnprocessedKeys") or {})
                if request:
                    time.sleep(pause)
                    pause = min(pause * 2, 1.0)
        return [found[j] for j in job_ids if j in found and found[j].owner == owner]

    def get_jobs(self, job_ids: Iterable[str], consistent: bool = False) -> dict[str, Job]:
        """Many jobs by id, 100 per request (missing ones are absent from the answer).
        Eventually consistent reads (half the price) unless ``consistent``: what the
        dispatcher decides from them, the worker checks again with consistent reads."""
        found: dict[str, Job] = {}
        for chunk in _chunks(sorted(set(job_ids)), 100):
            keys = [_dump({"job_id": j}) for j in chunk]
            request: dict[str, Any] = {self._jobs: {"Keys": keys, "ConsistentRead": consistent}}
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._jobs, []):
                    if "spec" not in item:
                        continue
                    job = codecs.job_from_item(item)
                    found[job.id] = job
                request = dict(answer.get("UnprocessedKeys") or {})
                if request:
                    time.sleep(0.05)
        return found

    def save_job(self, job: Job, expected_version: int) -> bool:
        """Write a changed job (spec, state, schedule position, version) unless its version
        is no longer ``expected_version``. Run bookkeeping (``active_runs``) is untouched."""
        item = codecs.job_item(job)
        try:
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": job.id}),
                UpdateExpression=(
                    "SET #state = :state, spec = :spec, version = :version, "
                    "generation = :generation, updated_at = :updated"
                    + (", next_run_at = :next" if job.next_run_at else " REMOVE next_run_at")
                ),
                ConditionExpression="version = :expected",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=_dump(
                    {
                        ":state": item["state"],
                        ":spec": item["spec"],
                        ":version": job.version,
                        ":generation": job.generation,
                        ":updated": item["updated_at"],
                        ":next": item["next_run_at"],
                        ":expected": expected_version,
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def delete_job(self, job_id: str) -> bool:
        try:
            self._db.delete_item(
                TableName=self._jobs,
                Key=_dump({"job_id": job_id}),
                ConditionExpression="attribute_exists(job_id)",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    # --- schedule -------------------------------------------------------------------------

    def put_occurrences(
        self,
        occurrences: Iterable[Occurrence],
        shards: int,
        now: datetime,
        pack: str | None = None,
    ) -> None:
        # One batch may not name the same key twice: each occurrence once.
        unique = {(o.run_id, o.scheduled_at): o for o in occurrences}
        if pack is None:
            items = [
                {"PutRequest": {"Item": _dump(codecs.occurrence_item(o, shards, now))}}
                for o in unique.values()
            ]
        else:
            items = [
                {"PutRequest": {"Item": _dump(codecs.pack_item(group, shards, now, key))}}
                for key, group in _packs(unique.values(), shards, pack)
            ]
        for chunk in _chunks(items, 25):
            request: dict[str, Any] = {self._schedule: chunk}
            while request:
                answer = self._db.batch_write_item(RequestItems=request)
                request = dict(answer.get("UnprocessedItems") or {})
                if request:
                    time.sleep(0.05)

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        """Every occurrence due in ``minute`` on ``shard``, by due time: one key-range query
        (more pages only for a bucket over 1 MB)."""
        pages = self._db.get_paginator("query").paginate(
            TableName=self._schedule,
            KeyConditionExpression="#b = :b",
            ExpressionAttributeNames={"#b": "bucket"},
            ExpressionAttributeValues=_dump({":b": ids.bucket(minute, shard)}),
        )
        found = [
            o for page in pages for i in page["Items"] for o in codecs.occurrences_from_item(i)
        ]
        return sorted(found, key=lambda o: (o.scheduled_at, o.run_id))

    # Each shard's checkpoint item holds two minutes: ``opened``, the last minute whose
    # dispatch has begun, and ``minute``, the last one dispatched completely. The dispatcher
    # opens a minute before it queries it; a writer of an occurrence reads ``opened`` after
    # writing it. So either the dispatcher's query sees the occurrence, or the writer sees
    # the minute opened and sends the occurrence itself. ``minute`` is where a dispatcher
    # resumes after a crash or an outage.

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        """The last minute dispatched completely on each shard (None: never dispatched)."""
        keys = [self._checkpoint_key(s) for s in range(shards)]
        found: dict[int, datetime | None] = dict.fromkeys(range(shards))
        for chunk in _chunks(keys, 100):
            request: dict[str, Any] = {self._schedule: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._schedule, []):
                    data = _load(item)
                    if "minute" in data:
                        found[int(data["due"])] = ids.minute_of_bucket(data["minute"])
                request = dict(answer.get("UnprocessedKeys") or {})
        return found

    def opened_through(self, shard: int) -> datetime | None:
        """The last minute whose dispatch has begun on ``shard``."""
        item = self._db.get_item(
            TableName=self._schedule, Key=self._checkpoint_key(shard), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        data = _load(item)
        return ids.minute_of_bucket(max(data.get("opened", ""), data.get("minute", "")))

    def open_minute(self, shard: int, minute: datetime) -> None:
        """Mark ``minute`` as being dispatched on ``shard`` (before querying it)."""
        self._advance_checkpoint(shard, "opened", minute)

    def close_minute(self, shard: int, minute: datetime) -> None:
        """Record ``minute`` as dispatched completely on ``shard``."""
        self._advance_checkpoint(shard, "minute", minute)

    def reopen_minute(self, shard: int, minute: datetime) -> None:
        """Move the shard's last dispatched minute back before ``minute`` (only ever back)."""
        earlier = ids.bucket(minute - timedelta(minutes=1), shard).partition("#")[0]
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="SET #m = :m",
                ConditionExpression="#m > :m",
                ExpressionAttributeNames={"#m": "minute"},
                ExpressionAttributeValues=_dump({":m": earlier}),
            )

    @staticmethod
    def _checkpoint_key(shard: int) -> dict[str, Any]:
        return _dump({"bucket": _CHECKPOINT_BUCKET, "due": f"{shard:04d}"})

    def _advance_checkpoint(self, shard: int, attribute: str, minute: datetime) -> None:
        """Set one of the shard's checkpoint minutes; they never move back."""
        key = ids.bucket(minute, shard).partition("#")[0]
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="SET #m = :m",
                ConditionExpression="attribute_not_exists(#m) OR #m < :m",
                ExpressionAttributeNames={"#m": attribute},
                ExpressionAttributeValues=_dump({":m": key}),
            )

    # --- runs -----------------------------------------------------------------------------

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

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        """Take a run for execution: enter it in the job's active runs, then mark it QUEUED
        under a claim that lasts ``CLAIM_LEASE_SECONDS`` from ``now``.

        Answers ``claimed``; ``held`` when another worker's claim on it still lasts (a
        duplicate delivery arriving while the run is being started: ask again later);
        ``taken`` when the run is running or over; ``job_changed`` when the job no longer is
        as read (changed, paused, or, if ``exclusive``, another run became active): read it
        again and decide afresh. A QUEUED run whose claim has lapsed may be claimed again:
        its worker died before starting it (its message comes back after the queue's
        visibility timeout, longer than the lease). Two conditional writes rather than a
        transaction (half the cost): an entry left behind by a worker that died between them
        belongs to a run that never became QUEUED, and is dropped the next time the job's
        active runs are checked.
        """
        condition = "attribute_exists(job_id) AND version = :version"
        values: dict[str, Any] = {":ids": {run.id}, ":version": job.version}
        if exclusive:
            condition += " AND (attribute_not_exists(active_runs) OR contains(active_runs, :id))"
            values[":id"] = run.id
        try:
            before = self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": job.id}),
                UpdateExpression="ADD active_runs :ids",
                ConditionExpression=condition,
                ExpressionAttributeValues=_dump(values),
                # (not UPDATED_OLD: an ADD of a member already there updates nothing, and
                # whether that is returned is not documented; ALL_OLD costs no more)
                ReturnValues="ALL_OLD",
            ).get("Attributes", {})
        except self._db.exceptions.ConditionalCheckFailedException:
            return "job_changed"
        entered_before = run.id in _load(before).get("active_runs", set())
        try:
            # A scheduled run has no record yet: the claim creates it.
            base = {
                k: v
                for k, v in codecs.new_run_item(run, run.scheduled_at).items()
                if k not in ("job_id", "run_id", "status") and v is not None
            }
            names = {f"#b{i}": name for i, name in enumerate(base)}
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(run.job_id, run.id),
                UpdateExpression=(
                    "SET #s = :queued, queued_at = if_not_exists(queued_at, :q), claimed_at = :now"
                    + "".join(f", {n} = if_not_exists({n}, :b{n[2:]})" for n in names)
                ),
                ConditionExpression=(
                    "attribute_not_exists(run_id) OR #s = :scheduled OR (#s = :queued AND "
                    "(attribute_not_exists(claimed_at) OR claimed_at <= :lapsed))"
                ),
                ExpressionAttributeNames={"#s": "status", **names},
                ExpressionAttributeValues=_dump(
                    {
                        ":queued": RunStatus.QUEUED.value,
                        ":scheduled": RunStatus.SCHEDULED.value,
                        ":q": format_instant(queued_at),
                        ":now": codecs.millis(now),
                        ":lapsed": codecs.millis(now) - r.CLAIM_LEASE_SECONDS * 1000,
                        **{f":b{i}": value for i, value in enumerate(base.values())},
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            kept = self.get_run(run.job_id, run.id)
            if kept is not None and kept.status is RunStatus.QUEUED:
                return "held"
            if not entered_before:
                self.release_run(job.id, run.id)
            return "taken"
        return "claimed"

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

    def release_run(self, job_id: str, run_id: str) -> None:
        """Take a run off its job's list of active runs (the state machine does the same)."""
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": job_id}),
                UpdateExpression="DELETE active_runs :ids",
                ConditionExpression="attribute_exists(job_id)",
                ExpressionAttributeValues=_dump({":ids": {run_id}}),
            )

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

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        item = self._db.get_item(
            TableName=self._runs,
            Key=codecs.run_key(job_id, run_id),
            ConsistentRead=True,
        ).get("Item")
        return codecs.run_from_item(item) if item else None

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        """The newest ``limit`` runs of a job, newest first."""
        answer = self._db.query(
            TableName=self._runs,
            KeyConditionExpression="job_id = :j",
            ExpressionAttributeValues=_dump({":j": job_id}),
            ScanIndexForward=False,
            Limit=limit,
        )
        return [codecs.run_from_item(item) for item in answer["Items"]]
