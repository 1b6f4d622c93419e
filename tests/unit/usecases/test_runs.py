"""The API's run operations on the fakes: history, one run, cancelling it at every stage, its
output and logs (through the artifacts, as the runner keeps them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NoReturn

import pytest
from chronoq import resources as r
from chronoq.domain.errors import Conflict, NotFound
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus, log_line
from chronoq.domain.time import format_instant
from chronoq.execution.contract import AttemptRequest, AttemptResult
from chronoq.usecases.attempts import ContainerSettings, Runner

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import (
    LONGER_THAN_EXPRESS,
    due_job,
    finish,
    mark_running,
    message,
    pending_run,
    started_run,
    stored,
    stored_job,
)

# --- history --------------------------------------------------------------------------------


def start_sent(fakes: Fakes) -> None:
    """At its second, the worker starts every run sent so far, and the state machine marks
    each RUNNING."""
    for queued in fakes.queues.take():
        fakes.clock.set(max(fakes.clock(), queued.scheduled_at))
        assert fakes.starter.start_run(queued) == "started"
        assert mark_running(fakes, queued)


def test_given_a_jobs_runs_when_listed_then_the_recorded_ones_come_newest_first_up_to_the_limit(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    fakes.clock.advance(30)
    fakes.dispatcher.dispatch()  # 12:01 sent, 12:02 planned
    start_sent(fakes)  # 12:01 starts
    fakes.clock.advance(30)
    manual = fakes.jobs.trigger_job(OWNER, job.id)  # at 12:01:30
    start_sent(fakes)
    fakes.dispatcher.dispatch()  # 12:02 sent, 12:03 planned
    start_sent(fakes)  # 12:02 starts
    assert fakes.clock() == manual.scheduled_at + timedelta(seconds=30)

    runs = fakes.runs.list_runs(OWNER, job.id)

    # 12:03 is planned in the time index, but has no record yet
    assert [x.scheduled_at.strftime("%H:%M:%S") for x in runs] == [
        "12:02:00",
        "12:01:30",
        "12:01:00",
    ]
    assert {x.status for x in runs} == {RunStatus.RUNNING}
    assert runs[1].id == manual.id
    assert fakes.runs.list_runs(OWNER, job.id, limit=2) == runs[:2]


def test_given_alices_run_when_bob_asks_for_it_then_not_found(fakes: Fakes) -> None:
    _, run = started_run(fakes)

    assert fakes.runs.get_run(OWNER, run.id) == run
    with pytest.raises(NotFound, match=f"run {run.id} not found"):
        fakes.runs.get_run("bob", run.id)


def test_given_a_scheduled_occurrence_not_yet_started_when_asked_for_or_listed_then_it_is_not_there(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes)

    with pytest.raises(NotFound, match=f"run {run.id} not found"):
        fakes.runs.get_run(OWNER, run.id)
    assert fakes.runs.list_runs(OWNER, job.id) == []


@pytest.mark.parametrize(
    "run_id", ["not-a-run-id", "job_0123456789abcdef_20300101T080000Z", "job_x_2030"]
)
def test_given_an_unknown_or_malformed_run_id_when_asked_for_then_not_found(
    fakes: Fakes, run_id: str
) -> None:
    with pytest.raises(NotFound, match=f"run {run_id} not found"):
        fakes.runs.get_run(OWNER, run_id)


# --- cancel ---------------------------------------------------------------------------------


def test_given_a_manual_run_not_yet_started_when_cancelled_then_it_never_starts(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())
    run = fakes.jobs.trigger_job(OWNER, job.id)
    (queued,) = fakes.queues.take()

    cancelled = fakes.runs.cancel_run(OWNER, run.id)

    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, "cancelled by alice")
    assert cancelled.finished_at == fakes.clock()
    # (a run asked for goes through its owner's runs under way: its record is read first)
    assert fakes.starter.start_run(queued) == "duplicate"
    assert fakes.executor.starts == {}
    assert stored(fakes, run) == cancelled
    assert stored_job(fakes, job).active_runs == frozenset()


def test_given_a_future_scheduled_occurrence_when_cancelled_then_not_found_and_it_still_runs(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    run = pending_run(fakes, job)

    with pytest.raises(NotFound, match=f"run {run.id} not found"):
        fakes.runs.cancel_run(OWNER, run.id)

    assert fakes.store.runs == {}  # nothing recorded it cancelled
    fakes.clock.advance(30)
    fakes.dispatcher.dispatch()
    (queued,) = fakes.queues.take()
    assert queued.run_id == run.id
    fakes.clock.set(run.scheduled_at)
    assert fakes.starter.start_run(queued) == "started"


@pytest.mark.parametrize("express", [False, True], ids=["standard", "express"])
@pytest.mark.parametrize(
    ("concurrency", "running"),
    [("forbid", False), ("forbid", True), ("allow", True)],
    ids=["queued", "running-forbid", "running-allow"],
)
def test_given_a_started_run_when_cancelled_then_its_execution_stops_and_it_is_cancelled(
    fakes: Fakes, concurrency: str, running: bool, express: bool
) -> None:
    """A STANDARD execution is stopped; an EXPRESS one cannot be: it finds the run
    CANCELLED at its next conditional write and ends (tests/integration). (A run is QUEUED
    only when claimed: of a job that keeps its active runs.)"""
    timeout = {} if express else {"timeout_seconds": LONGER_THAN_EXPRESS}
    job, run = due_job(fakes, concurrency=concurrency, **timeout)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    if running:
        assert mark_running(fakes, run)
    assert stored(fakes, run).status is (RunStatus.RUNNING if running else RunStatus.QUEUED)

    cancelled = fakes.runs.cancel_run(OWNER, run.id)

    assert (cancelled.status, cancelled.reason) == (RunStatus.CANCELLED, "cancelled by alice")
    assert fakes.executor.stopped == ({} if express else {run.id: "cancelled by alice"})
    assert stored_job(fakes, job).active_runs == frozenset()
    if express and not running:  # its execution goes on, and stops at its first write
        assert not mark_running(fakes, run)
        assert stored(fakes, run) == cancelled
    again = fakes.starter.start_run(message(fakes, run))
    if concurrency == "allow" and express:  # a new execution, which ends at its first write
        assert again == "started"
        assert not mark_running(fakes, run)
    else:  # forbid: the worker reads the record; STANDARD: the stopped name is refused
        assert again == "duplicate"
    assert fakes.executor.starts == {run.id: 2 if concurrency == "allow" else 1}
    assert stored(fakes, run) == cancelled
    # the attempt under way is recorded as cancelled (a queued run had none)
    assert [(a.attempt, a.outcome, a.error) for a in cancelled.attempts] == (
        [(1, "Cancelled", "cancelled by alice")] if running else []
    )


@pytest.mark.parametrize("outcome", [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT])
def test_given_a_running_express_run_cancelled_when_its_attempt_then_ends_then_its_outcome_is_not_recorded_over_the_cancellation(
    fakes: Fakes, outcome: RunStatus
) -> None:
    """EXPRESS executions are never stopped: the attempt under way ends, and the state
    machine's outcome write (as the ASL's condition decides it) leaves the run CANCELLED."""
    _, run = started_run(fakes)  # fits EXPRESS
    cancelled = fakes.runs.cancel_run(OWNER, run.id)

    assert not finish(fakes, run, outcome, error="late")

    assert stored(fakes, run) == cancelled


@pytest.mark.parametrize(
    "status",
    [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED, RunStatus.CANCELLED],
)
def test_given_a_finished_run_when_cancelled_then_conflict_and_it_is_left_as_it_is(
    fakes: Fakes, status: RunStatus
) -> None:
    _, run = started_run(fakes)
    finish(fakes, run, status)
    ended = stored(fakes, run)

    with pytest.raises(Conflict) as raised:
        fakes.runs.cancel_run(OWNER, run.id)

    assert str(raised.value) == f"run {run.id} is already {status.value}"
    assert stored(fakes, run) == ended
    assert fakes.executor.stopped == {}


def test_given_someone_elses_run_when_cancelled_then_not_found_and_it_goes_on(
    fakes: Fakes,
) -> None:
    _, run = started_run(fakes)

    with pytest.raises(NotFound):
        fakes.runs.cancel_run("bob", run.id)

    assert stored(fakes, run).status is RunStatus.RUNNING
    assert fakes.executor.stopped == {}


# --- output and logs ------------------------------------------------------------------------


def succeed_with(fakes: Fakes, run: Run, output: str) -> None:
    """The runner keeps the output through the artifacts; the state machine records where."""
    kept = fakes.artifacts.save_output(run.job_id, run.id, 1, output, None)
    finish(
        fakes,
        run,
        RunStatus.SUCCEEDED,
        output=kept["output"] or None,
        output_location=kept["output_location"] or None,
    )


def test_given_a_small_output_when_the_run_succeeds_then_it_is_kept_in_the_run_and_served(
    fakes: Fakes,
) -> None:
    _, run = started_run(fakes)
    succeed_with(fakes, run, '{"result":{"colour":"blue"}}')

    assert stored(fakes, run).output_location is None
    assert fakes.runs.run_output(OWNER, run.id) == '{"result":{"colour":"blue"}}'
    assert fakes.artifacts.objects == {}


def test_given_an_output_over_32_kib_when_the_run_succeeds_then_it_is_kept_aside_and_served_whole(
    fakes: Fakes,
) -> None:
    job, run = started_run(fakes)
    big = json.dumps({"big": "x" * (r.INLINE_BYTES + 1000)})
    succeed_with(fakes, run, big)

    kept = stored(fakes, run)
    assert kept.output is None
    assert kept.output_location == f"s3://fake-outputs/runs/{job.id}/{run.id}/output-1.json"
    assert fakes.runs.run_output(OWNER, run.id) == big


def failed_run(fakes: Fakes) -> Run:
    _, run = started_run(fakes)
    finish(fakes, run, RunStatus.FAILED, error="TargetError: answered HTTP 503")
    return run


def manual_run(fakes: Fakes) -> Run:
    """A run triggered by hand, recorded SCHEDULED, not yet started."""
    return fakes.jobs.trigger_job(OWNER, fakes.jobs.create_job(OWNER, job_spec()).id)


def cancelled_run(fakes: Fakes) -> Run:
    return fakes.runs.cancel_run(OWNER, manual_run(fakes).id)


RUNS_WITHOUT_OUTPUT: dict[RunStatus, Callable[[Fakes], Run]] = {
    RunStatus.FAILED: failed_run,
    RunStatus.SCHEDULED: manual_run,
    RunStatus.CANCELLED: cancelled_run,
}


@pytest.mark.parametrize("status", list(RUNS_WITHOUT_OUTPUT))
def test_given_a_run_without_output_when_its_output_is_asked_for_then_not_found_says_there_is_none(
    fakes: Fakes, status: RunStatus
) -> None:
    run = RUNS_WITHOUT_OUTPUT[status](fakes)
    assert stored(fakes, run).status is status

    with pytest.raises(NotFound, match=f"has no output \\(status {status.value}\\)"):
        fakes.runs.run_output(OWNER, run.id)


def test_given_retried_attempts_when_the_logs_are_read_then_each_attempts_lines_come_in_order(
    fakes: Fakes,
) -> None:
    _, run = started_run(fakes)
    for attempt in (2, 1, 3):  # however they were appended
        lines = [log_line(attempt, f"line {n} of attempt {attempt}") for n in (1, 2)]
        fakes.artifacts.append_logs(run.job_id, run.id, attempt, lines, None)

    lines = fakes.runs.run_logs(OWNER, run.id)

    assert [line.split("] ", 1)[1] for line in lines] == [
        f"line {n} of attempt {a}" for a in (1, 2, 3) for n in (1, 2)
    ]


def test_given_someone_elses_run_when_its_output_or_logs_are_asked_for_then_not_found(
    fakes: Fakes,
) -> None:
    _, run = started_run(fakes)
    succeed_with(fakes, run, '{"ok":true}')
    line = log_line(1, "hello")
    fakes.artifacts.append_logs(run.job_id, run.id, 1, [line], None)

    with pytest.raises(NotFound):
        fakes.runs.run_output("bob", run.id)
    with pytest.raises(NotFound):
        fakes.runs.run_logs("bob", run.id)
    assert fakes.runs.run_logs(OWNER, run.id) == [line]
    assert fakes.runs.run_output(OWNER, run.id) == '{"ok":true}'


def no_client() -> NoReturn:
    raise AssertionError("a python target needs no AWS client")


def attempt_on_the_runner(fakes: Fakes, job: Job, run: Run, **extra: Any) -> AttemptResult:
    """The run's first attempt, as the runner function makes it (a python target: no AWS
    client)."""
    runner = Runner(
        artifacts=fakes.artifacts,
        lambda_client=no_client,
        ecs_client=no_client,
        logs_client=no_client,
        containers=ContainerSettings("logs", "execution-role", "task-role"),
    )
    return runner.attempt(
        AttemptRequest(
            job_id=job.id,
            run_id=run.id,
            scheduled_at=format_instant(run.scheduled_at),
            timeout_seconds=30,
            target=job.target,
            **extra,
        )
    )


def test_given_a_python_task_with_a_large_output_when_the_runner_attempts_it_then_the_output_and_log_are_served_whole(
    fakes: Fakes,
) -> None:
    big = "y" * (r.INLINE_BYTES + 1)
    job, run = started_run(
        fakes, target={"type": "python", "task": "chronoq.tasks:echo", "args": {"big": big}}
    )
    result = attempt_on_the_runner(fakes, job, run)
    # the state machine records the outcome, and with it the attempt's log lines
    finish(fakes, run, RunStatus.SUCCEEDED, output_location=result.output_location)
    fakes.artifacts.keep_logs(job.id, run.id, result.lines(), result.objects())

    assert result.output == ""
    assert result.output_location.endswith(f"/{job.id}/{run.id}/output-1.json")
    output = json.loads(fakes.runs.run_output(OWNER, run.id))
    assert output["result"] == {"args": {"big": big}, "job_id": job.id, "run_id": run.id}
    logs = fakes.runs.run_logs(OWNER, run.id)
    assert logs[0].endswith("[attempt 1] calling chronoq.tasks:echo")


@pytest.mark.parametrize("express", [False, True], ids=["standard", "express"])
def test_given_a_succeeding_attempt_when_the_runner_runs_it_then_its_log_lines_are_kept_once_by_the_runner_or_with_the_outcome(
    fakes: Fakes, express: bool
) -> None:
    """STANDARD: the runner keeps them (a stopped execution records nothing it answers);
    EXPRESS: they go back with the result, for MarkSucceeded's one write."""
    job, run = due_job(fakes, target={"type": "python", "task": "chronoq.tasks:echo", "args": {}})
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert mark_running(fakes, run)
    result = attempt_on_the_runner(fakes, job, run, logs_with_outcome=express)

    kept_by_the_runner = fakes.artifacts.read_logs(job.id, run.id)
    if express:
        assert kept_by_the_runner == []
        assert result.lines()[0].endswith("[attempt 1] calling chronoq.tasks:echo")
        assert result.log_bytes == sum(len(line.encode()) + 1 for line in result.lines())
    else:
        assert kept_by_the_runner[0].endswith("[attempt 1] calling chronoq.tasks:echo")
        assert (result.lines(), result.objects(), result.log_bytes) == ([], [], 0)
