"""``chronoq migrate jobs`` on a deployment's jobs table (moto): the jobs stored before a rule
was made stricter that today's rules refuse are listed with the fields to change (exit 1
while any remain); they still read back and run, and a change must pass today's rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq import resources as r
from chronoq.cli.main import cli
from chronoq.domain import ids
from chronoq.domain.base import STORED
from chronoq.domain.jobs import Job, JobSpec, JobState
from click.testing import CliRunner

from tests.integration.conftest import Harness
from tests.support import api_event

NOW = datetime.now(UTC).replace(microsecond=0)


def stored_before(harness: Harness, owner: str = "alice", **spec: Any) -> Job:
    """A job as an earlier version took and stored it."""
    job = Job.model_validate(
        {
            **JobSpec.model_validate(
                {
                    "name": "nightly",
                    "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                    "target": {"type": "python", "task": "chronoq.tasks:echo"},
                    **spec,
                },
                context=STORED,
            ).model_dump(),
            "id": ids.new_job_id(),
            "owner": owner,
            "state": JobState.ACTIVE,
            "next_run_at": NOW + timedelta(days=30),
            "version": 1,
            "created_at": NOW,
            "updated_at": NOW,
        },
        context=STORED,
    )
    harness.wiring().store.put_new_job(job)
    return job


def test_given_jobs_today_s_rules_refuse_when_migrated_then_each_is_listed_with_its_fields(
    harness: Harness,
) -> None:
    labelled = stored_before(harness, labels={"team\n": "data"})
    blank = stored_before(harness, owner="bob", name="\u3164")
    stored_before(harness, owner="carol", name="fine", labels={"team": "data"})
    table = harness.aws.env[r.ENV_JOBS_TABLE]

    result = CliRunner().invoke(cli, ["migrate", "jobs", "--jobs-table", table, "-o", "json"])

    assert result.exit_code == 1, result.output
    listed = {n["job_id"]: [p["field"] for p in n["problems"]] for n in json.loads(result.stdout)}
    assert listed == {labelled.id: ["labels.team\n"], blank.id: ["name"]}
    # it still reads back; a change must pass today's rules
    status, body = harness.api(api_event("get_job", path=f"/jobs/{labelled.id}", user="alice"))
    assert (status, body["labels"]) == (200, {"team\n": "data"})
    status, body = harness.api(
        api_event(
            "get_job",
            path=f"/jobs/{labelled.id}",
            method="PATCH",
            user="alice",
            body={"timeout_seconds": 60},
        )
    )
    assert (status, body["error"]["field"]) == (422, "labels.team\n")
