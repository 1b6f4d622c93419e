"""The Executor contract: one execution per run id, started idempotently; on the fake and on
Step Functions.

On Step Functions a start is a no-op only while the execution of that name is RUNNING. The
runs started here are QUEUED (so the run state machine marks them RUNNING), their target
fails at once (nothing listens on port 9), and their retry waits an hour: the execution keeps
RUNNING until stopped (the backend stops every execution left running after each test).
moto stops an execution only once it is under way, and asynchronously: ``under_way`` and
``is_stopped`` wait for that (no-ops on the fake)."""

from __future__ import annotations

from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus
from chronoq.execution.contract import ExecutionInput

from tests.contract.backends import NOW, Backend, a_job, a_run


def a_queued_run(backend: Backend) -> tuple[Job, Run, ExecutionInput]:
    """A QUEUED run whose execution, once started, keeps RUNNING until stopped."""
    job = a_job(
        retry={
            "max_attempts": 2,
            "interval_seconds": 3600,
            "max_interval_seconds": 3600,
            "jitter": False,
        }
    )
    run = a_run(job, status=RunStatus.QUEUED)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    return job, run, ExecutionInput.of(job, run.id, run.scheduled_at)


def test_given_no_execution_when_started_then_one_with_the_input(backend: Backend) -> None:
    _, run, execution_input = a_queued_run(backend)

    assert backend.executor.start(run.id, execution_input) is True

    assert backend.executions(run.id) == [execution_input.document()]


def test_given_a_running_execution_when_started_again_with_the_same_input_then_no_new_one(
    backend: Backend,
) -> None:
    _, run, execution_input = a_queued_run(backend)
    assert backend.executor.start(run.id, execution_input)

    assert backend.executor.start(run.id, execution_input) is True

    assert backend.executions(run.id) == [execution_input.document()]


def test_given_a_running_execution_when_started_with_other_input_then_refused(
    backend: Backend,
) -> None:
    job, run, execution_input = a_queued_run(backend)
    assert backend.executor.start(run.id, execution_input)
    changed = job.model_copy(update={"timeout_seconds": job.timeout_seconds + 1})

    assert backend.executor.start(run.id, ExecutionInput.of(changed, run.id, NOW)) is False

    assert backend.executions(run.id) == [execution_input.document()]


def test_given_a_running_execution_when_stopped_then_stopped(backend: Backend) -> None:
    _, run, execution_input = a_queued_run(backend)
    assert backend.executor.start(run.id, execution_input)
    backend.under_way(run.id)

    backend.executor.stop(run.id, "cancelled by alice")

    assert backend.is_stopped(run.id)


def test_given_a_stopped_execution_when_stopped_again_then_nothing_happens(
    backend: Backend,
) -> None:
    _, run, execution_input = a_queued_run(backend)
    assert backend.executor.start(run.id, execution_input)
    backend.under_way(run.id)
    backend.executor.stop(run.id, "cancelled by alice")

    backend.executor.stop(run.id, "cancelled by bob")

    assert backend.is_stopped(run.id)


def test_given_no_execution_when_stopped_then_nothing_happens(backend: Backend) -> None:
    run = a_run(a_job())

    backend.executor.stop(run.id, "cancelled by alice")

    assert backend.executions(run.id) == []


def test_given_a_stopped_execution_when_started_again_with_the_same_input_then_refused(
    backend: Backend,
) -> None:
    _, run, execution_input = a_queued_run(backend)
    assert backend.executor.start(run.id, execution_input)
    backend.under_way(run.id)
    backend.executor.stop(run.id, "cancelled by alice")
    assert backend.is_stopped(run.id)

    assert backend.executor.start(run.id, execution_input) is False

    assert backend.executions(run.id) == [execution_input.document()]


def test_given_a_run_that_fits_express_when_started_twice_then_two_executions(
    backend: Backend,
) -> None:
    """EXPRESS: a start is never idempotent (the state machine's first write lets one of the
    executions run the target; see tests/integration/test_execution.py)."""
    job = a_job(retry={"max_attempts": 1})
    run = a_run(job, status=RunStatus.QUEUED)
    backend.store.put_new_job(job)
    backend.store.create_run(run, NOW)
    execution_input = ExecutionInput.of(job, run.id, run.scheduled_at)
    assert execution_input.fits_express()

    assert backend.executor.start(run.id, execution_input) is True
    assert backend.executor.start(run.id, execution_input) is True

    assert backend.executions(run.id) == [execution_input.document()] * 2


def test_given_runs_that_fit_express_when_started_as_a_batch_then_one_execution_carries_them_all(
    backend: Backend,
) -> None:
    inputs = []
    for _ in range(3):
        job = a_job(retry={"max_attempts": 1})
        run = a_run(job, status=RunStatus.QUEUED)
        backend.store.put_new_job(job)
        backend.store.create_run(run, NOW)
        inputs.append(ExecutionInput.of(job, run.id, run.scheduled_at))

    backend.executor.start_batch(inputs)

    for execution_input in inputs:
        assert backend.executions(execution_input.run_id) == [execution_input.document()]
    assert backend.express_executions({i.run_id for i in inputs}) == 1
