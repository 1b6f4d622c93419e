"""The HTTP API against a hostile caller, over HTTP on one chronoq local of this module's own:
schemathesis generates requests from the API's own OpenAPI document (valid and invalid ones)
and checks that none is answered 5xx and every answer is one the document describes, in its
schema; and a route-by-route tenancy matrix: bob, on every route, with alice's ids and her
page tokens.

Bounded: a few hundred generated requests in all (MAX_EXAMPLES per route), so the module takes
well under two minutes on a loaded two-core machine. chronoq local's ticker is stopped while
fuzzing (no generated schedule fires), and a generated job whose target would start a
process on this host (a ``container`` target runs as one locally) is never sent."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.document import COMMITTED, text
from tests.e2e.harness import FINISHED, Local, poll, start_local
from tests.support import Sink, http_sink

pytestmark = pytest.mark.e2e

#: Generated requests per route; each route also gets the request examples of the document
#: (valid jobs: so answers with a job are checked against its schema too).
MAX_EXAMPLES = 20
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    """One chronoq local for this module, its ticker stopped."""
    with start_local(tmp_path_factory.mktemp("chronoq-fuzz")) as local:
        local.control("ticker/stop")
        yield local


#: The committed document (the test below proves chronoq local serves the same). Loaded at
#: import (schemathesis' fixture-based loader does not work with this pytest); the base URL,
#: chronoq local's port, is given with each call.
schema = schemathesis.openapi.from_path(
    COMMITTED,
    config=SchemathesisConfig.from_dict(
        {
            "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
            "generation": {
                "mode": "all",  # valid requests and invalid ones
                "max-examples": MAX_EXAMPLES,
                "database": "none",
                # the token is the caller's, sent with each call: not generated (a request
                # without one is the gateway's 401, described and tested elsewhere)
                "with-security-parameters": False,
            },
        }
    ),
)


def test_the_served_document_is_the_committed_one_and_needs_a_token(fuzzed: Local) -> None:
    status, document = fuzzed.call("GET", "/openapi.json")
    assert status == 200
    assert text(document) == COMMITTED.read_text()
    assert fuzzed.call("GET", "/openapi.json", user=None)[0] == 401


@pytest.fixture
def own(fuzzed: Local) -> dict[str, str]:
    """A job of the fuzzer's own, and a run of it, by the names of their path parameters (one
    per route: DELETE fuzzed on one leaves the others theirs)."""
    # (job names are unique per owner: one of its own for each route)
    body = {**EXAMPLE_JOB, "name": f"fuzzed-{uuid.uuid4().hex}"}
    status, job = fuzzed.call("POST", "/jobs", user="fuzzer", body=body)
    assert status == 201, job
    status, run = fuzzed.call("POST", f"/jobs/{job['id']}/trigger", user="fuzzer")
    assert status == 202, run
    return {"job_id": job["id"], "run_id": run["id"]}


EXAMPLE_JOB = {
    "name": "fuzzed",
    "schedule": {"type": "at", "at": "2030-01-01T00:00:00Z"},
    "target": {
        "type": "sqs",
        "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/nowhere",
    },
    "retry": {"max_attempts": 1},
}


def _starts_a_process(body: Any) -> bool:
    target = body.get("target") if isinstance(body, dict) else None
    return isinstance(target, dict) and target.get("type") == "container"


@schema.parametrize()
@hypothesis.settings(
    deadline=None,
    suppress_health_check=list(HealthCheck),
    max_examples=MAX_EXAMPLES,
    database=None,
)
def test_no_request_is_answered_5xx_nor_outside_the_document(
    case: schemathesis.Case[Any], fuzzed: Local, own: dict[str, str]
) -> None:
    hypothesis.assume(not _starts_a_process(case.body))
    # every other request on a route naming a job or run names one of the caller's (a
    # generated id is hardly ever one): the route's own code, not only its 404, is fuzzed
    if zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode()) % 2:
        case.path_parameters = {
            name: own.get(name, value) for name, value in (case.path_parameters or {}).items()
        }
    case.call_and_validate(
        base_url=fuzzed.url,
        headers={"Authorization": f"Bearer {fuzzed.token('fuzzer')}"},
        checks=CHECKS,
        timeout=60,
    )


def test_given_a_job_when_deleted_then_204_with_no_body_and_no_content_type(
    fuzzed: Local,
) -> None:
    """(Found by fuzzing: a 204 came with ``Content-Type: application/json`` and no body, which
    is not JSON.)"""
    job_id = fuzzed.call("POST", "/jobs", body=EXAMPLE_JOB)[1]["id"]
    request = urllib.request.Request(
        f"{fuzzed.url}/jobs/{job_id}",
        method="DELETE",
        headers={"Authorization": f"Bearer {fuzzed.token('alice')}"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 204
        assert answer.read() == b""
        assert answer.headers.get("Content-Type") is None


def test_given_a_method_a_path_of_the_document_does_not_have_then_405_allowing_those_it_has(
    fuzzed: Local,
) -> None:
    document = json.loads(COMMITTED.read_text())
    for path, item in document["paths"].items():
        concrete = path.replace("{job_id}", "job_x").replace("{run_id}", "run_x")
        documented = {method.upper() for method in item}
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - documented):
            request = urllib.request.Request(
                f"{fuzzed.url}{concrete}",
                method=method,
                headers={"Authorization": f"Bearer {fuzzed.token('alice')}"},
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=60)
            assert refused.value.code == 405, (method, path)
            allowed = {m.strip() for m in (refused.value.headers.get("Allow") or "").split(",")}
            assert allowed == documented, (method, path, allowed)
            assert json.loads(refused.value.read())["error"]["code"] == "method_not_allowed"


# --- tenancy: bob on every route, with alice's ids and page tokens ------------------------------


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s


@pytest.fixture(scope="module")
def alices(fuzzed: Local, sink: Sink) -> dict[str, Any]:
    """Alice's two jobs and a finished run of the first; her first pages of jobs and runs."""
    body = {
        "name": "alice's",
        "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
        "target": {"type": "http", "url": f"{sink.url}/alice", "method": "POST"},
        "retry": {"max_attempts": 1},
    }
    jobs = []
    for n in range(2):
        status, job = fuzzed.call("POST", "/jobs", body={**body, "name": f"alice's {n}"})
        assert status == 201, job
        jobs.append(job)
    runs: list[dict[str, Any]] = []

    def triggered() -> dict[str, Any] | None:  # (one manual run per job and second)
        status, run = fuzzed.call("POST", f"/jobs/{jobs[0]['id']}/trigger")
        fresh = status == 202 and run["id"] not in [r["id"] for r in runs]
        return run if fresh else None

    for _ in range(2):
        runs.append(poll(triggered, 30, "a manual run of alice's job"))

    def finished() -> dict[str, Any] | None:
        status, run = fuzzed.call("GET", f"/runs/{runs[0]['id']}")
        return run if status == 200 and run["status"] in FINISHED else None

    poll(finished, 120, f"alice's run {runs[0]['id']} to finish")
    status, job_page = fuzzed.call("GET", "/jobs?limit=1")
    assert (status, "next_token" in job_page) == (200, True), job_page
    status, run_page = fuzzed.call("GET", f"/jobs/{jobs[0]['id']}/runs?limit=1")
    assert (status, "next_token" in run_page) == (200, True), run_page
    return {
        "job": jobs[0],
        "run": runs[0],
        "jobs_token": job_page["next_token"],
        "runs_token": run_page["next_token"],
    }


def _routes(job_id: str, run_id: str) -> list[tuple[str, str, Any]]:
    """Every route naming a job or run, with a body the route would accept from its owner."""
    return [
        ("GET", f"/jobs/{job_id}", None),
        ("PATCH", f"/jobs/{job_id}", {"name": "bob's now"}),
        ("POST", f"/jobs/{job_id}/pause", None),
        ("POST", f"/jobs/{job_id}/resume", None),
        ("POST", f"/jobs/{job_id}/trigger", None),
        ("GET", f"/jobs/{job_id}/runs", None),
        ("GET", f"/jobs/{job_id}/runs?limit=1", None),
        ("GET", f"/runs/{run_id}", None),
        ("GET", f"/runs/{run_id}/output", None),
        ("GET", f"/runs/{run_id}/logs", None),
        ("POST", f"/runs/{run_id}/cancel", None),
        ("DELETE", f"/jobs/{job_id}", None),
    ]


def test_given_alices_job_and_run_when_bob_calls_every_route_with_their_ids_then_404_and_nothing_changes(
    fuzzed: Local, alices: dict[str, Any]
) -> None:
    job, run = alices["job"], alices["run"]
    for method, path, body in _routes(job["id"], run["id"]):
        status, answer = fuzzed.call(method, path, user="bob", body=body)
        assert status == 404, (method, path, status, answer)
        assert answer["error"]["code"] == "not_found", (method, path, answer)
        assert "alice" not in str(answer), (method, path, answer)
    # alice's job and run are as they were, and hers to read
    status, after = fuzzed.call("GET", f"/jobs/{job['id']}")
    assert status == 200
    assert (after["name"], after["state"], after["version"]) == (
        job["name"],
        job["state"],
        job["version"],
    )
    status, run_after = fuzzed.call("GET", f"/runs/{run['id']}")
    assert status == 200
    assert run_after["status"] != "CANCELLED", run_after
    assert fuzzed.call("GET", f"/runs/{run['id']}/output")[0] == 200
    assert fuzzed.call("GET", f"/runs/{run['id']}/logs")[0] == 200


def test_given_alices_items_when_bob_lists_with_or_without_her_page_tokens_then_none_of_hers(
    fuzzed: Local, alices: dict[str, Any]
) -> None:
    job = alices["job"]
    jobs_token, runs_token = quote(alices["jobs_token"]), quote(alices["runs_token"])
    status, page = fuzzed.call("GET", "/jobs?limit=100", user="bob")
    assert status == 200
    assert all(j["owner"] == "bob" for j in page["jobs"]), page
    status, page = fuzzed.call("GET", f"/runs?job_id={job['id']}", user="bob")
    assert (status, page) == (200, {"runs": []})
    for path in [
        f"/jobs?next_token={jobs_token}",
        f"/jobs?limit=1&next_token={jobs_token}",
        f"/jobs?next_token={runs_token}",
        f"/runs?job_id={job['id']}&next_token={runs_token}",
        f"/runs?job_id={job['id']}&limit=1&next_token={runs_token}",
    ]:
        status, answer = fuzzed.call("GET", path, user="bob")
        assert status in (200, 400, 422), (path, status, answer)
        assert job["id"] not in str(answer), (path, answer)
        if status == 200:
            assert not answer.get("jobs"), (path, answer)
            assert not answer.get("runs"), (path, answer)
        else:
            assert answer["error"]["field"] == "next_token", (path, answer)
    status, answer = fuzzed.call("GET", f"/jobs/{job['id']}/runs?next_token={runs_token}", "bob")
    assert status == 404, answer
