"""The OpenAPI document as a client generator reads it: each operation's id is the name of
its method (the route's function: ``create_job``, ``list_runs``), unique, and each operation
is in one declared group (tag)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.api.document import generated


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return generated()


def test_given_the_document_when_a_client_is_generated_then_its_methods_are_the_routes_names(
    document: dict[str, Any],
) -> None:
    operations = {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    ids = [operation["operationId"] for operation in operations.values()]

    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z][a-z_]*[a-z]", i) for i in ids), ids
    assert {
        ("post", "/jobs"): "create_job",
        ("get", "/jobs"): "list_jobs",
        ("get", "/jobs/{job_id}"): "get_job",
        ("patch", "/jobs/{job_id}"): "update_job",
        ("delete", "/jobs/{job_id}"): "delete_job",
        ("get", "/jobs/{job_id}/runs"): "list_runs",
        ("get", "/runs/{run_id}"): "get_run",
        ("post", "/runs/{run_id}/cancel"): "cancel_run",
        ("post", "/schedules/preview"): "preview_schedule",
        ("post", "/jobs/{job_id}/backfill"): "backfill_job",
        ("get", "/jobs/{job_id}/backfills"): "list_backfills",
        ("get", "/jobs/{job_id}/backfills/{backfill_id}"): "get_backfill",
        ("post", "/jobs/{job_id}/backfills/{backfill_id}/cancel"): "cancel_backfill",
        ("post", "/runs/{run_id}/rerun"): "rerun_run",
        ("post", "/jobs/{job_id}/rerun"): "rerun_job",
        ("get", "/jobs/{job_id}/audit"): "list_audit",
        ("get", "/archive"): "list_archive",
    }.items() <= {route: o["operationId"] for route, o in operations.items()}.items()


def test_given_the_document_when_read_then_every_operation_is_in_one_declared_group(
    document: dict[str, Any],
) -> None:
    declared = [tag["name"] for tag in document["tags"]]
    groups = {
        (method, path): operation["tags"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }

    assert declared == [
        "jobs",
        "runs",
        "backfills",
        "audit",
        "schedules",
        "notifications",
        "secrets",
        "calendars",
        "archive",
        "status",
        "limits",
        "document",
    ]
    assert all(len(tags) == 1 and tags[0] in declared for tags in groups.values())
    assert groups["post", "/jobs/{job_id}/trigger"] == ["jobs"]
    assert groups["get", "/jobs/{job_id}/runs"] == ["runs"]
    assert groups["get", "/runs"] == ["runs"]
    assert groups["get", "/archive"] == ["archive"]
    assert groups["post", "/runs/{run_id}/rerun"] == ["runs"]
    assert groups["post", "/jobs/{job_id}/rerun"] == ["runs"]
    assert groups["post", "/jobs/{job_id}/backfill"] == ["backfills"]
    assert groups["get", "/jobs/{job_id}/backfills"] == ["backfills"]
    assert groups["post", "/jobs/{job_id}/backfills/{backfill_id}/cancel"] == ["backfills"]
    assert groups["get", "/jobs/{job_id}/audit"] == ["audit"]
    assert groups["get", "/openapi.json"] == ["document"]
    assert groups["get", "/status"] == ["status"]
