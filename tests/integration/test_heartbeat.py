"""The heartbeat on moto, through the real handlers and state machine: created by the
dispatcher as a deployment asks it to, run through the whole path, shown by GET /status; and
the metrics the functions write as they go (EMF lines: what CloudWatch reads)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronoq import heartbeat
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.metrics import Metric, service

from tests.integration.conftest import Harness
from tests.support import api_event, wait_for


def _emitted(printed: str) -> dict[str, dict[str, float]]:
    """What the functions' EMF lines said, by service: each metric's values summed."""
    found: dict[str, dict[str, float]] = {}
    for line in printed.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if not isinstance(document, dict) or "_aws" not in document:
            continue
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == r.METRICS_NAMESPACE
        assert directive["Dimensions"] == [["service"]]  # low cardinality: the function only
        sums = found.setdefault(document["service"], {})
        for metric in directive["Metrics"]:
            value = document[metric["Name"]]
            sums[metric["Name"]] = sums.get(metric["Name"], 0) + sum(
                value if isinstance(value, list) else [value]
            )
    return found


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")


def test_given_a_deployment_when_its_heartbeat_is_ensured_and_run_then_status_and_metrics_show_it(
    harness: Harness, metrics_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ensure = {heartbeat.ENSURE: "ensure"}
    assert harness.invoke(r.DISPATCHER_FUNCTION, ensure)[heartbeat.ENSURE] == "created"
    assert harness.invoke(r.DISPATCHER_FUNCTION, ensure)[heartbeat.ENSURE] == "kept"
    status, before = harness.api(api_event("list_jobs", path="/status", method="GET"))
    assert (status, before["heartbeat"]["state"]) == (200, "missing")  # no run yet

    # one run of it, sent now (its next minute is a minute away), the whole way
    run = harness.wiring().jobs.trigger_job(r.SYSTEM_OWNER, r.HEARTBEAT_JOB_ID)
    harness.deliver(run.id)
    wait_for(
        lambda: (
            harness.wiring().runs.store.get_run(r.HEARTBEAT_JOB_ID, run.id).status  # type: ignore[union-attr]
            is RunStatus.SUCCEEDED
        )
    )

    status, seen = harness.api(api_event("list_jobs", path="/status", method="GET"))
    assert status == 200
    assert seen["heartbeat"]["state"] == "ok"
    assert seen["heartbeat"]["last_run"]["id"] == run.id
    assert seen["heartbeat"]["last_success"]["lag_ms"] is not None
    emitted = _emitted(capsys.readouterr().out)
    assert emitted[service(r.WORKER_FUNCTION)][Metric.RUNS_STARTED] == 1
    runner = emitted[service(r.RUNNER_FUNCTION)]
    assert runner[Metric.RUNS_SUCCEEDED] == runner[Metric.HEARTBEAT_SUCCEEDED] == 1
    assert runner[Metric.START_LAG] == runner[Metric.HEARTBEAT_LAG] >= 0
    # nobody's job: no user lists it, and no token may act as its owner
    status, jobs = harness.api(api_event("list_jobs", path="/jobs", method="GET"))
    assert r.HEARTBEAT_JOB_ID not in {j["id"] for j in jobs["jobs"]}
    status, _ = harness.api(api_event("list_jobs", user=r.SYSTEM_OWNER, path="/jobs", method="GET"))
    assert status == 401


def test_given_a_tick_and_a_failing_run_when_handled_then_the_dispatcher_and_runner_count_them(
    harness: Harness, metrics_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    job = harness.create_job({"type": "python", "task": "chronoq.tasks:fail", "args": {}})
    harness.nothing_to_catch_up()  # (a tick of a running deployment: the coming minute only)

    harness.invoke(r.DISPATCHER_FUNCTION, {"shards": list(range(4))})
    ended = harness.run(job)

    assert ended.status is RunStatus.FAILED
    emitted: dict[str, dict[str, Any]] = _emitted(capsys.readouterr().out)
    dispatcher = emitted[service(r.DISPATCHER_FUNCTION)]
    assert set(dispatcher) == {
        Metric.RUNS_DISPATCHED,
        Metric.RUNS_MISSED,
        Metric.SHARD_MINUTES_BEHIND,
        Metric.DISPATCH_DURATION,
    }
    assert dispatcher[Metric.SHARD_MINUTES_BEHIND] == 0  # caught up
    assert emitted[service(r.RUNNER_FUNCTION)][Metric.RUNS_FAILED] == 1
    assert Metric.RUNS_SUCCEEDED not in emitted[service(r.RUNNER_FUNCTION)]
