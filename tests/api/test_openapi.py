"""The OpenAPI document: generated from the api function's routes, committed as openapi.json
(regenerate with ``PYTHONPATH=layers/core:. .venv/bin/python -m tests.api.document``), and
describing every route, every status it answers, the bearer scheme and the error shape."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from tests.api.document import COMMITTED, generated, text

REGENERATE = "PYTHONPATH=layers/core:. .venv/bin/python -m tests.api.document"
#: Every route of the api function, and what it answers on success.
ROUTES = {
    ("post", "/jobs"): "201",
    ("get", "/jobs"): "200",
    ("get", "/jobs/{job_id}"): "200",
    ("patch", "/jobs/{job_id}"): "200",
    ("delete", "/jobs/{job_id}"): "204",
    ("put", "/calendars/{name}"): "200",
    ("get", "/calendars"): "200",
    ("get", "/calendars/{name}"): "200",
    ("delete", "/calendars/{name}"): "204",
    ("post", "/calendars/{name}/replan"): "200",
    ("post", "/jobs/pause"): "200",
    ("post", "/jobs/resume"): "200",
    ("post", "/jobs/{job_id}/pause"): "200",
    ("post", "/jobs/{job_id}/resume"): "200",
    ("post", "/jobs/{job_id}/trigger"): "202",
    ("get", "/jobs/{job_id}/runs"): "200",
    ("get", "/runs"): "200",
    ("get", "/runs/{run_id}"): "200",
    ("post", "/runs/{run_id}/cancel"): "200",
    ("get", "/runs/{run_id}/output"): "200",
    ("get", "/runs/{run_id}/logs"): "200",
    ("post", "/schedules/preview"): "200",
    ("get", "/notifications/secret"): "200",
    ("get", "/status"): "200",
    ("get", "/limits"): "200",
    ("get", "/archive"): "200",
    ("put", "/secrets/{name}"): "201",
    ("get", "/secrets"): "200",
    ("delete", "/secrets/{name}"): "204",
    ("get", "/openapi.json"): "200",
    ("post", "/jobs/{job_id}/backfill"): "202",
    ("get", "/jobs/{job_id}/backfills"): "200",
    ("get", "/jobs/{job_id}/backfills/{backfill_id}"): "200",
    ("post", "/jobs/{job_id}/backfills/{backfill_id}/cancel"): "200",
    ("post", "/runs/{run_id}/rerun"): "202",
    ("post", "/jobs/{job_id}/rerun"): "202",
    ("get", "/jobs/{job_id}/audit"): "200",
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return generated()


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def test_the_committed_openapi_json_is_the_generated_document(document: dict[str, Any]) -> None:
    committed = COMMITTED.read_text() if COMMITTED.exists() else ""
    assert committed == text(document), f"openapi.json is out of date: run {REGENERATE}"


def test_every_route_is_described_with_its_success_and_the_errors_every_route_answers(
    document: dict[str, Any],
) -> None:
    described = operations(document)
    assert set(described) == set(ROUTES)
    for route, success in ROUTES.items():
        answers = described[route]["responses"]
        assert success in answers, route
        assert {"401", "429"} <= set(answers), route
        assert described[route]["summary"], route


def test_routes_answer_the_statuses_they_can(document: dict[str, Any]) -> None:
    described = operations(document)
    body = {"400", "413", "415", "422"}
    assert body | {"201", "403", "409"} <= set(described["post", "/jobs"]["responses"])
    assert body | {"404", "409"} <= set(described["patch", "/jobs/{job_id}"]["responses"])
    assert body <= set(described["post", "/schedules/preview"]["responses"])
    for route in ROUTES:
        if "{" in route[1] and route[0] != "put":  # (a PUT makes what it names)
            assert "404" in described[route]["responses"], route
    assert "content" not in described["delete", "/jobs/{job_id}"]["responses"]["204"]
    assert "422" in described["get", "/jobs"]["responses"]
    assert "422" not in described["get", "/jobs/{job_id}"]["responses"]  # nothing to refuse


def test_every_refusal_is_described_by_the_one_error_shape(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["Error"]["required"] == ["error"]
    assert set(schemas["ErrorDetail"]["required"]) == {"code", "message", "field"}
    refs = json.dumps(document)
    assert "HTTPValidationError" not in refs  # Powertools' own 422 shape is not ours
    for (method, path), operation in operations(document).items():
        for code, answer in operation["responses"].items():
            if code.startswith("4") and code not in ("401", "429"):
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, code)


def test_the_api_is_described_as_needing_a_bearer_jwt(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    assert document["components"]["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    }
    assert document["security"] == [{"bearer": []}]


def test_the_idempotent_routes_describe_their_key(document: dict[str, Any]) -> None:
    described = operations(document)
    for route in [
        ("post", "/jobs"),
        ("post", "/jobs/{job_id}/trigger"),
        ("post", "/jobs/{job_id}/backfill"),
        ("post", "/runs/{run_id}/rerun"),
        ("post", "/jobs/{job_id}/rerun"),
    ]:
        names = [p["name"] for p in described[route].get("parameters", [])]
        assert "Idempotency-Key" in names, route
    assert not any("x-chronoq" in key for op in described.values() for key in op)


def test_answers_are_described_without_internal_fields(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert "generation" not in schemas["Job"]["properties"]
    assert not {"generation", "notify"} & set(schemas["Run"]["properties"])
    assert schemas["JobPage"]["properties"]["jobs"]["items"] == {"$ref": "#/components/schemas/Job"}


def test_the_request_examples_are_valid_requests(document: dict[str, Any]) -> None:
    from chronoq.domain.jobs import JobPatch, JobSpec
    from pydantic import BaseModel

    described = operations(document)
    models: dict[tuple[str, str], type[BaseModel]] = {
        ("post", "/jobs"): JobSpec,
        ("patch", "/jobs/{job_id}"): cast(type[BaseModel], JobPatch),  # (built at import)
    }
    for route, model in models.items():
        examples = described[route]["requestBody"]["content"]["application/json"]["examples"]
        assert examples, route
        for example in examples.values():
            model.model_validate(example["value"])
    previews = described["post", "/schedules/preview"]["requestBody"]["content"]
    assert previews["application/json"]["examples"]
