"""The Artifacts contract: outputs and log lines of runs, in the run record when small, else
in S3; on the fake and on DynamoDB + S3. The run is created first (the AWS adapter writes to
its item), and its output reaches the record as the run state machine writes it."""

from __future__ import annotations

import json

import pytest
from chronoq import resources as r
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, log_line

from tests.contract.backends import NOW, Backend, a_job, a_run


def a_kept_run(backend: Backend) -> tuple[Job, Run]:
    job = a_job()
    run = a_run(job)
    backend.store.create_run(run, NOW)
    return job, run


def output_of(size: int) -> str:
    """A JSON document of exactly ``size`` bytes."""
    text = json.dumps({"data": ""})
    return json.dumps({"data": "x" * (size - len(text))})


def saved_and_read(backend: Backend, run: Run, output: str, location: str | None) -> str | None:
    """Save an attempt's output, write the answer to the run as the state machine does
    (MarkSucceeded), and read the output of the run as kept."""
    saved = backend.artifacts.save_output(run.job_id, run.id, 1, output, location)
    backend.state_machine_writes(run.job_id, run.id, **saved)
    kept = backend.store.get_run(run.job_id, run.id)
    assert kept is not None
    return backend.artifacts.read_output(kept)


def lines(attempt: int, count: int, size: int = 20) -> list[str]:
    return [log_line(attempt, f"{i:04d} " + "y" * size, NOW) for i in range(count)]


@pytest.mark.parametrize("size", [20, r.INLINE_BYTES])
def test_given_a_small_output_when_saved_then_kept_in_the_record(
    backend: Backend, size: int
) -> None:
    _, run = a_kept_run(backend)
    output = output_of(size)

    saved = backend.artifacts.save_output(run.job_id, run.id, 1, output, None)

    assert saved == {"output": output, "output_location": ""}
    assert saved_and_read(backend, run, output, None) == output


def test_given_a_large_output_when_saved_then_kept_elsewhere_and_read_back(
    backend: Backend,
) -> None:
    _, run = a_kept_run(backend)
    output = output_of(r.INLINE_BYTES + 1)

    saved = backend.artifacts.save_output(run.job_id, run.id, 2, output, None)

    assert saved["output"] == ""
    assert saved["output_location"].startswith(f"s3://{backend.output_bucket}/")
    assert saved_and_read(backend, run, output, None) == output


def test_given_an_output_location_when_a_large_output_saved_then_kept_under_it(
    backend: Backend,
) -> None:
    _, run = a_kept_run(backend)
    output = output_of(2 * r.INLINE_BYTES)
    location = f"s3://{backend.output_bucket}/elsewhere/reports"

    saved = backend.artifacts.save_output(run.job_id, run.id, 1, output, location)

    assert saved["output_location"].startswith(f"{location}/")
    assert saved_and_read(backend, run, output, location) == output


def test_given_outputs_of_two_attempts_when_saved_then_each_kept(backend: Backend) -> None:
    _, run = a_kept_run(backend)
    first, second = output_of(r.INLINE_BYTES + 1), output_of(r.INLINE_BYTES + 2)

    one = backend.artifacts.save_output(run.job_id, run.id, 1, first, None)
    two = backend.artifacts.save_output(run.job_id, run.id, 2, second, None)

    assert one["output_location"] != two["output_location"]
    backend.state_machine_writes(run.job_id, run.id, **one)
    kept = backend.store.get_run(run.job_id, run.id)
    assert kept is not None
    assert backend.artifacts.read_output(kept) == first


def test_given_a_run_without_output_when_read_then_none(backend: Backend) -> None:
    _, run = a_kept_run(backend)

    assert backend.artifacts.read_output(run) is None


def test_given_logs_of_two_attempts_appended_out_of_order_when_read_then_by_attempt(
    backend: Backend,
) -> None:
    _, run = a_kept_run(backend)
    first, second = lines(1, 3), lines(2, 4)

    backend.artifacts.append_logs(run.job_id, run.id, 2, second, None)
    backend.artifacts.append_logs(run.job_id, run.id, 1, first, None)

    assert backend.artifacts.read_logs(run.job_id, run.id) == first + second


def test_given_logs_larger_than_the_record_holds_when_read_then_all_back_by_attempt(
    backend: Backend,
) -> None:
    _, run = a_kept_run(backend)
    small = lines(1, 5)
    large = lines(2, 400, size=200)  # over INLINE_BYTES on their own
    filling = lines(3, 100, size=300)  # would not fit beside attempt 1's any more
    last = lines(4, 2)
    assert sum(len(line) + 1 for line in large) > r.INLINE_BYTES

    for attempt, batch in ((3, filling), (1, small), (4, last), (2, large)):
        backend.artifacts.append_logs(run.job_id, run.id, attempt, batch, None)

    assert backend.artifacts.read_logs(run.job_id, run.id) == small + large + filling + last


def test_given_logs_when_an_output_location_given_then_read_back_all_the_same(
    backend: Backend,
) -> None:
    _, run = a_kept_run(backend)
    large = lines(1, 400, size=200)
    location = f"s3://{backend.output_bucket}/elsewhere"

    backend.artifacts.append_logs(run.job_id, run.id, 1, large, location)

    assert backend.artifacts.read_logs(run.job_id, run.id) == large


def test_given_no_logs_when_read_then_none(backend: Backend) -> None:
    _, run = a_kept_run(backend)

    backend.artifacts.append_logs(run.job_id, run.id, 1, [], None)

    assert backend.artifacts.read_logs(run.job_id, run.id) == []


def test_given_no_run_when_logs_appended_then_none_kept(backend: Backend) -> None:
    run = a_run(a_job())

    backend.artifacts.append_logs(run.job_id, run.id, 1, lines(1, 3), None)
    backend.artifacts.append_logs(run.job_id, run.id, 2, lines(2, 400, size=200), None)

    assert backend.artifacts.read_logs(run.job_id, run.id) == []
