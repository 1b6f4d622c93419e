"""Jobs' audit trails through the api function's handler, on the fakes: an entry for every route
that changes a job (who, from what, which request, what changed), none for a change refused,
credentials masked, and each owner's trail its own (docs/api/audit.md, "Audit trail")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain.runs import RunStatus
from chronoq.fakes.audit import FakeAuditTrail

from tests.builders import Fakes, job_spec
from tests.unit.api_on_fakes import Api, api_on_fakes
from tests.unit.usecases.helpers import finish, started_run

CLI = {"User-Agent": "chronoq-cli/1.4.0"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(Fakes()) as api:
        yield api


def trail(api: Api) -> FakeAuditTrail:
    return trail_of(api.fakes)


def trail_of(fakes: Fakes) -> FakeAuditTrail:
    kept = fakes.audit
    assert isinstance(kept, FakeAuditTrail)
    return kept


def created(api: Api, user: str = "alice", **extra: Any) -> dict[str, Any]:
    body = job_spec(**extra).model_dump(mode="json", exclude_defaults=True)
    status, job, _ = api.call("POST", "/jobs", user, body)
    assert status == 201, job
    api.fakes.clock.advance(1)  # (what follows is later: entries are in time order)
    return dict(job)


def audit(api: Api, job_id: str, user: str = "alice", query: str = "") -> tuple[int, Any]:
    status, page, _ = api.call("GET", f"/jobs/{job_id}/audit{query}", user)
    return status, page


def test_given_each_route_that_changes_a_job_when_called_then_each_adds_one_entry_naming_its_action(
    api: Api,
) -> None:
    every_ten = {"type": "cron", "expression": "*/10 * * * *"}
    now = api.fakes.clock()
    span = {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now - timedelta(minutes=30)).isoformat(),
    }
    job: dict[str, Any] = {}

    def create() -> tuple[int, Any, dict[str, str]]:
        body = job_spec(schedule=every_ten).model_dump(mode="json", exclude_defaults=True)
        answer = api.call("POST", "/jobs", body=body, headers=CLI, request_id="req-create")
        job.update(answer[1])
        return answer

    def rerun_run() -> tuple[int, Any, dict[str, str]]:
        run = api.call("GET", f"/jobs/{job['id']}/runs")[1]
        (ended,) = [r for r in run["runs"] if r["status"] == "SUCCEEDED"]
        return api.call("POST", f"/runs/{ended['id']}/rerun", headers=CLI, request_id="req-rerun")

    def end_the_trigger() -> None:
        (run_id,) = [r for j, r in api.fakes.store.runs if j == job["id"]]
        api.fakes.store.update_run(job["id"], run_id, status=RunStatus.SUCCEEDED)

    def cancel_backfill() -> tuple[int, Any, dict[str, str]]:
        page = api.call("GET", f"/jobs/{job['id']}/backfills")[1]
        path = f"/jobs/{job['id']}/backfills/{page['backfills'][0]['id']}/cancel"
        return api.call("POST", path, headers=CLI, request_id="req-cancel_backfill")

    def call(method: str, route: str, body: Any = None) -> Any:
        def send() -> tuple[int, Any, dict[str, str]]:
            path = route.format(id=job["id"])
            action = route.rsplit("/", 1)[-1] if method == "POST" else method.lower()
            return api.call(method, path, body=body, headers=CLI, request_id=f"req-{action}")

        return send

    ranged = {
        "from": (now - timedelta(hours=1)).isoformat(),
        "to": (now + timedelta(hours=1)).isoformat(),
        "statuses": ["SUCCEEDED"],
    }
    routes = [
        ("create", create),
        ("change", call("PATCH", "/jobs/{id}", {"priority": "high"})),
        ("pause", call("POST", "/jobs/{id}/pause")),
        ("resume", call("POST", "/jobs/{id}/resume")),
        ("trigger", call("POST", "/jobs/{id}/trigger")),
        ("backfill", call("POST", "/jobs/{id}/backfill", span)),
        ("cancel_backfill", cancel_backfill),
        ("rerun", rerun_run),
        ("rerun", call("POST", "/jobs/{id}/rerun", ranged)),
        ("delete", call("DELETE", "/jobs/{id}")),
    ]
    for n, (action, route) in enumerate(routes):
        status, answer, _ = route()
        assert status < 300, (action, answer)
        assert len(trail(api).entries) == n + 1, action  # (one entry per change, no more)
        if action == "trigger":
            end_the_trigger()
        api.fakes.clock.advance(1)

    status, page = audit(api, job["id"])  # (the job is deleted: its trail is still read)
    assert status == 200, page
    entries = page["entries"][::-1]
    assert [e["action"] for e in entries] == [action for action, _ in routes]
    request_ids = ["req-create", "req-patch", "req-pause", "req-resume", "req-trigger"]
    request_ids += ["req-backfill", "req-cancel_backfill", "req-rerun", "req-rerun", "req-delete"]
    assert [e["request_id"] for e in entries] == request_ids
    assert {(e["by"], e["by_name"], e["source"], e["job_id"]) for e in entries} == {
        ("alice", "alice", "cli", job["id"])
    }


@pytest.mark.parametrize(
    ("agent", "source"),
    [
        ("chronoq-cli/1.4.0", "cli"),
        ("chronoq-apply/1.4.0", "apply"),
        ("chronoq-console/1.4.0", "console"),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0", "console"),
        ("curl/8.5.0", "api"),
        ("", "api"),
    ],
)
def test_given_a_change_from_a_client_when_recorded_then_its_user_agent_says_what_it_came_from(
    api: Api, agent: str, source: str
) -> None:
    job = created(api)

    api.call("POST", f"/jobs/{job['id']}/pause", headers={"User-Agent": agent})

    assert audit(api, job["id"])[1]["entries"][0]["source"] == source


def test_given_a_change_when_recorded_then_its_entry_has_the_changed_fields_before_and_after_only(
    api: Api,
) -> None:
    job = created(api, priority="low", labels={"team": "data", "tier": "1"})
    patch = {
        "schedule": {"type": "cron", "expression": "0 2 * * *"},
        "priority": "high",
        "labels": {"team": "data", "tier": "2", "new": "yes"},
    }

    status, answer, _ = api.call("PATCH", f"/jobs/{job['id']}", body=patch)

    assert status == 200, answer
    change = audit(api, job["id"])[1]["entries"][0]
    assert change["action"] == "change"
    assert change["changes"] == [
        {"field": "labels.new", "before": None, "after": "yes"},
        {"field": "labels.tier", "before": "1", "after": "2"},
        {"field": "priority", "before": "low", "after": "high"},
        {"field": "schedule.expression", "before": "* * * * *", "after": "0 2 * * *"},
    ]


def test_given_a_create_when_recorded_then_its_entry_has_the_fields_given_and_its_time(
    api: Api,
) -> None:
    job = created(api, priority="high")

    (entry,) = audit(api, job["id"])[1]["entries"]

    fields = {c["field"]: (c["before"], c["after"]) for c in entry["changes"]}
    assert fields["name"] == (None, job["name"])
    assert fields["priority"] == (None, "high")
    assert fields["target.url"] == (None, job["target"]["url"])
    assert "concurrency" not in fields  # (a default: not given)
    assert entry["at"] == "2026-11-26T12:00:00Z"


def test_given_credentials_written_into_a_job_when_its_changes_are_recorded_then_none_is_kept(
    api: Api,
) -> None:
    plain = "Bearer s3cr3t-plain-value"
    token = "ghp_" + "A1b2C3d4" * 5
    assert api.call("PUT", "/secrets/crm", body={"value": "v4lue-of-crm"})[0] == 201
    headers: dict[str, Any] = {
        "Authorization": plain,
        "X-Ref": {"secret": "crm"},
        "X-Id": "tenant-7",
    }
    target = {
        "type": "http",
        "url": "https://example.com/hook",
        "headers": headers,
        "body": json.dumps({"token": token}),
    }
    webhook = {
        "on": ["FAILED"],
        "webhook": "https://example.com/w",
        "webhook_headers": {"X-Key": token},
    }
    job = created(api, target=target, notify=webhook)
    rotated = {
        **target,
        "headers": {**headers, "Authorization": plain + "-2"},
        "body": "{}",
    }
    assert api.call("PATCH", f"/jobs/{job['id']}", body={"target": rotated})[0] == 200

    kept = json.dumps([e.model_dump(mode="json") for e in trail(api).entries.values()])
    for credential in ("s3cr3t-plain-value", token, "v4lue-of-crm"):
        assert credential not in kept
    created_entry, changed = (
        {c["field"]: c for c in e["changes"]} for e in audit(api, job["id"])[1]["entries"][::-1]
    )
    assert created_entry["target.headers.Authorization"]["after"] == "***"
    assert created_entry["notify.webhook_headers.X-Key"]["after"] == "***"
    assert created_entry["target.body"]["after"] == "***"
    assert created_entry["target.headers.X-Ref"]["after"] == {"secret": "crm"}  # (a reference)
    assert created_entry["target.headers.X-Id"]["after"] == "tenant-7"
    assert changed["target.headers.Authorization"] == {
        "field": "target.headers.Authorization",
        "before": "***",
        "after": "***",
    }
    assert changed["target.body"] == {"field": "target.body", "before": "***", "after": "{}"}


def test_given_a_large_value_when_recorded_then_it_is_cut(api: Api) -> None:
    job = created(
        api, target={"type": "python", "task": "chronoq.tasks:echo", "args": {"x": "y" * 5000}}
    )

    (entry,) = audit(api, job["id"])[1]["entries"]

    (args,) = [c for c in entry["changes"] if c["field"] == "target.args.x"]
    assert len(args["after"]) < 300
    assert args["after"].endswith("... (5002 characters)")


@pytest.mark.parametrize(
    ("method", "route", "body", "status"),
    [
        ("PATCH", "/jobs/{id}", {"priority": "high", "version": 7}, 409),  # (not its version)
        ("PATCH", "/jobs/{id}", {"schedule": {"type": "cron", "expression": "nope"}}, 422),
        ("PATCH", "/jobs/{id}", {"name": "taken"}, 409),
        ("POST", "/jobs/{id}/resume", None, 200),  # (active already: nothing changed)
        (
            "POST",
            "/jobs/{id}/backfill",
            {"from": "2020-01-01T00:00:00Z", "to": "2020-01-02T00:00:00Z"},
            422,
        ),
        (
            "POST",
            "/jobs/{id}/rerun",
            {"from": "2026-11-26T10:00:00Z", "to": "2026-11-26T11:00:00Z"},
            202,
        ),
        (
            "POST",
            "/jobs",
            {
                "name": "taken",
                "schedule": {"type": "rate", "every": "1 minute"},
                "target": {"type": "http", "url": "https://example.com/"},
            },
            409,
        ),
    ],
)
def test_given_a_change_refused_or_empty_when_answered_then_no_entry_is_added(
    api: Api, method: str, route: str, body: Any, status: int
) -> None:
    job = created(api)
    created(api, name="taken")
    before = len(trail(api).entries)

    answer = api.call(method, route.format(id=job["id"]), body=body)

    assert answer[0] == status, answer
    assert len(trail(api).entries) == before


def test_given_a_change_sent_again_with_its_idempotency_key_when_replayed_then_no_second_entry(
    api: Api,
) -> None:
    job = created(api)
    again = {"Idempotency-Key": "trigger-once"}

    api.call("POST", f"/jobs/{job['id']}/trigger", headers=again)
    replay = api.call("POST", f"/jobs/{job['id']}/trigger", headers=again)

    assert replay[2].get("Idempotent-Replayed") == "true"
    assert [e["action"] for e in audit(api, job["id"])[1]["entries"]] == ["trigger", "create"]


def test_given_alices_job_when_bob_reads_or_changes_it_then_404_and_her_trail_is_hers(
    api: Api,
) -> None:
    job = created(api)
    bobs = created(api, user="bob")

    assert api.call("POST", f"/jobs/{job['id']}/pause", "bob")[0] == 404
    assert audit(api, job["id"], "bob")[0] == 404
    api.fakes.clock.advance(1)
    assert api.call("DELETE", f"/jobs/{job['id']}")[0] == 204
    assert audit(api, job["id"], "bob")[0] == 404  # (deleted: still not his)
    assert audit(api, bobs["id"])[0] == 404
    assert audit(api, "job_0123456789abcdef")[0] == 404  # (no such job)

    status, page = audit(api, job["id"])
    assert status == 200
    assert [e["action"] for e in page["entries"]] == ["delete", "create"]
    assert {e["by"] for e in page["entries"]} == {"alice"}


def test_given_a_long_trail_when_paged_then_newest_first_each_once_with_tokens_of_its_owner(
    api: Api,
) -> None:
    job = created(api)
    for _ in range(3):
        api.fakes.clock.advance(1)
        api.call("POST", f"/jobs/{job['id']}/pause")
        api.fakes.clock.advance(1)
        api.call("POST", f"/jobs/{job['id']}/resume")

    first = audit(api, job["id"], query="?limit=4")[1]
    second = audit(api, job["id"], query=f"?limit=4&next_token={first['next_token']}")[1]

    actions = [e["action"] for e in first["entries"] + second["entries"]]
    assert actions == ["resume", "pause"] * 3 + ["create"]
    assert "next_token" not in second
    stolen = f"?limit=4&next_token={first['next_token']}"
    assert api.call("GET", f"/jobs/{job['id']}/audit{stolen}", "bob")[0] == 422


def test_given_a_jobs_runs_when_they_are_dispatched_started_and_ended_then_its_trail_is_not_written() -> (
    None
):
    """One write per change, nothing per run: the dispatcher, the worker and the state
    machine never add to the trail."""
    fakes = Fakes()
    job, run = started_run(fakes, on_complete="delete")  # (created: one entry)
    fakes.dispatcher.dispatch()
    finish(fakes, run, RunStatus.SUCCEEDED)
    fakes.count_run_ends()

    assert [e.action for e in trail_of(fakes).of(job.id)] == ["create"]


def test_given_a_job_made_before_trails_were_kept_when_its_trail_is_read_then_it_is_empty(
    api: Api,
) -> None:
    job = created(api)
    trail(api).entries.clear()  # (as a job stored before the audit table was)

    assert audit(api, job["id"]) == (200, {"entries": []})
    assert audit(api, job["id"], "bob")[0] == 404
