"""The archive on moto: runs that end reach the archiver through the runs stream's second reader
(filtered as the CDK stack filters it), which writes them to the archive bucket by owner and
day; a later write of an ended run (its notification's note) is archived as a later version;
the api function lists an owner's day as presigned links that download the objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chronoq import resources as r
from chronoq.domain import archive
from chronoq.domain.runs import RunStatus
from chronoq.local.emulation.service_calls import presigned_get

from tests.integration.conftest import Harness
from tests.support import api_event


def download(url: str) -> bytes:
    """A presigned GET, as S3 (here moto's, at AWS's address) answers it."""
    status, body = presigned_get(url)
    assert status == 200, (status, body)
    return body


def day_objects(harness: Harness, user: str, day: str) -> list[dict[str, Any]]:
    status, page = harness.api(
        api_event("list_jobs", user=user, path=f"/archive?day={day}", method="GET")
    )
    assert status == 200, page
    objects: list[dict[str, Any]] = page["objects"]
    return objects


def test_given_runs_that_end_when_the_archiver_reads_the_stream_then_their_owner_lists_and_downloads_them(
    harness: Harness,
) -> None:
    ok = harness.create_job({"type": "python", "task": "chronoq.tasks:echo", "args": {"n": 1}})
    failing = harness.create_job({"type": "python", "task": "chronoq.tasks:fail", "args": {}})
    runs = [harness.run(ok), harness.run(failing)]

    harness.archive()

    day = datetime.now(UTC).date().isoformat()
    lines = [
        line
        for found in day_objects(harness, "alice", day)
        for line in archive.decode(download(found["url"]))
    ]
    latest = archive.latest(lines)
    assert {run.id: latest[run.id]["status"] for run in runs} == {
        runs[0].id: "SUCCEEDED",
        runs[1].id: "FAILED",
    }
    assert latest[runs[0].id]["output"] == runs[0].output
    assert latest[runs[1].id]["attempts"][0]["outcome"] != "SUCCEEDED"
    assert day_objects(harness, "mallory", day) == []  # (another owner's day: nothing)
    keys = [
        o["Key"]
        for o in harness.aws.client("s3").list_objects_v2(
            Bucket=harness.aws.env[r.ENV_ARCHIVE_BUCKET], Prefix=f"{r.ARCHIVE_PREFIX}/"
        )["Contents"]
    ]
    assert keys
    assert all(k.startswith(f"{r.ARCHIVE_PREFIX}/owner=alice/day={day}/") for k in keys)


def test_given_an_ended_run_written_again_when_archived_then_its_later_version_wins(
    harness: Harness,
) -> None:
    job = harness.create_job({"type": "python", "task": "chronoq.tasks:fail", "args": {}})
    run = harness.run(job)
    assert run.status is RunStatus.FAILED
    harness.archive()  # its end
    harness.notify()  # the topic told: the run's note written (a MODIFY of an ended run)

    harness.archive()

    day = run.scheduled_at.date().isoformat()
    lines = [
        line
        for found in day_objects(harness, "alice", day)
        for line in archive.decode(download(found["url"]))
        if line["id"] == run.id
    ]
    assert len(lines) == 2
    assert lines[0]["version"] != lines[1]["version"]
    latest = archive.latest(lines)[run.id]
    assert latest["version"] == max(line["version"] for line in lines)
    assert latest["notifications"]["sns"].startswith("published")


def test_given_jobs_changed_when_the_archiver_reads_the_audit_stream_then_their_owner_lists_its_entries(
    harness: Harness,
) -> None:
    job = harness.create_job({"type": "python", "task": "chronoq.tasks:echo", "args": {}})
    status, _ = harness.api(
        api_event("list_jobs", user="alice", path=f"/jobs/{job['id']}/pause", method="POST")
    )
    assert status == 200

    harness.archive_audit()

    day = datetime.now(UTC).date().isoformat()
    status, page = harness.api(
        api_event("list_jobs", user="alice", path=f"/archive?day={day}&kind=audit", method="GET")
    )
    assert status == 200, page
    lines = [line for found in page["objects"] for line in archive.decode(download(found["url"]))]
    status, shown = harness.api(
        api_event("list_jobs", user="alice", path=f"/jobs/{job['id']}/audit", method="GET")
    )
    assert status == 200, shown
    mine = [line for line in lines if line["job_id"] == job["id"]]
    assert [{k: v for k, v in line.items() if k != "version"} for line in mine] == list(
        reversed(shown["entries"])
    )
    assert [line["action"] for line in mine] == ["create", "pause"]
    assert all(
        found["name"] and archive.OBJECT_NAME.fullmatch(found["name"]) for found in page["objects"]
    )
