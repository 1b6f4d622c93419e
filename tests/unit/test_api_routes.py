"""The api function's routes through its handler, on the fakes (tests/unit/api_on_fakes.py):
each route that takes an ``Idempotency-Key`` applies it, and each answers only its owner. The
integration tests prove the same handler on moto; these make the fast layer fail when a
route's wiring is removed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chronoq.domain.runs import RunStatus

from tests.builders import Fakes, job_spec
from tests.unit.api_on_fakes import Api, api_on_fakes


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(Fakes()) as api:
        yield api


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


def created(api: Api, user: str = "alice") -> dict[str, Any]:
    status, job, _ = api.call("POST", "/jobs", user, job_spec().model_dump(mode="json"))
    assert status == 201, job
    return dict(job)


def ended_run(api: Api, job: dict[str, Any]) -> str:
    """A run of the job that has ended (a manual one, marked as its state machine would)."""
    status, run, _ = api.call("POST", f"/jobs/{job['id']}/trigger")
    assert status == 202, run
    api.fakes.store.update_run(job["id"], run["id"], status=RunStatus.SUCCEEDED)
    return str(run["id"])


def test_given_a_create_sent_twice_with_one_key_when_served_then_one_job_and_the_same_answer(
    api: Api,
) -> None:
    body = job_spec().model_dump(mode="json")

    first = api.call("POST", "/jobs", body=body, headers=key("create-1"))
    again = api.call("POST", "/jobs", body=body, headers=key("create-1"))

    assert (first[0], again[0]) == (201, 201)
    assert again[1] == first[1]
    assert again[2].get("Idempotent-Replayed") == "true"
    assert len(api.fakes.store.jobs) == 1


def test_given_a_trigger_sent_twice_with_one_key_when_served_then_one_run(api: Api) -> None:
    job = created(api)

    first = api.call("POST", f"/jobs/{job['id']}/trigger", headers=key("trigger-1"))
    again = api.call("POST", f"/jobs/{job['id']}/trigger", headers=key("trigger-1"))

    assert again[1]["id"] == first[1]["id"]
    assert len([r for r in api.fakes.store.runs if r[0] == job["id"]]) == 1


def test_given_a_rerun_sent_twice_with_one_key_when_served_then_one_new_run(api: Api) -> None:
    job = created(api)
    run_id = ended_run(api, job)

    first = api.call("POST", f"/runs/{run_id}/rerun", headers=key("rerun-1"))
    again = api.call("POST", f"/runs/{run_id}/rerun", headers=key("rerun-1"))

    assert (first[0], again[0]) == (202, 202)
    assert again[1]["id"] == first[1]["id"]
    assert again[2].get("Idempotent-Replayed") == "true"
    assert len([r for r in api.fakes.store.runs if r[0] == job["id"]]) == 2  # (the run, one rerun)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/jobs/{job}"),
        ("PATCH", "/jobs/{job}"),
        ("DELETE", "/jobs/{job}"),
        ("POST", "/jobs/{job}/trigger"),
        ("POST", "/jobs/{job}/pause"),
        ("GET", "/jobs/{job}/runs"),
        ("GET", "/runs/{run}"),
        ("POST", "/runs/{run}/rerun"),
        ("POST", "/runs/{run}/cancel"),
    ],
)
def test_given_alices_job_when_bob_asks_for_it_then_404_and_nothing_changes(
    api: Api, method: str, path: str
) -> None:
    job = created(api)
    run_id = ended_run(api, job)
    before = (dict(api.fakes.store.jobs), dict(api.fakes.store.runs))

    status, body, _ = api.call(
        method,
        path.format(job=job["id"], run=run_id),
        user="bob",
        body={"timeout_seconds": 5} if method == "PATCH" else None,
    )

    assert status == 404, body
    assert (dict(api.fakes.store.jobs), dict(api.fakes.store.runs)) == before
