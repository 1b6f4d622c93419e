"""The api function on moto, fed the sample API Gateway events from events/api.

Why this module is long: it is the api function end to end on moto, route by route (pages,
idempotency keys, hostile and careless callers, the job quota, the SSRF guard), over the one set
of sample events and the helpers that send them."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import ids

from tests.builders import unique_name
from tests.integration.conftest import Harness, SharedDeployment, shared_harness
from tests.support import api_event


@pytest.fixture
def harness(shared_deployment: SharedDeployment) -> Iterator[Harness]:
    """(these tests only call the api: one deployment, as new for each)"""
    yield from shared_harness(shared_deployment)


def create(
    harness: Harness, name: str = "create_at_job", user: str = "alice", **body: object
) -> tuple[int, dict[str, Any]]:
    event = api_event(name, user=user)
    # (job names are unique per owner: each job a name of its own unless ``body`` gives one)
    event["body"] = json.dumps({**json.loads(event["body"]), "name": unique_name(), **body})
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
    now = harness.now()
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
    assert (status, body) == (
        404,
        {
            "error": {
                "code": "not_found",
                "message": "job job_0123456789abcdef not found",
                "field": None,
            }
        },
    )
    assert harness.api(api_event("get_run", path="/runs/not-a-run-id"))[0] == 404


def test_given_an_invalid_job_when_posted_then_422_names_every_bad_field_and_nothing_is_stored(
    harness: Harness,
) -> None:
    status, body = harness.api(api_event("create_invalid_job"))

    assert status == 422
    assert body["error"]["code"] == "invalid_field"
    assert body["error"]["field"] == "schedule.expression"
    assert "schedule.timezone" in body["error"]["message"]
    assert "Value error" not in body["error"]["message"]
    assert harness.api(api_event("list_jobs"))[1] == {"jobs": []}


def test_given_an_at_in_the_past_when_posted_then_422_names_schedule_at(harness: Harness) -> None:
    status, body = create(harness, schedule={"type": "at", "at": "2020-01-01T00:00:00Z"})

    assert status == 422
    assert body == {
        "error": {
            "code": "invalid_field",
            "message": "must be in the future",
            "field": "schedule.at",
        }
    }


def test_given_a_body_that_is_not_json_when_posted_then_4xx_with_a_message(
    harness: Harness,
) -> None:
    event = api_event("create_at_job")
    event["body"] = "{not json"

    status, body = harness.api(event)

    assert status == 400
    assert body["error"]["code"] == "malformed_json"
    assert body["error"]["field"] is None


def test_given_an_owner_in_the_body_when_posted_then_it_is_refused(harness: Harness) -> None:
    status, body = create(harness, owner="mallory")

    assert status == 422
    assert body["error"]["field"] == "owner"


def test_given_no_jwt_claims_when_calling_then_401(harness: Harness) -> None:
    event = api_event("list_jobs")
    event["requestContext"]["authorizer"] = {}

    assert harness.api(event) == (
        401,
        {"error": {"code": "unauthorized", "message": "Unauthorized", "field": None}},
    )


def test_given_a_bad_limit_when_listing_runs_then_422_names_limit(harness: Harness) -> None:
    _, job = create(harness)

    status, body = harness.api(api_event("list_runs", path=f"/jobs/{job['id']}/runs?limit=0"))

    assert status == 422
    assert body["error"]["field"] == "limit"


def test_given_a_rate_job_when_posted_then_it_starts_one_interval_from_now(
    harness: Harness,
) -> None:
    status, job = create(
        harness, "create_cron_job", schedule={"type": "rate", "every": "15 minutes"}
    )

    assert status == 201
    start = datetime.fromisoformat(job["schedule"]["start_at"])
    assert job["next_run_at"] == job["schedule"]["start_at"]
    assert timedelta(minutes=14) < start - harness.now() <= timedelta(minutes=15, seconds=1)


def test_given_a_schedule_that_has_ended_when_posted_then_422_names_end_at(
    harness: Harness,
) -> None:
    status, body = create(
        harness,
        "create_cron_job",
        schedule={"type": "cron", "expression": "* * * * *", "end_at": "2021-01-01T00:00:00Z"},
    )

    assert status == 422
    assert body["error"]["field"] == "schedule.end_at"


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
    assert body["error"]["field"] == "count"


# --- pages ------------------------------------------------------------------------------------


def listed(harness: Harness, path: str, user: str = "alice") -> tuple[int, dict[str, Any]]:
    return harness.api(api_event("list_jobs", user=user, path=path))


def every_page(harness: Harness, path: str, key: str, user: str = "alice") -> list[list[str]]:
    """The ids on every page of a listing, following ``next_token`` to the end."""
    status, page = listed(harness, path, user)
    pages = [[item["id"] for item in page[key]]]
    while "next_token" in page:
        status, page = listed(harness, f"{path}&next_token={page['next_token']}", user)
        assert status == 200
        pages.append([item["id"] for item in page[key]])
    return pages


def test_given_five_jobs_when_listed_two_by_two_then_three_pages_hold_each_once_in_order(
    harness: Harness,
) -> None:
    ids_ = [create(harness)[1]["id"] for _ in range(5)]
    create(harness, user="bob")

    assert every_page(harness, "/jobs?limit=2", "jobs") == [ids_[0:2], ids_[2:4], ids_[4:]]
    assert every_page(harness, "/jobs?limit=100", "jobs") == [ids_]


def test_given_paused_jobs_when_listed_by_state_then_only_those(harness: Harness) -> None:
    ids_ = [create(harness)[1]["id"] for _ in range(3)]
    harness.api(api_event("get_job", path=f"/jobs/{ids_[1]}/pause", method="POST"))

    assert every_page(harness, "/jobs?state=PAUSED&limit=1", "jobs") == [[ids_[1]]]
    assert every_page(harness, "/jobs?state=ACTIVE&limit=1", "jobs") == [[ids_[0]], [ids_[2]]]
    status, body = listed(harness, "/jobs?state=SLEEPING")
    assert (status, body["error"]["field"]) == (422, "state")


def test_given_alices_next_token_when_bob_or_a_forger_or_another_list_uses_it_then_4xx_naming_next_token(
    harness: Harness,
) -> None:
    job = create(harness)[1]
    for _ in range(2):
        create(harness)
    for _ in range(3):
        create(harness, user="bob")
    for _ in range(2):
        harness.api(api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST"))
    _, first = listed(harness, "/jobs?limit=1")
    token = first["next_token"]
    _, runs_page = listed(harness, f"/jobs/{job['id']}/runs?limit=1")
    runs_token = runs_page["next_token"]
    assert job["id"] not in token  # opaque
    assert "alice" not in token
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]

    for user, path in [
        ("bob", f"/jobs?limit=1&next_token={token}"),  # alice's token, bob's call
        ("alice", f"/jobs?limit=1&next_token={flipped}"),  # altered
        ("alice", "/jobs?next_token=eyJvd25lciI6ImJvYiJ9"),  # made up
        ("alice", f"/jobs?limit=1&state=ACTIVE&next_token={token}"),  # other filters
        ("alice", f"/jobs?next_token={runs_token}"),  # another list's
        ("alice", f"/jobs/{job['id']}/runs?next_token={token}"),
        ("alice", f"/jobs/{job['id']}/runs?status=FAILED&next_token={runs_token}"),
    ]:
        status, body = listed(harness, path, user)
        assert status in (400, 422), (user, path)
        assert "next_token" in json.dumps(body), (user, path)
    # the token still serves its owner, for its list
    status, second = listed(harness, f"/jobs?limit=1&next_token={token}")
    assert status == 200
    assert second["jobs"][0]["owner"] == "alice"


def test_given_runs_when_listed_by_page_status_and_time_then_newest_first_each_once(
    harness: Harness,
) -> None:
    job = create(harness)[1]
    runs = [
        harness.api(api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST"))[1]
        for _ in range(3)
    ]
    newest_first = sorted((r["id"] for r in runs), reverse=True)
    base = f"/jobs/{job['id']}/runs?limit=2"

    assert every_page(harness, base, "runs") == [newest_first[:2], newest_first[2:]]
    assert [
        i for p in every_page(harness, f"{base}&status=scheduled,failed", "runs") for i in p
    ] == (newest_first)
    assert every_page(harness, f"{base}&status=SUCCEEDED", "runs") == [[]]
    assert every_page(harness, f"{base}&until=2000-01-01T00:00:00Z", "runs") == [[]]
    since = min(r["scheduled_at"] for r in runs)
    assert len(every_page(harness, f"{base}&since={since}", "runs")[0]) == 2
    status, body = listed(harness, f"{base}&status=DONE")
    assert (status, body["error"]["field"]) == (422, "status")
    status, body = listed(harness, f"{base}&since=2030-01-01T00:00:00")  # no time zone
    assert (status, body["error"]["field"]) == (422, "since")
    for number in ("1893456000", "1893456000.5"):  # (ISO 8601 only, not a Unix time)
        status, body = listed(harness, f"{base}&until={number}")
        assert (status, body["error"]["field"]) == (422, "until")


def test_given_a_deleted_job_when_its_runs_are_listed_by_job_id_then_its_owner_sees_them_and_bob_none(
    harness: Harness,
) -> None:
    job = create(harness)[1]
    _, run = harness.api(api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST"))
    assert harness.api(api_event("get_job", path=f"/jobs/{job['id']}", method="DELETE"))[0] == 204

    assert listed(harness, f"/jobs/{job['id']}/runs")[0] == 404
    status, page = listed(harness, f"/runs?job_id={job['id']}")
    assert (status, [r["id"] for r in page["runs"]]) == (200, [run["id"]])
    assert listed(harness, f"/runs?job_id={job['id']}", user="bob") == (200, {"runs": []})
    assert listed(harness, "/runs?job_id=job_0123456789abcdef") == (200, {"runs": []})
    assert listed(harness, "/runs")[0] == 422


# --- idempotency keys -------------------------------------------------------------------------


def posted(
    harness: Harness, key: str | None, user: str = "alice", path: str | None = None, **body: object
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    event = api_event("create_at_job", user=user, path=path)
    if body:
        event["body"] = json.dumps({**json.loads(event["body"]), **body})
    if path is not None:
        event["body"] = None
    if key is not None:
        event["headers"]["Idempotency-Key"] = key
    answer = harness.invoke(r.API_FUNCTION, event)
    return answer["statusCode"], json.loads(answer["body"]), answer.get("headers") or {}


def test_given_a_create_repeated_with_its_idempotency_key_then_one_job_and_the_same_answer(
    harness: Harness,
) -> None:
    status, first, headers = posted(harness, "create-1")
    again, second, replay_headers = posted(harness, "create-1")

    assert (status, again) == (201, 201)
    assert second == first
    assert "Idempotent-Replayed" not in headers
    assert replay_headers.get("Idempotent-Replayed") == "true"
    assert [j["id"] for j in listed(harness, "/jobs")[1]["jobs"]] == [first["id"]]
    # the key is alice's own: bob's same key creates bob's job
    status, bobs, _ = posted(harness, "create-1", user="bob")
    assert (status, bobs["owner"]) == (201, "bob")
    assert bobs["id"] != first["id"]


def test_given_an_idempotency_key_when_reused_with_another_body_then_409_and_nothing_created(
    harness: Harness,
) -> None:
    posted(harness, "create-2")

    status, body, _ = posted(harness, "create-2", name="another")

    assert status == 409
    assert "Idempotency-Key" in body["error"]["message"]
    assert "another request" in body["error"]["message"]
    assert len(listed(harness, "/jobs")[1]["jobs"]) == 1


def test_given_a_trigger_repeated_with_its_idempotency_key_then_one_run(harness: Harness) -> None:
    job = create(harness)[1]
    path = f"/jobs/{job['id']}/trigger"

    status, first, _ = posted(harness, "run-1", path=path)
    again, second, _ = posted(harness, "run-1", path=path)
    other, _, _ = posted(harness, "run-2", path=path)
    reused, conflict, _ = posted(harness, "run-1")  # the same key on another route

    assert (status, again, other, reused) == (202, 202, 202, 409)
    assert second == first
    assert "Idempotency-Key" in conflict["error"]["message"]
    assert len(listed(harness, f"/jobs/{job['id']}/runs")[1]["runs"]) == 2


def test_given_a_failing_request_with_an_idempotency_key_when_retried_fixed_then_it_runs(
    harness: Harness,
) -> None:
    status, _, _ = posted(
        harness, "create-3", schedule={"type": "at", "at": "2020-01-01T00:00:00Z"}
    )
    assert status == 422
    # (a request refused before it was served keeps nothing: the key is free)
    status, body, _ = posted(harness, "create-3")
    assert status == 201
    status, body, _ = posted(harness, "x" * 300)
    assert (status, body["error"]["field"]) == (422, "Idempotency-Key")


# --- A hostile or careless caller: every probe answered 4xx in the one error shape ---------


def raw(
    harness: Harness,
    body: str,
    *,
    path: str = "/jobs",
    method: str = "POST",
    content_type: str = "application/json",
    b64: bool = False,
) -> tuple[int, dict[str, Any]]:
    event = api_event("create_at_job", path=path, method=method)
    event["body"] = body
    event["headers"]["content-type"] = content_type
    event["isBase64Encoded"] = b64
    status, answer = harness.api(event)
    return status, answer


def job_body(**changes: Any) -> dict[str, Any]:
    return {
        "name": "probe",
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": {"type": "http", "url": "https://example.com/hook"},
        **changes,
    }


def assert_error(answer: dict[str, Any], code: str, field: str | None) -> None:
    assert set(answer) == {"error"}
    assert set(answer["error"]) == {"code", "message", "field"}
    assert (answer["error"]["code"], answer["error"]["field"]) == (code, field), answer
    assert "Value error" not in answer["error"]["message"]
    assert "Traceback" not in answer["error"]["message"]


def nothing_stored(harness: Harness) -> bool:
    return bool(harness.api(api_event("list_jobs"))[1] == {"jobs": []})


def test_given_an_unknown_route_when_called_then_404_in_the_error_shape(harness: Harness) -> None:
    status, body = harness.api(api_event("list_jobs", path="/nowhere"))

    assert status == 404
    assert_error(body, "not_found", None)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("DELETE", "/jobs", "GET, POST"), ("PUT", "/jobs/job_1", "DELETE, GET, PATCH")],
)
def test_given_a_wrong_method_when_called_then_405_in_the_error_shape_with_allow(
    harness: Harness, method: str, path: str, allowed: str
) -> None:
    answer = harness.invoke(r.API_FUNCTION, api_event("list_jobs", path=path, method=method))

    assert answer["statusCode"] == 405
    assert answer["headers"]["Allow"] == allowed
    assert_error(json.loads(answer["body"]), "method_not_allowed", None)


@pytest.mark.parametrize(
    ("content_type", "body", "b64"),
    [
        ("multipart/form-data", base64.b64encode(b"--x\r\nabc\r\n--x--").decode(), True),
        ("text/plain", '{"name": "x"}', False),
    ],
)
def test_given_a_body_that_is_not_json_by_its_type_when_posted_then_415_and_nothing_stored(
    harness: Harness, content_type: str, body: str, b64: bool
) -> None:
    status, answer = raw(harness, body, content_type=content_type, b64=b64)

    assert status == 415
    assert_error(answer, "unsupported_media_type", None)
    assert nothing_stored(harness)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"args": {"x": NaN}}', "target.args.x"),
        ('{"args": {"x": 1e400}}', "target.args.x"),
        ('{"args": {"x": [-Infinity]}}', "target.args.x.0"),
        ('{"args": {"x": ' + "7" * 4400 + "}}", "target.args.x"),
    ],
)
def test_given_a_number_json_cannot_keep_when_posted_then_422_names_it_and_nothing_stored(
    harness: Harness, text: str, field: str
) -> None:
    body = json.dumps(
        job_body(target={"type": "python", "task": "chronoq.tasks:echo", "args": "@"})
    ).replace('"@"', text.removeprefix('{"args": ').removesuffix("}"))

    status, answer = raw(harness, body)

    assert status == 422
    assert_error(answer, "invalid_field", field)
    assert nothing_stored(harness)


def test_given_json_nested_3000_deep_when_posted_then_422_not_500(harness: Harness) -> None:
    status, answer = raw(harness, '{"name": ' + "[" * 3000 + "]" * 3000 + "}")

    assert status == 422
    assert answer["error"]["code"] == "invalid_request"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"timeout_seconds": True}, "timeout_seconds"),
        ({"retry": {"jitter": "yes"}}, "retry.jitter"),
        ({"retry": {"max_attempts": False}}, "retry.max_attempts"),
        ({"name": "n" * 201}, "name"),
        ({"schedule": {"type": "cron", "expression": "0 0 30 2 *"}}, "schedule.expression"),
        ({"schedule": {"type": "cron", "expression": "*/1000000 * * * *"}}, "schedule.expression"),
        ({"schedule": {"type": "cron", "expression": "* " * 300 + "*"}}, "schedule.expression"),
        ({"schedule": {"type": "at", "at": "9999-12-31T23:59:59.5Z"}}, "schedule.at"),
        ({"schedule": {"type": "at", "at": "0001-01-01T00:00:00+01:00"}}, "schedule.at"),
        (
            {"schedule": {"type": "rate", "every": "1 day", "start_at": "9999-12-01T00:00:00Z"}},
            "schedule.start_at",
        ),
        (
            {
                "target": {
                    "type": "python",
                    "task": "chronoq.tasks:echo",
                    "args": {"x": "y" * 70_000},
                }
            },
            "target.args",
        ),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://e.com/",
                    "headers": {"X-Foo": "a\r\nb: c"},
                }
            },
            "target.headers.X-Foo",
        ),
        (
            {"target": {"type": "http", "url": "https://e.com/", "headers": {"Host": "internal"}}},
            "target.headers.Host",
        ),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://e.com/",
                    "headers": {"Content-Length": "0"},
                }
            },
            "target.headers.Content-Length",
        ),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://e.com/",
                    "headers": {"Transfer-Encoding": "x"},
                }
            },
            "target.headers.Transfer-Encoding",
        ),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://e.com/",
                    "headers": {"Connection": "close"},
                }
            },
            "target.headers.Connection",
        ),
        (
            {
                "target": {
                    "type": "http",
                    "url": "https://e.com/",
                    "headers": {"X-Chronoq-Run-Id": "x"},
                }
            },
            "target.headers.X-Chronoq-Run-Id",
        ),
        (
            {"target": {"type": "http", "url": "https://e.com/", "headers": {"Bad Name": "x"}}},
            "target.headers.Bad Name",
        ),
        ({"target": {"type": "http", "url": "https://user:pass@e.com/"}}, "target.url"),
        ({"target": {"type": "http", "url": "file:///etc/passwd"}}, "target.url"),
        ({"notify": {"webhook": "http://u:p@hooks.example.com/"}}, "notify.webhook"),
    ],
)
def test_given_a_probe_when_a_job_is_posted_then_422_names_the_field_and_nothing_is_stored(
    harness: Harness, change: dict[str, Any], field: str
) -> None:
    status, answer = harness.api(api_event("create_at_job", body=job_body(**change)))

    assert status == 422
    assert_error(answer, "invalid_field", field)
    assert nothing_stored(harness)


def test_given_a_body_over_256_kb_when_posted_then_413_and_nothing_stored(harness: Harness) -> None:
    body = job_body(
        target={"type": "python", "task": "chronoq.tasks:echo", "args": {"x": "y" * 500_000}}
    )

    status, answer = harness.api(api_event("create_at_job", body=body))

    assert status == 413
    assert_error(answer, "payload_too_large", None)
    assert nothing_stored(harness)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"schedule": {"type": "cron", "expression": "0 0 30 2 *"}}, "schedule.expression"),
        ({"schedule": {"type": "at", "at": "9999-12-31T23:59:59.5Z"}}, "schedule.at"),
        ({"timeout_seconds": True}, "timeout_seconds"),
        (
            {
                "target": {
                    "type": "python",
                    "task": "chronoq.tasks:echo",
                    "args": {"x": "y" * 70_000},
                }
            },
            "target.args",
        ),
    ],
)
def test_given_a_probe_when_a_job_is_patched_then_422_names_the_field_and_the_job_is_unchanged(
    harness: Harness, patch: dict[str, Any], field: str
) -> None:
    _, job = create(harness)
    path = f"/jobs/{job['id']}"

    status, answer = harness.api(api_event("get_job", path=path, method="PATCH", body=patch))

    assert status == 422
    assert_error(answer, "invalid_field", field)
    assert harness.api(api_event("get_job", path=path))[1] == job


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"type": "cron", "expression": "0 0 30 2 *"}}, "schedule.expression"),
        (
            {"schedule": {"type": "rate", "every": "1 day", "start_at": "9999-12-01T00:00:00Z"}},
            "schedule.start_at",
        ),
        ({"schedule": {"type": "rate", "every": "1 day"}, "cuont": 3}, "cuont"),
        ({"schedule": {"type": "rate", "every": "1 day"}, "count": True}, "count"),
    ],
)
def test_given_a_probe_when_previewed_then_422_names_the_field(
    harness: Harness, body: dict[str, Any], field: str
) -> None:
    status, answer = harness.api(api_event("create_at_job", body=body, path="/schedules/preview"))

    assert status == 422
    assert_error(answer, "invalid_field", field)


# --- Limits: the per-owner job quota -----------------------------------------------------


def test_given_an_owner_at_the_quota_when_creating_then_403_until_a_job_is_deleted(
    harness: Harness,
) -> None:
    harness.aws.configure(r.ENV_MAX_JOBS_PER_OWNER, "2")
    first, _ = create(harness)[1], create(harness)

    status, answer = create(harness)

    assert status == 403
    assert_error(answer, "quota_exceeded", None)
    assert len(harness.api(api_event("list_jobs"))[1]["jobs"]) == 2
    assert create(harness, user="bob")[0] == 201  # each owner has a quota of their own
    path = f"/jobs/{first['id']}"
    assert harness.api(api_event("get_job", path=path, method="DELETE"))[0] == 204
    assert create(harness)[0] == 201


# --- The SSRF guard ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://10.0.0.1/",
        "http://100.64.0.1/",
        "http://localhost/",
    ],
)
def test_given_the_guard_on_when_a_target_or_webhook_names_a_private_address_then_422_names_it(
    harness: Harness, url: str
) -> None:
    harness.aws.configure(r.ENV_BLOCK_PRIVATE_TARGETS, "true")

    target = harness.api(
        api_event("create_at_job", body=job_body(target={"type": "http", "url": url}))
    )
    webhook = harness.api(api_event("create_at_job", body=job_body(notify={"webhook": url})))

    assert target[0] == webhook[0] == 422
    assert_error(target[1], "invalid_field", "target.url")
    assert_error(webhook[1], "invalid_field", "notify.webhook")
    assert nothing_stored(harness)


def test_given_the_guard_off_as_locally_by_default_when_a_target_names_loopback_then_it_is_created(
    harness: Harness,
) -> None:
    body = job_body(target={"type": "http", "url": "http://127.0.0.1:8000/"})

    assert harness.api(api_event("create_at_job", body=body))[0] == 201


def test_given_an_allowed_network_when_a_target_names_an_address_in_it_then_it_is_created(
    harness: Harness,
) -> None:
    harness.aws.configure(r.ENV_BLOCK_PRIVATE_TARGETS, "true")
    harness.aws.configure(r.ENV_ALLOWED_TARGET_NETWORKS, "10.20.0.0/16")

    inside = job_body(target={"type": "http", "url": "http://10.20.1.2/"})
    outside = job_body(target={"type": "http", "url": "http://10.21.1.2/"})

    assert harness.api(api_event("create_at_job", body=inside))[0] == 201
    assert harness.api(api_event("create_at_job", body=outside))[0] == 422


def test_given_a_job_and_its_manual_run_when_answered_then_every_instant_is_utc_to_the_millisecond(
    harness: Harness,
) -> None:
    status, job = create(harness)
    assert status == 201
    trigger = api_event("create_at_job", path=f"/jobs/{job['id']}/trigger")
    trigger["body"] = None
    status, run = harness.api(trigger)
    assert status == 202

    instants = [job["created_at"], job["updated_at"], run["scheduled_at"], run["queued_at"]]
    for instant in instants:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z", instant), instant


def test_given_a_job_changed_through_the_api_when_its_trail_is_read_then_each_change_is_there_also_after_its_delete(
    harness: Harness,
) -> None:
    """On moto: entries added with PartiQL INSERT (chronoq.aws.audit) and read back by the
    API, their job deleted or not; another owner reads none."""
    status, job = create(harness, priority="normal")
    assert status == 201, job
    path = f"/jobs/{job['id']}"
    changed = api_event("create_at_job", path=path, method="PATCH", body={"priority": "low"})
    changed["headers"]["user-agent"] = "chronoq-cli/1.0"
    assert harness.api(changed)[0] == 200
    assert harness.api(api_event("get_job", path=path, method="DELETE"))[0] == 204

    status, page = harness.api(api_event("get_job", path=f"{path}/audit"))

    assert status == 200, page
    assert [e["action"] for e in page["entries"]] == ["delete", "change", "create"]
    assert page["entries"][1]["source"] == "cli"
    assert page["entries"][1]["changes"] == [
        {"field": "priority", "before": "normal", "after": "low"}
    ]
    assert page["entries"][1]["request_id"] == changed["requestContext"]["requestId"]
    assert harness.api(api_event("get_job", path=f"{path}/audit", user="bob"))[0] == 404
