"""Never lose a run, never run one twice, step by step: a dispatcher tick that dies between any
two of its steps (every call of the tables, just before and just after each send: opening,
reading, sending, chaining on and closing a minute), and a user's write (create, change,
resume; a create in a minute already opened, whose run the API sends itself, chaining the job
on into the minute the tick opens) with the dispatcher's tick of the same minute getting in
between any two of its steps, or the write getting in between any two of the tick's. Each
time, once the system has run on its own for a few minutes, the run each job announced has
executed exactly once, and so has the next one of a recurring job."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobPatch

from tests.builders import OWNER, Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import (
    Interrupted,
    SteppingQueues,
    SteppingStore,
    settle,
    stepping_fakes,
)


def announced_run(job: Job) -> str:
    """The run the job's next_run_at announces."""
    assert job.next_run_at is not None
    return ids.run_id(job.id, job.next_run_at, job.generation)


def at_each_step(fakes: Fakes, act: Callable[[], Any], step: Callable[[int, str], None]) -> Any:
    """``act`` with ``step(n, name)`` called before its ``n``-th step (from 0)."""
    assert isinstance(fakes.store, SteppingStore)
    assert isinstance(fakes.queues, SteppingQueues)
    count = [0]

    def before(name: str) -> None:
        n = count[0]
        count[0] += 1
        step(n, name)

    fakes.store.before = fakes.queues.before = before
    try:
        return act()
    finally:
        fakes.store.before = fakes.queues.before = None


def steps_of(act: Callable[[Fakes], Any], prepare: Callable[[Fakes], Any]) -> list[str]:
    """The steps ``act`` takes, on fresh fakes prepared by ``prepare``."""
    fakes = stepping_fakes()
    prepare(fakes)
    names: list[str] = []
    at_each_step(fakes, lambda: act(fakes), lambda _, name: names.append(name))
    return names


# --- a tick that dies -------------------------------------------------------------------------


def due_in_the_coming_minute(fakes: Fakes) -> list[Job]:
    """Jobs due in the minute the next tick dispatches: one-time, recurring, exclusive."""
    fakes.clock.advance(10)  # 12:00:10: the tick dispatches 12:01
    return [
        fakes.jobs.create_job(OWNER, job_spec()),  # every minute: 12:01:00
        fakes.jobs.create_job(
            OWNER, job_spec({"type": "at", "at": "2026-11-26T12:01:20Z"}, concurrency="forbid")
        ),
        fakes.jobs.create_job(
            OWNER, job_spec({"type": "rate", "every": "1 minute"}, priority="high")
        ),
    ]


def tick(fakes: Fakes) -> None:
    fakes.dispatcher.dispatch()


TICK_STEPS = steps_of(tick, due_in_the_coming_minute)


def test_given_the_steps_of_a_tick_when_listed_then_opening_sending_chaining_and_closing_are_among_them() -> (
    None
):
    names = set(TICK_STEPS)
    assert {"open_minute", "schedule_page", "send", "sent", "close_minute"} <= names
    assert {"put_occurrences", "get_jobs"} <= names
    last_close = len(TICK_STEPS) - 1 - TICK_STEPS[::-1].index("close_minute")
    assert "sent" in TICK_STEPS[:last_close]  # (a minute with runs: sent, then closed)


@pytest.mark.parametrize(
    "dies_at", range(len(TICK_STEPS)), ids=[f"{n}-before-{s}" for n, s in enumerate(TICK_STEPS)]
)
def test_given_a_tick_that_dies_at_any_step_when_the_system_runs_on_then_each_announced_run_executes_once(
    dies_at: int,
) -> None:
    fakes = stepping_fakes()
    jobs = due_in_the_coming_minute(fakes)

    def die(n: int, name: str) -> None:
        if n == dies_at:
            raise Interrupted(f"the dispatcher died before {name}")

    with pytest.raises(Interrupted):
        at_each_step(fakes, lambda: tick(fakes), die)
    executed = settle(fakes)

    assert {announced_run(job): executed[announced_run(job)] for job in jobs} == {
        announced_run(job): 1 for job in jobs
    }
    assert max(executed.values()) == 1


# --- a user's write and the tick of its minute, interleaved -------------------------------------


@dataclass(frozen=True)
class Write:
    """A user's write of a job whose (new) next run falls in the minute the tick dispatches."""

    name: str
    #: what exists before it (a job, or nothing), on fakes at 12:00:10
    before: Callable[[Fakes], Job | None]
    #: the write; the job as it answers it
    act: Callable[[Fakes, Job | None], Job]


def _nothing(fakes: Fakes) -> None:
    return None


def _hourly(fakes: Fakes) -> Job:
    return fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "30 * * * *"}))


def _paused(fakes: Fakes) -> Job:
    job = fakes.jobs.create_job(OWNER, job_spec())
    return fakes.jobs.pause_job(OWNER, job.id)


def _create(fakes: Fakes, _: Job | None) -> Job:
    due = seconds_from(fakes.clock(), 60)  # 12:01:10
    return fakes.jobs.create_job(OWNER, job_spec({"type": "at", "at": due.isoformat()}))


def _reschedule(fakes: Fakes, job: Job | None) -> Job:
    assert job is not None
    patch = JobPatch.model_validate({"schedule": {"type": "cron", "expression": "1 * * * *"}})
    return fakes.jobs.update_job(OWNER, job.id, patch)


def _every_minute(fakes: Fakes) -> Job:
    return fakes.jobs.create_job(OWNER, job_spec())


def _new_priority(fakes: Fakes, job: Job | None) -> Job:
    assert job is not None  # (12:01:00 again, in a new generation)
    return fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"priority": "high"}))


def _resume(fakes: Fakes, job: Job | None) -> Job:
    assert job is not None
    return fakes.jobs.resume_job(OWNER, job.id)


def _next_minute_opening(fakes: Fakes) -> None:
    """The dispatcher has opened 12:01 (a tick at 12:00:10); by 12:00:56 the next tick opens
    12:02."""
    fakes.clock.advance(10)
    tick(fakes)
    fakes.clock.advance(36)


def _create_in_an_opened_minute(fakes: Fakes, _: Job | None) -> Job:
    """Every minute from 12:01:30: a minute already opened, so the API sends the first run
    itself and chains the job on to 12:02:30, in the minute the tick opens."""
    start = fakes.clock().replace(minute=1, second=30)
    return fakes.jobs.create_job(
        OWNER, job_spec({"type": "rate", "every": "1 minute", "start_at": start.isoformat()})
    )


WRITES = [
    Write("create", _nothing, _create),
    Write("reschedule", _hourly, _reschedule),
    Write("resume", _paused, _resume),
    Write("priority", _every_minute, _new_priority),
    Write("create-in-opened-minute", _next_minute_opening, _create_in_an_opened_minute),
]


def _ready(fakes: Fakes, write: Write) -> Job | None:
    existing = write.before(fakes)
    fakes.clock.advance(10)  # 12:00:10: the tick dispatches 12:01
    return existing


def _write_steps(write: Write) -> list[str]:
    fakes = stepping_fakes()
    existing = _ready(fakes, write)
    names: list[str] = []
    at_each_step(fakes, lambda: write.act(fakes, existing), lambda _, name: names.append(name))
    return names


def _tick_steps(write: Write) -> list[str]:
    return steps_of(tick, lambda fakes: _ready(fakes, write))


INTERLEAVINGS = [
    pytest.param(write, "tick inside the write", n, id=f"{write.name}-tick-before-{n}-{name}")
    for write in WRITES
    for n, name in enumerate([*_write_steps(write), "end"])
] + [
    pytest.param(
        write, "write inside the tick", n, id=f"{write.name}-inside-tick-before-{n}-{name}"
    )
    for write in WRITES
    for n, name in enumerate([*_tick_steps(write), "end"])
]


@pytest.mark.parametrize(("write", "order", "at"), INTERLEAVINGS)
def test_given_a_users_write_and_the_tick_of_its_minute_interleaved_at_any_step_when_the_system_runs_on_then_the_announced_run_executes_once(
    write: Write, order: str, at: int
) -> None:
    fakes = stepping_fakes()
    existing = _ready(fakes, write)
    done: dict[str, Job] = {}

    def the_write() -> None:
        done["job"] = write.act(fakes, existing)

    def the_tick() -> None:
        tick(fakes)

    outer, inner = (
        (the_write, the_tick) if order == "tick inside the write" else (the_tick, the_write)
    )
    ran_inner = [False]
    store, queues = fakes.store, fakes.queues
    assert isinstance(store, SteppingStore)
    assert isinstance(queues, SteppingQueues)

    def step(n: int, _: str) -> None:
        if n == at:
            hooks = store.before, queues.before
            store.before = queues.before = None  # (the inner one's steps are its own)
            try:
                inner()
            finally:
                store.before, queues.before = hooks
            ran_inner[0] = True

    at_each_step(fakes, outer, step)
    if not ran_inner[0]:
        inner()  # after the other one, whole
    job = done["job"]
    assert job.next_run_at is not None
    assert ids.minute_of(job.next_run_at) == ids.minute_of(fakes.clock() + timedelta(minutes=1))

    following = job.following(job.next_run_at)
    settled = fakes.clock() + timedelta(minutes=3)
    executed = settle(fakes)

    assert executed[announced_run(job)] == 1
    assert max(executed.values()) == 1
    if following is not None and following < settled:  # chained on to its next run: it runs
        assert executed[ids.run_id(job.id, following, job.generation)] == 1
