"""The JobStore port on DynamoDB: jobs, their owners' counts and names, and the job's side of
claiming a run (its active runs), in the jobs table."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, cast

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables, chunks, remove
from chronoq.aws.store.runs import filled_if_missing, read_run
from chronoq.domain import keys
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus
from chronoq.domain.time import format_instant
from chronoq.usecases.ports import Claim, Page, Position


class DynamoJobs(Tables):
    """The jobs table's jobs, job counts and job names (and the runs table, for claims)."""

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

    def job_count(self, owner: str) -> int:
        item = self._db.get_item(
            TableName=self._jobs,
            Key=_dump({"job_id": keys.count_key(owner)}),
            ProjectionExpression="#n",
            ExpressionAttributeNames={"#n": "jobs"},
        ).get("Item")
        return int(item["jobs"]["N"]) if item and "jobs" in item else 0

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
                Key=_dump({"job_id": keys.count_key(owner)}),
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
        for chunk in chunks(list(dict.fromkeys(job_ids)), 100):
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
                    + remove(([] if job.next_run_at else ["next_run_at"]) + unset)
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

    def claim_name(self, owner: str, name: str, job_id: str, now: datetime) -> str | None:
        """Take ``name`` among ``owner``'s jobs for ``job_id``: None when taken (it was free,
        already this job's, or held by a job that no longer has it, for longer than
        NAME_STALE_SECONDS: a create or delete that died halfway); else the id of the job
        holding it. One conditional write; refused, one read of the holder."""
        key = keys.name_key(owner, name)
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
                Key=_dump({"job_id": keys.name_key(owner, name)}),
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
            filled, names, values = filled_if_missing(run, run.scheduled_at, "queued_at")
            self._db.update_item(
                TableName=self._runs,
                Key=codecs.run_key(run.job_id, run.id),
                UpdateExpression=(
                    "SET #s = :queued, queued_at = if_not_exists(queued_at, :q), claimed_at = :now"
                    + filled
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
                        **values,
                    }
                ),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            kept = read_run(self._db, self._runs, run.job_id, run.id)
            if kept is not None and kept.status is RunStatus.QUEUED:
                return "held"
            if not entered_before:
                self.release_run(job.id, run.id)
            return "taken"
        return "claimed"

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
