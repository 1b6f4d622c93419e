"""``chronoq migrate names`` on a deployment's jobs table (moto): the names of jobs stored
before names were unique are claimed for the oldest job of each, and the duplicates listed
(exit 1 while there are any); from then on the API refuses a third job of such a name."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from chronoq import resources as r
from chronoq.cli.main import cli
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobSpec, JobState
from click.testing import CliRunner

from tests.integration.conftest import Harness
from tests.support import api_event

NOW = datetime.now(UTC).replace(microsecond=0)


def stored_before(harness: Harness, name: str, owner: str = "alice", age: int = 0) -> Job:
    """A job as a version without unique names stored it: no name claimed."""
    job = Job.model_validate(
        {
            **JobSpec.model_validate(
                {
                    "name": name,
                    "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                    "target": {"type": "python", "task": "chronoq.tasks:echo"},
                }
            ).model_dump(),
            "id": ids.new_job_id(),
            "owner": owner,
            "state": JobState.ACTIVE,
            "next_run_at": NOW + timedelta(days=30),
            "version": 1,
            "created_at": NOW - timedelta(seconds=age),
            "updated_at": NOW,
        }
    )
    harness.wiring().store.put_new_job(job)
    return job


def test_given_jobs_stored_before_names_were_unique_when_migrated_then_names_are_claimed_and_duplicates_listed(
    harness: Harness,
) -> None:
    older = stored_before(harness, "nightly", age=60)
    newer = stored_before(harness, "nightly")
    stored_before(harness, "weekly")
    table = harness.aws.env[r.ENV_JOBS_TABLE]

    result = CliRunner().invoke(cli, ["migrate", "names", "--jobs-table", table, "-o", "json"])

    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report == {
        "names": 2,
        "duplicates": [{"owner": "alice", "name": "nightly", "job_ids": [older.id, newer.id]}],
    }
    body = {
        "name": "nightly",
        "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
        "target": {"type": "python", "task": "chronoq.tasks:echo"},
    }
    status, refused = harness.api(api_event("create_at_job", body=body))
    assert (status, refused["error"]["field"]) == (409, "name")
    assert older.id in refused["error"]["message"]

    # the duplicate renamed: nothing left to report
    path = f"/jobs/{newer.id}"
    assert (
        harness.api(api_event("get_job", path=path, method="PATCH", body={"name": "n2"}))[0] == 200
    )
    again = CliRunner().invoke(cli, ["migrate", "names", "--jobs-table", table])
    assert again.exit_code == 0, again.output
    assert again.stdout.strip() == "3 job names held, one job each"
