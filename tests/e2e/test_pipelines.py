"""Completion triggers end to end, on chronoq local (the same functions, on its engine):
extract -> transform -> load, where transform runs after extract and load after both extract
and transform (``on: SUCCEEDED``): load runs once, for extract's instant, after both succeed;
and not at all when transform fails.

chronoq local runs here in this process on a clock the test moves (ClockedLocal, as
test_silence), so that minutes take seconds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.harness import ClockedLocal, Jobs, start_clocked_local
from tests.support import Sink

#: Longest real wait for what the clock's passing should bring about.
PATIENCE = 120.0
#: A port nothing listens on: a target there fails at once.
REFUSED = "http://127.0.0.1:9/refused"


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedLocal]:
    with start_clocked_local(tmp_path_factory.mktemp("chronoq-pipelines")) as started:
        yield started


@pytest.fixture
def jobs(clocked: ClockedLocal, sink: Sink) -> Iterator[Jobs]:
    created = Jobs(clocked)
    try:
        yield created
    finally:
        created.delete_all()


def pipeline(
    local: ClockedLocal, jobs: Jobs, sink: Sink, prefix: str, transform_url: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """extract (once, half a minute from now), transform after it, load after both."""
    at = local.whole_second_after(30).isoformat()
    common = {"retry": {"max_attempts": 1}, "timeout_seconds": 10}
    extract = jobs.create(
        {
            "name": f"{prefix}-extract",
            "schedule": {"type": "at", "at": at},
            "target": {"type": "http", "url": f"{sink.url}/{prefix}/extract"},
            **common,
        }
    )
    transform = jobs.create(
        {
            "name": f"{prefix}-transform",
            "schedule": {"type": "after", "jobs": [f"{prefix}-extract"]},
            "target": {"type": "http", "url": transform_url},
            **common,
        }
    )
    load = jobs.create(
        {
            "name": f"{prefix}-load",
            "schedule": {
                "type": "after",
                "jobs": [f"{prefix}-extract", f"{prefix}-transform"],
                "on": "SUCCEEDED",
                "within_seconds": 600,
            },
            "target": {"type": "http", "url": f"{sink.url}/{prefix}/load"},
            **common,
        }
    )
    return extract, transform, load


def ended(local: ClockedLocal, job: dict[str, Any]) -> list[dict[str, Any]] | None:
    runs = local.runs(job["id"])
    return runs if runs and all(r["finished_at"] for r in runs) else None


def test_given_extract_transform_load_when_both_upstreams_succeed_then_load_runs_once_for_the_instant(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    extract, transform, load = pipeline(local, jobs, sink, "ok", f"{sink.url}/ok/transform")
    _, shown = local.call("GET", f"/jobs/{load['id']}")
    assert [u["name"] for u in shown["upstreams"]] == ["ok-extract", "ok-transform"]
    assert shown["next_run_at"] is None

    (load_run,) = local.run_until(lambda: ended(local, load), PATIENCE, "load ran")
    local.run_for(120)  # more time: nothing more runs

    (extract_run,) = local.runs(extract["id"])
    (transform_run,) = local.runs(transform["id"])
    assert [r["id"] for r in local.runs(load["id"])] == [load_run["id"]]
    assert [extract_run["status"], transform_run["status"], load_run["status"]] == ["SUCCEEDED"] * 3
    assert transform_run["trigger"] == load_run["trigger"] == "after"
    assert transform_run["scheduled_at"] == load_run["scheduled_at"] == extract_run["scheduled_at"]
    assert sorted(load_run["triggered_by"]) == sorted([extract_run["id"], transform_run["id"]])
    assert len(sink.hits_to("/ok/load")) == 1
    _, upstream_run = local.call("GET", f"/runs/{extract_run['id']}")
    assert sorted(upstream_run["triggered"]) == sorted([transform_run["id"], load_run["id"]])


def test_given_extract_transform_load_when_transform_fails_then_load_never_runs(
    clocked: ClockedLocal, sink: Sink, jobs: Jobs
) -> None:
    local = clocked
    extract, transform, load = pipeline(local, jobs, sink, "ko", REFUSED)

    local.run_until(lambda: ended(local, transform), PATIENCE, "transform ended")
    local.run_for(120)

    assert [r["status"] for r in local.runs(extract["id"])] == ["SUCCEEDED"]
    assert [r["status"] for r in local.runs(transform["id"])] == ["FAILED"]
    assert local.runs(load["id"]) == []
    assert sink.hits_to("/ko/load") == []
