"""DynamoDB adapter: jobs, the schedule (time index) and run history."""

from __future__ import annotations

import contextlib
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Attempt, Occurrence, Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Claim, KeyRecord, Page, Position, RunFilter

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_CHECKPOINT_BUCKET = "checkpoint"
#: Prefix of the jobs table's idempotency key items (never a job id: those are ``job_...``).
_KEY_PREFIX = "idem#"
#: The key of an owner's job count in the jobs table (job ids start with "job_").
_COUNT_PREFIX = "count#"
#: Prefix of the jobs table's job name items: one per owner and name, naming its job.
_NAME_PREFIX = "name#"


def name_key(owner: str, name: str) -> str:
    """The key of the item that holds ``name`` among ``owner``'s jobs (the owner's length
    first: no owner and name run into another's)."""
    return f"{_NAME_PREFIX}{len(owner)}#{owner}#{name}"


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


def _remove(attributes: list[str]) -> str:
    return f" REMOVE {', '.join(attributes)}" if attributes else ""


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
        # (an idempotency key's item, or an owner's job count, is no job)
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
        found = self.get_jobs(job_ids)
        return [found[j] for j in job_ids if j in found and found[j].owner == owner]

    def get_jobs(self, job_ids: Iterable[str], consistent: bool = False) -> dict[str, Job]:
        """Many jobs by id, 100 per request (missing ones are absent from the answer).
        Eventually consistent reads (half the price) unless ``consistent``: what the
        dispatcher decides from them, the worker checks again with consistent reads."""
        found: dict[str, Job] = {}
        for chunk in _chunks(list(dict.fromkeys(job_ids)), 100):
            keys: dict[str, Any] = {"Keys": [_dump({"job_id": j}) for j in chunk]}
            if consistent:
                keys["ConsistentRead"] = True
            request: dict[str, Any] = {self._jobs: keys}
            pause = 0.05
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._jobs, []):
                    if "spec" in item:  # (an idempotency key's item is no job)
                        job = codecs.job_from_item(item)
                        found[job.id] = job
                request = dict(answer.get("UnprocessedKeys") or {})
                if request:  # throttled: back off, doubling the pause up to a second
                    time.sleep(pause)
                    pause = min(pause * 2, 1.0)
        return found

    def page_jobs(
        self,
        owner: str,
        limit: int,
        after: Position | None = None,
        keep: Callable[[Job], bool] | None = None,
    ) -> Page[Job]:
        """A page of the owner's jobs in the owner index's order (``created_at``, oldest
        first): keys from the index (KEYS_ONLY), jobs by BatchGetItem, eventually consistent
        as the index is. Unfiltered, only the jobs of the page are read (the index is asked
        for one key more, to know whether a page follows); filtered, keys are read a page
        and one at a time, up to PAGE_SCAN_LIMIT. A position is (``created_at``, job id)."""
        start = (
            _dump({"owner": owner, "created_at": after[0], "job_id": after[1]}) if after else None
        )
        found: list[Job] = []
        last: Position | None = None
        looked = 0
        while True:
            query: dict[str, Any] = {
                "TableName": self._jobs,
                "IndexName": r.JOBS_BY_OWNER_INDEX,
                "KeyConditionExpression": "#o = :o",
                "ExpressionAttributeNames": {"#o": "owner"},
                "ExpressionAttributeValues": _dump({":o": owner}),
                "Limit": (limit if keep else limit - len(found)) + 1,
            }
            if start:
                query["ExclusiveStartKey"] = start
            answer = self._db.query(**query)
            keys = [_load(i) for i in answer["Items"]]
            needed = keys if keep else keys[: limit - len(found)]
            jobs = self.get_jobs([k["job_id"] for k in needed]) if needed else {}
            fetched = {k["job_id"] for k in needed}
            for key in keys:
                # (a key not fetched is past an unfiltered page's end: a page follows)
                if looked == r.PAGE_SCAN_LIMIT or key["job_id"] not in fetched:
                    return Page(found, last)
                job = jobs.get(key["job_id"])
                if job is not None and job.owner == owner and (keep is None or keep(job)):
                    if len(found) == limit:
                        return Page(found, last)  # one more is there: a page follows
                    found.append(job)
                looked += 1
                last = (key["created_at"], key["job_id"])
            start = answer.get("LastEvaluatedKey")
            if not start:
                return Page(found, None)

    def save_job(self, job: Job, expected_version: int) -> bool:
        """Write a changed job (spec, state, schedule position, version) unless its version
        is no longer ``expected_version``. Run bookkeeping (``active_runs``) is untouched."""
        item = codecs.job_item(job)
        limits = [a for a in codecs.LIMIT_ATTRIBUTES if item[a] is not None]
        unset = [a for a in codecs.LIMIT_ATTRIBUTES if item[a] is None]
        try:
            self._db.update_item(
                TableName=self._jobs,
                Key=_dump({"job_id": job.id}),
                UpdateExpression=(
                    "SET #state = :state, spec = :spec, version = :version, "
                    "generation = :generation, updated_at = :updated"
                    + (", next_run_at = :next" if job.next_run_at else "")
                    + "".join(f", {a} = :{a}" for a in limits)
                    + _remove(([] if job.next_run_at else ["next_run_at"]) + unset)
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
                        **{f":{a}": item[a] for a in limits},
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

    # --- job names: unique per owner ---------------------------------------------------------

    def claim_name(self, owner: str, name: str, job_id: str, now: datetime) -> str | None:
        """Take ``name`` among ``owner``'s jobs for ``job_id``: None when taken (it was free,
        already this job's, or held by a job that no longer has it, for longer than
        NAME_STALE_SECONDS: a create or delete that died halfway); else the id of the job
        holding it. One conditional write; refused, one read of the holder."""
        key = name_key(owner, name)
        item = {"job_id": key, "job": job_id, "claimed_at": codecs.millis(now)}
        try:
            self._db.put_item(
                TableName=self._jobs,
                Item=_dump(item),
                ConditionExpression="attribute_not_exists(job_id) OR job = :job",
                ExpressionAttributeValues=_dump({":job": job_id}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return None
        except self._db.exceptions.ConditionalCheckFailedException as refused:
            given = cast("dict[str, Any]", refused.response).get("Item")
            held = _load(
                given
                or self._db.get_item(
                    TableName=self._jobs, Key=_dump({"job_id": key}), ConsistentRead=True
                ).get("Item", {})
            )
        holder = str(held.get("job", ""))
        claimed = int(held.get("claimed_at", 0))
        if claimed > codecs.millis(now) - r.NAME_STALE_SECONDS * 1000:
            return holder  # (a create under way may not have written its job yet)
        job = self.get_job(holder)
        if job is not None and job.owner == owner and job.name == name:
            return holder
        try:  # stale: its job is gone, or has another name now
            self._db.put_item(
                TableName=self._jobs,
                Item=_dump(item),
                ConditionExpression="job = :holder AND claimed_at = :claimed",
                ExpressionAttributeValues=_dump({":holder": holder, ":claimed": claimed}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return holder  # (taken over meanwhile by another)
        return None

    def release_name(self, owner: str, name: str, job_id: str) -> None:
        """Give ``name`` up, if ``job_id`` holds it."""
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.delete_item(
                TableName=self._jobs,
                Key=_dump({"job_id": name_key(owner, name)}),
                ConditionExpression="job = :job",
                ExpressionAttributeValues=_dump({":job": job_id}),
            )

    def all_jobs(self) -> Iterator[Job]:
        """Every job of every owner (a scan of the jobs table: for migrations only)."""
        pages = self._db.get_paginator("scan").paginate(
            TableName=self._jobs, FilterExpression="attribute_exists(spec)"
        )
        for page in pages:
            for item in page["Items"]:
                yield codecs.job_from_item(item)

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

    def occurrence_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> tuple[list[Occurrence], str | None]:
        """At most ``limit`` items of the bucket after key ``after``: one query."""
        bucket = ids.bucket(minute, shard)
        query: dict[str, Any] = {
            "TableName": self._schedule,
            "KeyConditionExpression": "#b = :b",
            "ExpressionAttributeNames": {"#b": "bucket"},
            "ExpressionAttributeValues": _dump({":b": bucket}),
            "Limit": limit,
        }
        if after is not None:
            query["ExclusiveStartKey"] = _dump({"bucket": bucket, "due": after})
        answer = self._db.query(**query)
        found = [o for i in answer["Items"] for o in codecs.occurrences_from_item(i)]
        last = answer.get("LastEvaluatedKey")
        return (
            sorted(found, key=lambda o: (o.scheduled_at, o.run_id)),
            str(_load(last)["due"]) if last else None,
        )

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        """Every occurrence due in ``minute`` on ``shard``, by due time (page after page)."""
        found: list[Occurrence] = []
        after: str | None = None
        while True:
            page, after = self.occurrence_page(minute, shard, after, r.DISPATCH_PAGE_ITEMS)
            found += page
            if after is None:
                return sorted(found, key=lambda o: (o.scheduled_at, o.run_id))

    # Each shard's checkpoint item holds two minutes: ``opened``, the last minute whose
    # dispatch has begun, and ``minute``, the last one dispatched completely. The dispatcher
    # opens a minute before it queries it; a writer of an occurrence reads ``opened`` after
    # writing it. So either the dispatcher's query sees the occurrence, or the writer sees
    # the minute opened and sends the occurrence itself. ``minute`` is where a dispatcher
    # resumes after a crash or an outage.

    def dispatch_marks(
        self, shards: int
    ) -> tuple[dict[int, datetime | None], dict[int, tuple[datetime, str]]]:
        """Each shard's last minute dispatched completely, and how far into the next one it
        got (see advance_within): one batch read of the checkpoint items."""
        done: dict[int, datetime | None] = dict.fromkeys(range(shards))
        within: dict[int, tuple[datetime, str]] = {}
        for shard, data in self._checkpoint_items(shards).items():
            if "minute" in data:
                done[shard] = ids.minute_of_bucket(data["minute"])
            if "within" in data and "after" in data:
                within[shard] = (ids.minute_of_bucket(data["within"]), data["after"])
        return done, within

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        """The last minute dispatched completely on each shard (None: never dispatched)."""
        return self.dispatch_marks(shards)[0]

    def progress(self, shards: int) -> dict[int, tuple[datetime, str]]:
        """How far into a minute each shard got (see advance_within)."""
        return self.dispatch_marks(shards)[1]

    def advance_within(self, shard: int, minute: datetime, after: str) -> None:
        """Record the items of ``minute`` up to key ``after`` as dispatched on ``shard``."""
        self._db.update_item(
            TableName=self._schedule,
            Key=self._checkpoint_key(shard),
            UpdateExpression="SET #w = :w, #a = :a",
            ExpressionAttributeNames={"#w": "within", "#a": "after"},
            ExpressionAttributeValues=_dump(
                {":w": ids.bucket(minute, shard).partition("#")[0], ":a": after}
            ),
        )

    def _checkpoint_items(self, shards: int) -> dict[int, dict[str, Any]]:
        keys = [self._checkpoint_key(s) for s in range(shards)]
        found: dict[int, dict[str, Any]] = {}
        for chunk in _chunks(keys, 100):
            request: dict[str, Any] = {self._schedule: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                answer = self._db.batch_get_item(RequestItems=request)
                for item in answer["Responses"].get(self._schedule, []):
                    data = _load(item)
                    found[int(data["due"])] = data
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
        """Move the shard's last dispatched minute back before ``minute`` (only ever back),
        and forget how far into that minute or a later one the dispatcher got."""
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
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self._schedule,
                Key=self._checkpoint_key(shard),
                UpdateExpression="REMOVE #w, #a",
                ConditionExpression="#w > :m",
                ExpressionAttributeNames={"#w": "within", "#a": "after"},
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
                if k not in ("job_id", "run_id", "status", "queued_at") and v is not None
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

    # --- idempotency keys -----------------------------------------------------------------

    def claim_key(
        self, key: str, fingerprint: str, now: datetime, stale: datetime
    ) -> KeyRecord | None:
        """One conditional PutItem: taken unless the key is held, unexpired (TTL deletes
        late), and answered or recently claimed or of another fingerprint. Refused, the
        write answers the record that holds the key (no read of its own)."""
        item = {
            "job_id": _KEY_PREFIX + key,
            "fingerprint": fingerprint,
            "claimed_at": codecs.millis(now),
            "expires_at": int(now.timestamp()) + r.IDEMPOTENCY_KEY_SECONDS,
        }
        try:
            self._db.put_item(
                TableName=self._jobs,
                Item=_dump(item),
                ConditionExpression=(
                    "attribute_not_exists(job_id) OR expires_at <= :now OR "
                    "(attribute_not_exists(answer) AND claimed_at < :stale "
                    "AND fingerprint = :fingerprint)"
                ),
                ExpressionAttributeValues=_dump(
                    {
                        ":now": int(now.timestamp()),
                        ":stale": codecs.millis(stale),
                        ":fingerprint": fingerprint,
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self._db.exceptions.ConditionalCheckFailedException as refused:
            given = cast("dict[str, Any]", refused.response).get("Item")
            held = given or self._db.get_item(
                TableName=self._jobs,
                Key=_dump({"job_id": _KEY_PREFIX + key}),
                ConsistentRead=True,
            ).get("Item", {})
            data = _load(held)
            answer = data.get("answer")
            return KeyRecord(
                fingerprint=str(data.get("fingerprint", "")),
                answer=zlib.decompress(bytes(answer.value)).decode() if answer else None,
                claimed_at=datetime.fromtimestamp(int(data.get("claimed_at", 0)) / 1000, UTC),
            )
        return None

    def answer_key(self, key: str, answer: str) -> None:
        """Keep the answer, compressed (JSON of a job compresses several times over: fewer
        write units)."""
        self._db.update_item(
            TableName=self._jobs,
            Key=_dump({"job_id": _KEY_PREFIX + key}),
            UpdateExpression="SET answer = :answer",
            ExpressionAttributeValues=_dump({":answer": zlib.compress(answer.encode())}),
        )

    def release_key(self, key: str) -> None:
        self._db.delete_item(TableName=self._jobs, Key=_dump({"job_id": _KEY_PREFIX + key}))

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
