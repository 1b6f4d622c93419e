"""The heartbeat: a job the deployment runs on itself every minute, so that the whole path of a
run (the dispatcher's tick, a run queue, the worker, a state machine, the runner) is proven
alive continuously, which no alarm on one component can prove.

- It is owned by resources.SYSTEM_OWNER, an owner no token can have (the API refuses it as a
  caller): no user sees, changes or pays a quota for it.
- Its target is the built-in task ``chronoq.tasks:heartbeat``; the runner counts its runs'
  successes and start lag (chronoq.metrics: HeartbeatSucceeded, HeartbeatLag), which the
  stack's heartbeat alarms watch, and ``GET /status`` (``chronoq status``, the console) shows
  its last runs from the runs table.
- The dispatcher creates it, if it is missing, when invoked with ``{"heartbeat": "ensure"}``:
  the stack does so on deployment (a custom resource), chronoq local at each start. Creating
  it is idempotent (a conditional write): a job already there is kept as it is.
- It costs what a run costs, 1,440 times a day (EXPRESS, one python attempt: about $0.003 a
  day at the measured cost per run), and a run record each, expiring like any other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chronoq import resources as r
from chronoq.domain.jobs import Job, JobSpec, JobState
from chronoq.domain.runs import TERMINAL_STATUSES, Run, RunStatus
from chronoq.domain.schedules import anchored, first_fire
from chronoq.usecases.ports import JobStore, RunStore
from chronoq.usecases.timeindex import TimeIndex

#: The event key that asks the dispatcher to create the heartbeat job if it is missing.
ENSURE = "heartbeat"
TASK = "chronoq.tasks:heartbeat"
EVERY_SECONDS = 60
#: Runs looked at for the status (newest first): the last finished one is among them.
LOOKED_AT = 5


def spec() -> JobSpec:
    """What the heartbeat job is: every minute, the built-in task, one attempt (a failure is
    to be seen, not retried), started within a minute or MISSED (the next one is due)."""
    return JobSpec.model_validate(
        {
            "name": "chronoq heartbeat",
            "schedule": {"type": "rate", "every": "1 minute"},
            "target": {"type": "python", "task": TASK, "args": {}},
            "priority": "normal",
            "timeout_seconds": 30,
            "start_deadline_seconds": EVERY_SECONDS,
            "retry": {"max_attempts": 1},
        }
    )


def ensure(store: JobStore, index: TimeIndex, now: datetime) -> dict[str, Any]:
    """Create the heartbeat job and its first occurrence, unless it exists."""
    if store.get_job(r.HEARTBEAT_JOB_ID) is not None:
        return {ENSURE: "kept", "job_id": r.HEARTBEAT_JOB_ID}
    job_spec = spec()
    job_spec = job_spec.model_copy(update={"schedule": anchored(job_spec.schedule, now)})
    first = first_fire(job_spec.schedule, now)
    assert first is not None  # a rate schedule without an end always fires again
    job = Job.model_validate(
        {
            **job_spec.model_dump(),
            "id": r.HEARTBEAT_JOB_ID,
            "owner": r.SYSTEM_OWNER,
            "state": JobState.ACTIVE,
            "next_run_at": first,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
    )
    try:
        store.put_new_job(job)
    except Exception:
        if store.get_job(r.HEARTBEAT_JOB_ID) is None:
            raise
        return {ENSURE: "kept", "job_id": r.HEARTBEAT_JOB_ID}  # created meanwhile
    index.schedule([(job, first)], now)
    return {ENSURE: "created", "job_id": r.HEARTBEAT_JOB_ID, "first_run_at": first.isoformat()}


def _seen(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "id": run.id,
        "status": run.status.value,
        "scheduled_at": run.model_dump(mode="json")["scheduled_at"],
        "finished_at": run.model_dump(mode="json")["finished_at"],
        "lag_ms": run.lag_ms,
    }


def status(store: RunStore, now: datetime) -> dict[str, Any]:
    """The heartbeat's last finished run and last success, and what they say: ``ok``,
    ``late`` (its last success started more than HEARTBEAT_MAX_LAG_SECONDS after its time)
    or ``missing`` (no success for HEARTBEAT_MAX_SILENCE_SECONDS, or none yet)."""
    runs = store.list_runs(r.HEARTBEAT_JOB_ID, LOOKED_AT)
    finished = [run for run in runs if run.status in TERMINAL_STATUSES]
    last = finished[0] if finished else None
    success = next((run for run in finished if run.status is RunStatus.SUCCEEDED), None)
    since, lag = None, 0
    if success is not None and success.finished_at is not None:
        since = round((now - success.finished_at).total_seconds(), 1)
        lag = success.lag_ms or 0
    if since is None or since > r.HEARTBEAT_MAX_SILENCE_SECONDS:
        state = "missing"
    elif lag > r.HEARTBEAT_MAX_LAG_SECONDS * 1000:
        state = "late"
    else:
        state = "ok"
    return {
        "heartbeat": {
            "state": state,
            "job_id": r.HEARTBEAT_JOB_ID,
            "every_seconds": EVERY_SECONDS,
            "last_run": _seen(last),
            "last_success": _seen(success),
            "seconds_since_success": since,
            "max_lag_seconds": r.HEARTBEAT_MAX_LAG_SECONDS,
            "max_silence_seconds": r.HEARTBEAT_MAX_SILENCE_SECONDS,
        }
    }
