"""Small steps the use-case tests share: a job's pending run, the message that asks a worker
to start a run, and the state machine's writes played by hand."""

from __future__ import annotations

from typing import Any

from chronoq.domain import ids
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunMessage, RunStatus

from tests.builders import OWNER, Fakes, job_spec, message_for, seconds_from


def pending_run(fakes: Fakes, job: Job) -> Run:
    """The run planned at the job's next fire time."""
    assert job.next_run_at is not None
    run = fakes.store.get_run(job.id, ids.run_id(job.id, job.next_run_at, job.generation))
    assert run is not None
    return run


def due_job(fakes: Fakes, seconds: float = 2, **extra: Any) -> tuple[Job, Run]:
    """A one-time job due ``seconds`` from now, and its pending run."""
    due = seconds_from(fakes.clock(), seconds)
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "at", "at": due.isoformat()}, **extra))
    return job, pending_run(fakes, job)


def message(fakes: Fakes, run: Run) -> RunMessage:
    """The message that asks a worker to start ``run``, queued now (on the fake clock)."""
    return message_for(run, queued_at=fakes.clock())


def stored(fakes: Fakes, run: Run) -> Run:
    """The run as it is kept now."""
    kept = fakes.store.get_run(run.job_id, run.id)
    assert kept is not None
    return kept


def stored_job(fakes: Fakes, job: Job) -> Job:
    """The job as it is kept now."""
    kept = fakes.store.get_job(job.id)
    assert kept is not None
    return kept


def mark_running(fakes: Fakes, run: Run) -> None:
    """What the state machine's MarkRunning writes."""
    fakes.store.update_run(run.job_id, run.id, status=RunStatus.RUNNING, started_at=fakes.clock())


def finish(fakes: Fakes, run: Run, status: RunStatus, **changes: Any) -> None:
    """What the state machine writes when the run ends (its release of the run included)."""
    fakes.store.update_run(run.job_id, run.id, status=status, finished_at=fakes.clock(), **changes)
    fakes.store.release_run(run.job_id, run.id)


def sent_run_ids(fakes: Fakes) -> list[str]:
    """The run ids of every message sent so far, in the order sent."""
    return [s.message.run_id for s in fakes.queues.sent]
