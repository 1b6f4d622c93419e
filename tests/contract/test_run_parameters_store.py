"""Run parameters as each backend keeps them: a run's (JSON text on its record, nothing when
there are none), a job's defaults, a backfill's: got back as they were put."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.backends import Backend, a_job, a_run
from tests.contract.test_progress_store import a_backfill

PARAMETERS: dict[str, Any] = {
    "day": "2026-11-01",
    "n": 1.5,
    "big": 10**20,
    "nested": {"list": [1, None, True], "quote": '"}'},
}


@pytest.mark.parametrize("parameters", [PARAMETERS, None])
def test_given_a_run_with_or_without_parameters_when_created_then_got_back_as_it_was(
    backend: Backend, parameters: dict[str, Any] | None
) -> None:
    job = a_job(parameters=PARAMETERS)
    backend.store.put_new_job(job)
    run = a_run(job).model_copy(update={"parameters": parameters})

    assert backend.store.create_run(run, run.scheduled_at)

    assert backend.store.get_job(job.id) == job
    kept = backend.store.get_run(job.id, run.id)
    assert kept is not None
    assert kept.parameters == parameters


def test_given_a_backfill_with_parameters_when_put_then_got_back_as_it_was(
    backend: Backend,
) -> None:
    job = a_job()
    backfill = a_backfill(job, "bf1").model_copy(update={"parameters": PARAMETERS})
    plain = a_backfill(job, "bf2")

    backend.store.put_backfill(backfill)
    backend.store.put_backfill(plain)

    assert backend.store.get_backfill(job.id, "bf1") == backfill
    assert backend.store.get_backfill(job.id, "bf2") == plain
