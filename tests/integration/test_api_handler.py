"""The api function on moto, fed the sample API Gateway events from events/api."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq.domain import ids

from tests.integration.conftest import Harness
from tests.support import api_event


def create(
    harness: Harness, name: str = "create_at_job", user: str = "alice", **body: object
) -> tuple[int, dict[str, Any]]:
    event = api_event(name, user=user)
    if body:
        event["body"] = json.dumps({**json.loads(event["body"]), **body})
    return harness.api(event)


def test_given_an_at_job_when_posted_then_it_is_stored_with_its_occurrence_in_the_time_index_and_no_run_recorded(
    harness: Harness,
) -> None:
    status, job = create(harness)

    assert status == 201
    assert job["id"].startswith("job_")
    assert job["owner"] == "alice"
    assert job["state"] == "ACTIVE"
    assert job["next_run_at"] == "2030-01-01T08:00:00Z"
    assert job["priority"] == "high"
    # the time index carries the occurrence; its run is recorded when it starts
    at = datetime(2030, 1, 1, 8, tzinfo=UTC)
    store = harness.wiring().store
    occurrences = store.occurrences_in(at, ids.shard_of(job["id"], harness.wiring().shards))
    assert [(o.run_id, o.scheduled_at, o.priority.value) for o in occurrences] == [
        (ids.run_id(job["id"], at), at, "high")
    ]
    status, runs = harness.api(api_event("list_runs", path=f"/jobs/{job['id']}/runs"))
    assert (status, runs["runs"]) == (200, [])


def test_given_a_cron_job_when_posted_then_its_next_run_is_the_next_fire_time(
    harness: Harness,
) -> None:
    status, job = create(harness, "create_cron_job")

    assert status == 201
    next_run = datetime.fromisoformat(job["next_run_at"])
    now = datetime.now(UTC)
    assert now < next_run <= now + timedelta(minutes=5)
    assert next_run.minute % 5 == 0
    assert next_run.second == 0


def test_given_stored_jobs_when_listed_then_only_the_callers_jobs_are_returned(
    harness: Harness,
) -> None:
    _, mine = create(harness)
    create(harness, "create_cron_job", user="bob")

    status, listing = harness.api(api_event("list_jobs"))

    assert status == 200
    assert [j["id"] for j in listing["jobs"]] == [mine["id"]]


def test_given_alices_job_when_bob_asks_for_it_or_its_runs_then_he_gets_404(
    harness: Harness,
) -> None:
    _, job = create(harness)
    status, run = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )  # a manual run is recorded at once
    assert (status, run["status"]) == (202, "SCHEDULED")

    assert harness.api(api_event("get_job", user="alice", path=f"/jobs/{job['id']}"))[0] == 200
    assert harness.api(api_event("get_run", user="alice", path=f"/runs/{run['id']}"))[0] == 200
    _, runs = harness.api(api_event("list_runs", user="alice", path=f"/jobs/{job['id']}/runs"))
    assert [r["id"] for r in runs["runs"]] == [run["id"]]
    assert harness.api(api_event("get_job", user="bob", path=f"/jobs/{job['id']}"))[0] == 404
    assert harness.api(api_event("list_runs", user="bob", path=f"/jobs/{job['id']}/runs"))[0] == 404
    assert harness.api(api_event("get_run", user="bob", path=f"/runs/{run['id']}"))[0] == 404


def test_given_unknown_ids_when_requested_then_404_with_a_message(harness: Harness) -> None:
    status, body = harness.api(api_event("get_job"))
    assert (status, body["message"]) == (404, "job job_0123456789abcdef not found")
    assert harness.api(api_event("get_run", path="/runs/not-a-run-id"))[0] == 404


def test_given_an_invalid_job_when_posted_then_422_names_every_bad_field_and_nothing_is_stored(
    harness: Harness,
) -> None:
    status, body = harness.api(api_event("create_invalid_job"))

    assert status == 422
    fields = {e["field"] for e in body["errors"]}
    assert fields == {"schedule.cron.expression", "schedule.cron.timezone"}
    assert "schedule.cron.expression" in body["message"]
    assert harness.api(api_event("list_jobs"))[1] == {"jobs": []}


def test_given_an_at_in_the_past_when_posted_then_422_names_schedule_at(harness: Harness) -> None:
    status, body = create(harness, schedule={"type": "at", "at": "2020-01-01T00:00:00Z"})

    assert status == 422
    assert body["errors"] == [{"field": "schedule.at", "message": "must be in the future"}]


def test_given_a_body_that_is_not_json_when_posted_then_4xx_with_a_message(
    harness: Harness,
) -> None:
    event = api_event("create_at_job")
    event["body"] = "{not json"

    status, body = harness.api(event)

    assert 400 <= status < 500
    assert body["message"]


def test_given_an_owner_in_the_body_when_posted_then_it_is_refused(harness: Harness) -> None:
    status, body = create(harness, owner="mallory")

    assert status == 422
    assert [e["field"] for e in body["errors"]] == ["owner"]


def test_given_no_jwt_claims_when_calling_then_401(harness: Harness) -> None:
    event = api_event("list_jobs")
    event["requestContext"]["authorizer"] = {}

    assert harness.api(event) == (401, {"message": "Unauthorized"})


def test_given_a_bad_limit_when_listing_runs_then_422_names_limit(harness: Harness) -> None:
    _, job = create(harness)

    status, body = harness.api(api_event("list_runs", path=f"/jobs/{job['id']}/runs?limit=0"))

    assert status == 422
    assert [e["field"] for e in body["errors"]] == ["limit"]


def test_given_a_rate_job_when_posted_then_it_starts_one_interval_from_now(
    harness: Harness,
) -> None:
    status, job = create(
        harness, "create_cron_job", schedule={"type": "rate", "every": "15 minutes"}
    )

    assert status == 201
    start = datetime.fromisoformat(job["schedule"]["start_at"])
    assert job["next_run_at"] == job["schedule"]["start_at"]
    assert timedelta(minutes=14) < start - datetime.now(UTC) <= timedelta(minutes=15, seconds=1)


def test_given_a_schedule_that_has_ended_when_posted_then_422_names_end_at(
    harness: Harness,
) -> None:
    status, body = create(
        harness,
        "create_cron_job",
        schedule={"type": "cron", "expression": "* * * * *", "end_at": "2021-01-01T00:00:00Z"},
    )

    assert status == 422
    assert body["errors"][0]["field"] == "schedule.end_at"


def test_given_a_schedule_when_previewed_then_the_next_fire_times_are_listed_and_nothing_is_stored(
    harness: Harness,
) -> None:
    event = api_event(
        "create_at_job",
        body={
            "schedule": {"type": "cron", "expression": "0 9 * * 1", "timezone": "America/New_York"},
            "count": 3,
        },
        path="/schedules/preview",
    )

    status, body = harness.api(event)

    assert status == 200
    assert len(body["fire_times"]) == 3
    for fire in body["fire_times"]:
        local = datetime.fromisoformat(fire["local"])
        assert (local.weekday(), local.hour, local.minute) == (0, 9, 0)
        assert datetime.fromisoformat(fire["utc"]) == local
    assert harness.api(api_event("list_jobs"))[1] == {"jobs": []}


def test_given_too_many_fire_times_when_previewed_then_422_names_count(harness: Harness) -> None:
    event = api_event(
        "create_at_job",
        body={"schedule": {"type": "rate", "every": "1 hour"}, "count": 101},
        path="/schedules/preview",
    )

    status, body = harness.api(event)

    assert status == 422
    assert [e["field"] for e in body["errors"]] == ["count"]
