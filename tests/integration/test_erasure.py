"""Erasing an owner on the embedded AWS, through the eraser function as an operator invokes
it: the owner's jobs, runs, secrets (values in SSM too) and audit entries are gone, another
owner's are not, and the erasure is recorded in the audit trail without the owner."""

from __future__ import annotations

from typing import Any

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.usecases.erasure import owner_digest

from tests.integration.conftest import Harness
from tests.support import Sink, api_event


def _items(harness: Harness, table: str) -> list[dict[str, Any]]:
    db = harness.aws.client("dynamodb")
    name = harness.aws.env[table]
    return [i for page in db.get_paginator("scan").paginate(TableName=name) for i in page["Items"]]


def _mentions(items: list[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
    return [i for i in items if owner in str(i)]


def test_given_an_owner_with_a_job_a_run_a_secret_and_a_trail_when_erased_then_nothing_of_theirs_is_left(
    harness: Harness, sink: Sink
) -> None:
    for user in ("erin", "bob"):
        event = api_event("put_secret", user=user, body={"value": f"{user}-s3cr3t"})
        assert harness.api(event)[0] == 201
        _create(harness, user, sink)
    erin_job = next(j for j in _jobs(harness, "erin"))
    run = harness.run(erin_job)
    harness.notify()
    harness.archive()  # its end archived
    bobs_before = _mentions(_items(harness, r.ENV_JOBS_TABLE), "bob")

    answer = harness.invoke(r.ERASER_FUNCTION, {"owner": "erin", "by": "ops"})

    assert answer["owner_digest"] == owner_digest("erin")
    assert answer["counts"]["jobs"] == 1
    assert answer["counts"]["run_items"] >= 1
    assert answer["counts"]["secrets"] == 1
    assert answer["counts"]["audit_entries"] >= 2  # the job's creation and its trigger
    assert answer["counts"]["archive_objects"] >= 1  # its run's day
    s3 = harness.aws.client("s3")
    bucket = harness.aws.env[r.ENV_ARCHIVE_BUCKET]
    left = s3.list_objects_v2(Bucket=bucket, Prefix=f"{r.ARCHIVE_PREFIX}/owner=erin/")
    assert left.get("KeyCount", 0) == 0
    assert _mentions(_items(harness, r.ENV_JOBS_TABLE), "erin") == []
    assert _mentions(_items(harness, r.ENV_RUNS_TABLE), "erin") == []
    erased_trail = _mentions(_items(harness, r.ENV_AUDIT_TABLE), "erin")
    assert erased_trail == []
    ssm = harness.aws.client("ssm")
    names = [
        p["Name"]
        for page in ssm.get_paginator("describe_parameters").paginate()
        for p in page["Parameters"]
    ]
    assert not [n for n in names if "/erin/" in n]
    assert [n for n in names if "/bob/" in n]
    assert _mentions(_items(harness, r.ENV_JOBS_TABLE), "bob") == bobs_before
    assert run.job_id == ids.job_id_of_run(run.id)
    # the erasure is recorded, under the owner's digest, with who asked
    records = [
        i
        for i in _items(harness, r.ENV_AUDIT_TABLE)
        if i["job_id"]["S"] == f"erasure#{owner_digest('erin')}"
    ]
    assert [(i["action"]["S"], i["by"]["S"]) for i in records] == [("erase", "ops")]
    assert [j["name"] for j in _jobs(harness, "bob")] == ["bob-job"]
    assert _jobs(harness, "erin") == []


def _jobs(harness: Harness, owner: str) -> list[dict[str, Any]]:
    status, page = harness.api(api_event("list_jobs", user=owner))
    assert status == 200, page
    return list(page["jobs"])


def _create(harness: Harness, owner: str, sink: Sink) -> dict[str, Any]:
    body = {
        "name": f"{owner}-job",
        "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
        "target": {"type": "http", "url": sink.url + "/" + owner},
        "retry": {"max_attempts": 1},
    }
    status, job = harness.api(api_event("create_at_job", user=owner, body=body))
    assert status == 201, job
    return dict(job)
