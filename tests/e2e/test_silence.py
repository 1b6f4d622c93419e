"""Silence end to end, on chronoq local (the same functions, on its engine): a job that says it
must succeed each minute (``expect``) and does not is told SILENT once through its webhook, is
listed by GET /jobs?silent=true, and is told RECOVERED once after its next success.

chronoq local runs here in this process on a clock the test moves (ClockedLocal, as
test_over_minutes), so that minutes take seconds."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from chronoq.domain import limits as lim

from tests.e2e.harness import ClockedLocal, Jobs, start_clocked_local
from tests.support import Sink

#: Longest real wait for what the clock's passing should bring about.
PATIENCE = 120.0


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedLocal]:
    with start_clocked_local(tmp_path_factory.mktemp("chronoq-silence")) as started:
        yield started


@pytest.fixture
def jobs(clocked: ClockedLocal, sink: Sink) -> Iterator[Jobs]:
    created = Jobs(clocked)
    try:
        yield created
    finally:
        created.delete_all()


def told(sink: Sink) -> list[str]:
    return [json.loads(hit.body)["status"] for hit in sink.hits_to("/silence")]


def test_given_a_job_expecting_a_success_each_minute_when_none_comes_then_it_is_told_silent_then_recovered_once_each(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    job = jobs.create(
        {
            "name": "e2e-silence",
            "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
            "target": {"type": "http", "url": f"{sink.url}/target"},
            "expect": {"success_within_seconds": lim.MIN_SUCCESS_WITHIN_SECONDS},
            "notify": {"webhook": f"{sink.url}/silence"},
        }
    )

    local.run_until(lambda: told(sink) or None, PATIENCE, "the job told silent")
    local.run_for(3 * 60)  # minutes more of silence: nothing more is told

    assert told(sink) == ["SILENT"]
    status, silent = local.call("GET", "/jobs?silent=true")
    assert status == 200
    assert [j["id"] for j in silent["jobs"]] == [job["id"]]
    _, bobs = local.call("GET", "/jobs?silent=true", user="bob")
    assert bobs["jobs"] == []

    status, run = local.call("POST", f"/jobs/{job['id']}/trigger")
    assert status == 202, run
    local.run_until(
        lambda: told(sink)[1:] or None, PATIENCE, lambda: f"the job told recovered: {told(sink)}"
    )
    local.run_for(10)

    assert told(sink) == ["SILENT", "RECOVERED"]
    recovered = json.loads(sink.hits_to("/silence")[1].body)
    assert (recovered["job_id"], recovered["run_id"]) == (job["id"], run["id"])
    _, shown = local.call("GET", f"/jobs/{job['id']}")
    assert shown["silent_since"] is None
    assert shown["last_success_at"] == recovered["recovered_at"]
