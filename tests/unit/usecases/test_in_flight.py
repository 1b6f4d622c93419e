"""An owner's runs in flight, on the fakes: every run that starts, whatever started it, is
counted among its owner's runs under way; one over ``max_runs_in_flight`` is not refused but
parked (recorded as waiting, looking again only much later) until an end gives a count back
and wakes it, within its start deadline; other owners never wait for it; a count that is
never given back (a dead worker, an execution that did not start) stops counting by itself."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from chronoq.domain import flow, inflight
from chronoq.domain import limits as lim
from chronoq.domain.inflight import InFlight
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Limits
from chronoq.domain.runs import Run, RunStatus
from chronoq.execution.contract import ExecutionInput
from chronoq.usecases.wake import Ended

from tests.builders import OWNER, Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import mark_running, message, pending_run, stored

KEY = inflight.item_key(OWNER)
LIMIT = 2


@pytest.fixture
def fakes() -> Fakes:
    return Fakes(limits=Limits(runs_in_flight=LIMIT))


def due(fakes: Fakes, count: int, owner: str = OWNER, **extra: Any) -> list[tuple[Job, Run]]:
    """``count`` one-time jobs of ``owner`` due in the same second."""
    at = seconds_from(fakes.clock(), 2)
    made = []
    for _ in range(count):
        spec = job_spec({"type": "at", "at": at.isoformat()}, **extra)
        job = fakes.jobs.create_job(owner, spec)
        made.append((job, pending_run(fakes, job)))
    fakes.queues.sent.clear()
    return made


def ends(fakes: Fakes, run: Run) -> None:
    """The run's end, as the notifier hears of it (the runs table's stream): its record's
    ``slots`` give its count back."""
    started = fakes.executor.started[run.id]
    fakes.store.update_run(run.job_id, run.id, status=RunStatus.SUCCEEDED)
    fakes.executor.finish(run.id)
    fakes.waker.runs_ended([Ended.of(run.id, started.slots)])


def test_given_an_owner_at_its_runs_in_flight_when_more_are_due_then_the_one_over_is_parked_and_another_owner_starts(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due(fakes, 3)]
    (_, bobs) = due(fakes, 1, owner="bob")[0]

    outcomes = fakes.starter.start_runs([message(fakes, run) for run in [*runs, bobs]])

    assert outcomes == ["started", "started", "held", "started"]
    assert fakes.store.get_in_flight(KEY).total == LIMIT
    assert fakes.store.get_in_flight(inflight.item_key("bob")).total == 1
    waiting = stored(fakes, runs[2])  # visible: it waits, it was not dropped nor failed
    assert waiting.status is RunStatus.SCHEDULED
    assert waiting.waiting_for == (
        f"one of its owner's {LIMIT} runs in flight (started, not ended) to end"
    )
    assert [w.id for w in fakes.store.waiting_runs(KEY, 10)] == [runs[2].id]
    (again,) = fakes.queues.sent  # no per-second look: only in case its wake is lost,
    assert again.message.run_id == runs[2].id  # or at its start deadline if sooner
    deadline = runs[2].scheduled_at + timedelta(seconds=lim.DEFAULT_START_DEADLINE_SECONDS + 1)
    relook = min(fakes.clock() + timedelta(seconds=lim.FLOW_RELOOK_SECONDS), deadline)
    assert again.message.not_before == relook
    assert fakes.store.get_in_flight(KEY).parked_at == int(fakes.clock().timestamp())


def test_given_a_parked_run_when_a_counted_run_ends_then_its_end_gives_the_count_back_and_wakes_it(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due(fakes, 3)]
    fakes.starter.start_runs([message(fakes, run) for run in runs])
    fakes.queues.sent.clear()
    fakes.clock.set(runs[0].scheduled_at)
    assert mark_running(fakes, runs[0])

    ends(fakes, runs[0])

    assert fakes.store.get_in_flight(KEY).total == 1
    (woken,) = fakes.queues.sent
    assert (woken.message.run_id, woken.message.woken) == (runs[2].id, True)
    assert fakes.starter.start_run(woken.message) == "started"
    assert fakes.store.get_in_flight(KEY).total == LIMIT
    assert mark_running(fakes, runs[2])  # (no longer parked)
    # no run waits any more: the next end gives its count back without looking for any
    fakes.queues.sent.clear()
    assert mark_running(fakes, runs[1])
    ends(fakes, runs[1])
    assert fakes.store.get_in_flight(KEY).parked_at == 0
    assert fakes.queues.sent == []


def test_given_runs_of_one_owner_due_together_when_only_some_fit_then_the_highest_priority_ones_start(
    fakes: Fakes,
) -> None:
    low = [run for _, run in due(fakes, 2, priority="low")]
    high = [run for _, run in due(fakes, 2, priority="high")]

    outcomes = fakes.starter.start_runs([message(fakes, run) for run in [*low, *high]])

    assert outcomes == ["held", "held", "started", "started"]
    assert set(fakes.executor.started) == {run.id for run in high}


def test_given_a_parked_run_when_no_count_comes_back_before_its_start_deadline_then_it_is_missed(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due(fakes, 3, start_deadline_seconds=30)]
    fakes.starter.start_runs([message(fakes, run) for run in runs])
    outcome, looks = "held", 0
    while outcome == "held" and looks < 10:  # its looks again, each FLOW_RELOOK_SECONDS
        (again,) = fakes.queues.sent
        fakes.queues.sent.clear()
        assert again.message.not_before is not None
        fakes.clock.set(again.message.not_before)
        outcome, looks = fakes.starter.start_run(again.message), looks + 1

    assert outcome == "missed"
    assert looks == 1  # at its deadline, sooner than FLOW_RELOOK_SECONDS
    assert stored(fakes, runs[2]).status is RunStatus.MISSED
    assert fakes.store.get_in_flight(KEY).total == LIMIT  # it never counted


def test_given_counts_a_dead_worker_left_when_their_runs_worst_case_end_is_past_then_they_stop_counting(
    fakes: Fakes,
) -> None:
    # two runs counted by a worker that died before starting them (their worst case: 60 s)
    left = inflight.end_bucket(fakes.clock(), 60)
    assert fakes.store.take_in_flight(KEY, {left: LIMIT}, LIMIT, fakes.clock()) is not None
    (_, early) = due(fakes, 1)[0]
    assert fakes.starter.start_run(message(fakes, early)) == "held"
    fakes.clock.advance(120 + inflight.BUCKET_GRACE_SECONDS + 1)
    (_, later) = due(fakes, 1)[0]

    assert fakes.starter.start_run(message(fakes, later)) == "started"

    count = fakes.store.get_in_flight(KEY)
    assert count.total == 1  # the dead worker's counts taken out, the new run counted
    assert left not in count.buckets


def test_given_a_counted_run_whose_execution_does_not_start_then_its_count_is_given_back(
    fakes: Fakes,
) -> None:
    (_, run) = due(fakes, 1)[0]

    def refuse(inputs: list[ExecutionInput]) -> None:
        raise ConnectionError("Step Functions unreachable")

    fakes.executor.start_batch = refuse  # type: ignore[method-assign]
    (outcome,) = fakes.starter.start_runs([message(fakes, run)])

    assert isinstance(outcome, ConnectionError)  # its message comes back later
    assert fakes.store.get_in_flight(KEY).total == 0


def test_given_a_standard_run_started_already_when_a_second_execution_is_refused_then_its_count_is_given_back(
    fakes: Fakes,
) -> None:
    (_, run) = due(fakes, 1, timeout_seconds=600)[0]  # longer than an EXPRESS execution
    first = message(fakes, run)
    assert fakes.starter.start_run(first) == "started"
    fakes.executor.finish(run.id)  # it ended: Step Functions refuses the name again

    assert fakes.starter.start_run(first) == "duplicate"

    assert fakes.store.get_in_flight(KEY).total == 1


def test_given_an_exclusive_job_when_its_run_waits_for_the_owners_count_then_it_is_claimed_only_once_it_fits(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due(fakes, 3, concurrency="forbid")]
    fakes.starter.start_runs([message(fakes, run) for run in runs])
    job = fakes.store.get_job(runs[2].job_id)

    assert job is not None
    assert job.active_runs == frozenset()  # not claimed while it waits
    assert stored(fakes, runs[2]).status is RunStatus.SCHEDULED


def test_given_a_flow_run_over_its_owners_count_when_parked_then_it_gives_its_flow_slot_back(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due(fakes, 3, flow={"key": "api", "max_running": 5})]

    fakes.starter.start_runs([message(fakes, run) for run in runs])

    holders = fakes.store.get_flow(flow.item_key(OWNER, "api")).holders
    assert set(holders) == {runs[0].id, runs[1].id}
    assert [w.id for w in fakes.store.waiting_runs(KEY, 10)] == [runs[2].id]
    assert fakes.store.get_in_flight(KEY) == InFlight(
        LIMIT, fakes.store.get_in_flight(KEY).buckets, int(fakes.clock().timestamp())
    )
