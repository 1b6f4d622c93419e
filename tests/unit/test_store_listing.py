"""Listing an owner's jobs on DynamoDB, request by request (botocore's Stubber): the keys from
every page of the owner index, then the jobs, 100 keys per BatchGetItem, unprocessed keys
asked for again, in the index's order whatever order the answers come in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobState

from tests.builders import job_spec

JOBS = "chronoq-jobs"
OWNER = "alice"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _job(n: int) -> Job:
    return Job.model_validate(
        {
            **job_spec().model_dump(),
            "id": ids.new_job_id(),
            "owner": OWNER,
            "state": JobState.ACTIVE,
            "next_run_at": NOW + timedelta(minutes=1),
            "version": 1,
            "created_at": NOW + timedelta(seconds=n),
            "updated_at": NOW,
        }
    )


def _index_entry(job: Job) -> dict[str, Any]:
    """What the keys-only index holds of a job."""
    return codecs.dump(
        {"job_id": job.id, "owner": job.owner, "created_at": codecs.instant(job.created_at)}
    )


def _keys(jobs: list[Job]) -> list[dict[str, Any]]:
    return [codecs.dump({"job_id": j.id}) for j in jobs]


def _query(start: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "TableName": JOBS,
        "IndexName": r.JOBS_BY_OWNER_INDEX,
        "KeyConditionExpression": "#o = :o",
        "ExpressionAttributeNames": {"#o": "owner"},
        "ExpressionAttributeValues": codecs.dump({":o": OWNER}),
    }
    if start is not None:
        params["ExclusiveStartKey"] = start
    return params


def test_given_an_owner_with_many_jobs_when_listed_then_every_page_every_chunk_and_every_unprocessed_key_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a session of its own: boto3's default one is the one moto takes over in other tests)
    client = boto3.session.Session().client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    jobs = [_job(n) for n in range(130)]
    first_page, second_page = jobs[:70], jobs[70:]
    first_chunk, second_chunk = jobs[:100], jobs[100:]
    slept: list[float] = []
    monkeypatch.setattr("chronoq.aws.store.jobs.time.sleep", slept.append)

    with Stubber(client) as stub:
        page_end = _index_entry(first_page[-1])
        stub.add_response(
            "query",
            {"Items": [_index_entry(j) for j in first_page], "LastEvaluatedKey": page_end},
            _query(),
        )
        stub.add_response(
            "query", {"Items": [_index_entry(j) for j in second_page]}, _query(page_end)
        )
        # the first 100: 60 answered (in another order), 40 left unprocessed, then answered
        answered, unprocessed = first_chunk[:60], first_chunk[60:]
        stub.add_response(
            "batch_get_item",
            {
                "Responses": {JOBS: [codecs.dump(codecs.job_item(j)) for j in answered[::-1]]},
                "UnprocessedKeys": {JOBS: {"Keys": _keys(unprocessed)}},
            },
            {"RequestItems": {JOBS: {"Keys": _keys(first_chunk)}}},
        )
        stub.add_response(
            "batch_get_item",
            {"Responses": {JOBS: [codecs.dump(codecs.job_item(j)) for j in unprocessed]}},
            {"RequestItems": {JOBS: {"Keys": _keys(unprocessed)}}},
        )
        # the last 30, one of them deleted since the index was read
        stub.add_response(
            "batch_get_item",
            {"Responses": {JOBS: [codecs.dump(codecs.job_item(j)) for j in second_chunk[1:]]}},
            {"RequestItems": {JOBS: {"Keys": _keys(second_chunk)}}},
        )

        listed = DynamoStore(client, JOBS, "chronoq-runs").list_jobs(OWNER)

        stub.assert_no_pending_responses()
    assert listed == [*first_chunk, *second_chunk[1:]]
    assert len(slept) == 1  # a pause before asking for the unprocessed keys again
