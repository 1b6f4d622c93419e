"""Labels, names unique per owner, limited runs and jobs deleted on completion, and the PATCH
fields that take null: through the api function (API Gateway events) on moto, and for
on_complete through the worker, the state machine and the notifier too."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids, inflight
from chronoq.domain import limits as lim
from chronoq.domain.jobs import JobState
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.fakes import FakeClock

from tests.builders import unique_name, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, wait_for

NEVER = {"type": "cron", "expression": "0 0 1 1 *"}
EVERY_5 = {"type": "cron", "expression": "*/5 * * * *"}


def create(harness: Harness, user: str = "alice", **body: Any) -> tuple[int, Any]:
    job = {
        "name": unique_name(),
        "schedule": NEVER,
        "target": {"type": "python", "task": "chronoq.tasks:echo"},
        **body,
    }
    return harness.api(api_event("create_at_job", user=user, body=job))


def listed(harness: Harness, query: str, labels: list[str]) -> tuple[int, Any]:
    """GET /jobs with ``label`` given once per selector, as API Gateway hands it on: the
    values joined by commas."""
    event = api_event("list_jobs", path=f"/jobs?{query}" if query else "/jobs")
    parameters = dict(event["queryStringParameters"] or {})
    if labels:
        parameters["label"] = ",".join(labels)
        event["rawQueryString"] = "&".join(
            [*([query] if query else []), *(f"label={s}" for s in labels)]
        )
    event["queryStringParameters"] = parameters or None
    return harness.api(event)


# --- labels ------------------------------------------------------------------------------------


def test_given_labelled_jobs_when_listed_with_label_parameters_then_only_those_with_every_label(
    harness: Harness,
) -> None:
    _, prod = create(harness, labels={"team": "data", "env": "prod"})
    _, dev = create(harness, labels={"team": "data", "env": "dev"})
    create(harness, labels={"team": "web", "env": "prod"})
    create(harness, user="bob", labels={"team": "data", "env": "prod"})

    status, both = listed(harness, "", ["team=data", "env=prod"])
    assert (status, [j["id"] for j in both["jobs"]]) == (200, [prod["id"]])
    _, data = listed(harness, "limit=10", ["team=data"])
    assert {j["id"] for j in data["jobs"]} == {prod["id"], dev["id"]}
    assert prod["labels"] == {"team": "data", "env": "prod"}


@pytest.mark.parametrize("selector", ["team", "=data", "bad key=x", "team=a b"])
def test_given_a_label_parameter_that_is_no_selector_when_listed_then_422_names_label(
    harness: Harness, selector: str
) -> None:
    status, body = listed(harness, "", [selector])

    assert (status, body["error"]["field"]) == (422, "label")


def test_given_labels_kubernetes_refuses_when_posted_then_422_names_the_label_and_nothing_is_stored(
    harness: Harness,
) -> None:
    status, body = create(harness, labels={"has space": "x"})
    assert (status, body["error"]["field"]) == (422, "labels.has space")
    status, body = create(harness, labels={f"k{i}": "v" for i in range(lim.MAX_LABELS + 1)})
    assert (status, body["error"]["field"]) == (422, "labels")
    assert harness.api(api_event("list_jobs"))[1] == {"jobs": []}


# --- names -------------------------------------------------------------------------------------


def test_given_a_job_when_another_is_posted_or_renamed_with_its_name_then_409_names_the_field(
    harness: Harness,
) -> None:
    _, first = create(harness, name="nightly")
    _, second = create(harness, name="weekly")

    status, body = create(harness, name="nightly")
    assert (status, body["error"]["code"], body["error"]["field"]) == (409, "conflict", "name")
    assert first["id"] in body["error"]["message"]
    path = f"/jobs/{second['id']}"
    status, body = harness.api(
        api_event("get_job", path=path, method="PATCH", body={"name": "nightly"})
    )
    assert (status, body["error"]["field"]) == (409, "name")
    assert create(harness, user="bob", name="nightly")[0] == 201  # another owner's
    assert harness.api(api_event("get_job", path=f"/jobs/{first['id']}", method="DELETE"))[0] == 204
    assert create(harness, name="nightly")[0] == 201  # free again


# --- limited runs ------------------------------------------------------------------------------


def test_given_max_runs_when_posted_then_its_last_run_is_answered_and_the_job_completes_after_it(
    harness: Harness,
) -> None:
    status, job = create(harness, schedule=EVERY_5, max_runs=2)

    assert status == 201
    first = datetime.fromisoformat(job["next_run_at"])
    final = datetime.fromisoformat(job["final_run_at"])
    assert final - first == timedelta(minutes=5)
    assert "runs_before" not in job  # (bookkeeping)
    later = harness.wiring(FakeClock(final + timedelta(seconds=1)))
    done = later.jobs.get_job("alice", job["id"])
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert create(harness, max_runs=lim.MAX_RUNS + 1)[1]["error"]["field"] == "max_runs"


def test_given_each_patch_field_when_sent_null_then_the_server_takes_it_exactly_where_the_document_says(
    harness: Harness,
) -> None:
    from tests.api.document import generated

    nullable = {
        name
        for name, schema in generated()["components"]["schemas"]["JobPatch"]["properties"].items()
        if {"type": "null"} in schema.get("anyOf", [])
    }
    assert nullable == {"notify", "output_location", "max_runs", "flow", "expect", "version"}
    _, job = create(
        harness,
        max_runs=3,
        notify={"webhook": "https://example.com/hook"},
        flow={"key": "partner-api", "max_running": 2},
        expect={"success_within_seconds": 3600},
    )
    path = f"/jobs/{job['id']}"

    for field in (
        "name",
        "schedule",
        "target",
        "priority",
        "timeout_seconds",
        "concurrency",
        "start_deadline_seconds",
        "retry",
        "labels",
        "on_complete",
        *sorted(nullable),
    ):
        status, body = harness.api(
            api_event("get_job", path=path, method="PATCH", body={field: None})
        )
        if field in nullable:
            assert status == 200, (field, body)
        else:
            assert (status, body["error"]["field"]) == (422, field), body
    _, changed = harness.api(api_event("get_job", path=path))
    assert (changed["max_runs"], changed["notify"], changed["final_run_at"]) == (None, None, None)
    assert changed["flow"] is None
    assert changed["expect"] is None


def test_given_a_one_time_job_deleted_on_completion_when_its_run_ends_then_the_notifier_deletes_it(
    harness: Harness, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=2)).replace(microsecond=0)
    status, job = create(
        harness,
        schedule={"type": "at", "at": at.isoformat()},
        target={"type": "http", "url": sink.url + "/once"},
        on_complete="delete",
    )
    assert status == 201
    service = harness.wiring()
    run_id = ids.run_id(job["id"], at)
    message = RunMessage(job_id=job["id"], run_id=run_id, scheduled_at=at, queued_at=at)

    harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    def succeeded() -> bool:
        kept = service.store.get_run(job["id"], run_id)
        return kept is not None and kept.status is RunStatus.SUCCEEDED

    wait_for(succeeded)
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[0] == 200
    harness.notify()  # the runs stream, as its event source mapping filters it

    assert harness.heard == [run_id]
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[0] == 404
    status, page = harness.api(api_event("list_runs", path=f"/runs?job_id={job['id']}"))
    assert [(r["id"], r["status"]) for r in page["runs"]] == [(run_id, "SUCCEEDED")]
    assert len(sink.hits_to("/once")) == 1
    # its name and its place in the quota are free
    assert create(harness, name=job["name"])[0] == 201
    count = harness.aws.client("dynamodb").get_item(
        TableName=harness.aws.env[r.ENV_JOBS_TABLE], Key={"job_id": {"S": "count#alice"}}
    )["Item"]["jobs"]
    assert json.loads(count["N"]) == 1


def test_given_a_job_kept_on_completion_when_its_run_ends_then_the_notifier_only_gives_its_count_back(
    harness: Harness, sink: Sink
) -> None:
    at = (harness.now() + timedelta(seconds=2)).replace(microsecond=0)
    _, job = create(
        harness,
        schedule={"type": "at", "at": at.isoformat()},
        target={"type": "http", "url": sink.url + "/kept"},
    )
    service = harness.wiring()
    run_id = ids.run_id(job["id"], at)
    message = RunMessage(job_id=job["id"], run_id=run_id, scheduled_at=at, queued_at=at)

    harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    def succeeded() -> bool:
        kept = service.store.get_run(job["id"], run_id)
        return kept is not None and kept.status is RunStatus.SUCCEEDED

    wait_for(succeeded)
    harness.notify()

    # it hears of the end (the run's slots name its owner's count), gives the count back,
    # and neither deletes the job nor tells anyone
    assert harness.heard == [run_id]
    assert service.store.get_in_flight(inflight.item_key("alice")).total == 0
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))[0] == 200  # kept
    assert len(sink.hits) == 1
