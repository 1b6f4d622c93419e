"""Parked runs and their wake, on the fakes: a run its flow holds back is parked (no look
again before FLOW_RELOOK_SECONDS); a run that gave slots back wakes as many parked runs as
slots are free, higher priority first, then the longest waiting; a woken run that finds its
slot taken is parked again without a message of its own; nothing parked is lost."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import flow
from chronoq.domain import limits as lim
from chronoq.domain.limits import Limits
from chronoq.domain.runs import Run, RunStatus
from chronoq.usecases.wake import Ended

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import mark_running, message, stored
from tests.unit.usecases.test_flow import ONE_AT_A_TIME, due_jobs, end, resent

KEY = flow.item_key(OWNER, "partner-api")


def parked_behind_one(fakes: Fakes, priorities: list[str]) -> tuple[str, list[str]]:
    """One run of the flow running, and one parked run per priority, parked in that order
    (a second apart). Answers the running run's id and the parked runs' ids."""
    (_, first), *_ = due_jobs(fakes, 1, ONE_AT_A_TIME)
    fakes.starter.start_runs([message(fakes, first)])
    fakes.clock.set(first.scheduled_at)
    assert mark_running(fakes, first)
    parked = []
    for priority in priorities:
        fakes.clock.advance(1)
        ((_, run),) = due_jobs(fakes, 1, ONE_AT_A_TIME, seconds=1, priority=priority)
        assert fakes.starter.start_runs([message(fakes, run)]) == ["held"]
        parked.append(run.id)
    fakes.queues.sent.clear()
    return first.id, parked


def test_given_parked_runs_of_several_priorities_when_slots_are_given_back_one_by_one_then_they_are_woken_highest_priority_first_then_longest_waiting(
    fakes: Fakes,
) -> None:
    running, (low, normal_1, high, normal_2) = parked_behind_one(
        fakes, ["low", "normal", "high", "normal"]
    )
    woken_in_order = []
    for _ in range(4):
        end(fakes, running)
        (woken,) = resent(fakes)  # one slot given back: one run woken, no more
        fakes.queues.sent.clear()
        assert fakes.starter.start_run(woken) == "started"
        woken_in_order.append(woken.run_id)
        running = woken.run_id
        fakes.clock.advance(2)
        assert mark_running(fakes, stored_run(fakes, running))

    assert woken_in_order == [high, normal_1, normal_2, low]


def stored_run(fakes: Fakes, run_id: str) -> Run:
    return next(run for (_, rid), run in fakes.store.runs.items() if rid == run_id)


def test_given_a_woken_run_whose_slot_another_run_took_first_when_it_asks_then_it_is_parked_again_and_sends_nothing(
    fakes: Fakes,
) -> None:
    running, (waiting,) = parked_behind_one(fakes, ["normal"])
    end(fakes, running)
    (woken,) = resent(fakes)
    fakes.queues.sent.clear()
    ((_, newcomer),) = due_jobs(fakes, 1, ONE_AT_A_TIME, seconds=1)
    assert fakes.starter.start_runs([message(fakes, newcomer)]) == ["started"]

    assert fakes.starter.start_run(woken) == "parked"

    assert fakes.queues.sent == []  # its look-again message is on the queue already
    assert [w.id for w in fakes.store.waiting_runs(KEY, 10)] == [waiting]
    fakes.clock.set(newcomer.scheduled_at)
    assert mark_running(fakes, newcomer)
    end(fakes, newcomer.id)  # the next slot given back wakes it again
    assert [m.run_id for m in resent(fakes)] == [waiting]


def test_given_a_parked_run_when_its_look_again_comes_while_the_flow_is_still_full_then_it_stays_parked_and_looks_again_only_after_as_long(
    fakes: Fakes,
) -> None:
    _, (waiting,) = parked_behind_one(fakes, ["normal"])
    fakes.clock.advance(lim.FLOW_RELOOK_SECONDS)
    run = stored_run(fakes, waiting)
    relook = message(fakes, run).model_copy(
        update={"held_at": run.held_at, "not_before": fakes.clock()}
    )

    assert fakes.starter.start_run(relook) == "held"

    (again,) = fakes.queues.sent
    assert again.delay_seconds == lim.FLOW_RELOOK_SECONDS
    assert [w.id for w in fakes.store.waiting_runs(KEY, 10)] == [waiting]


def test_given_a_parked_run_when_its_start_deadline_passes_then_its_last_look_comes_at_the_deadline_and_it_is_missed_leaving_the_parked_runs(
    fakes: Fakes,
) -> None:
    (_, first), (job, late) = due_jobs(fakes, 2, ONE_AT_A_TIME, start_deadline_seconds=60)
    fakes.queues.sent.clear()
    fakes.starter.start_runs([message(fakes, first), message(fakes, late)])
    fakes.clock.set(first.scheduled_at)
    assert mark_running(fakes, first)
    (relook,) = fakes.queues.sent
    # its deadline, not FLOW_RELOOK_SECONDS away
    assert relook.message.not_before == relook.message.starts_at + timedelta(seconds=61)

    fakes.clock.set(relook.message.starts_at + timedelta(seconds=61))
    assert fakes.starter.start_run(relook.message) == "missed"

    assert stored(fakes, late).status is RunStatus.MISSED
    assert fakes.store.waiting_runs(KEY, 10) == []
    assert job.start_deadline_seconds == 60


def test_given_an_end_heard_before_its_slot_is_given_back_when_the_waker_counts_then_the_ended_run_counts_as_free(
    fakes: Fakes,
) -> None:
    running, (waiting,) = parked_behind_one(fakes, ["normal"])
    assert set(fakes.store.get_flow(KEY).holders) == {running}  # not given back yet

    assert fakes.waker.runs_ended([Ended.of(running, KEY)]) == 1

    assert [m.run_id for m in resent(fakes)] == [waiting]
    assert fakes.waker.runs_ended([Ended.of("another-run", KEY)]) == 0  # still full


def test_given_a_claimed_run_holding_a_slot_when_cancelled_before_it_started_then_the_parked_run_is_woken(
    fakes: Fakes,
) -> None:
    ((_, holder),) = due_jobs(fakes, 1, ONE_AT_A_TIME, concurrency="forbid")
    ((_, waiting),) = due_jobs(fakes, 1, ONE_AT_A_TIME)
    fakes.starter.start_runs([message(fakes, holder), message(fakes, waiting)])
    assert stored(fakes, holder).status is RunStatus.QUEUED  # claimed, not started
    fakes.queues.sent.clear()

    fakes.runs.cancel_run(OWNER, holder.id)

    assert [m.run_id for m in resent(fakes)] == [waiting.id]
    assert fakes.store.get_flow(KEY).holders == {}


def test_given_an_owner_at_its_runs_asked_for_under_way_when_another_trigger_comes_then_it_is_parked_scheduled_runs_are_not_and_an_end_wakes_it() -> (
    None
):
    fakes = Fakes(limits=Limits(asked_runs_in_flight=2))
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "0 0 1 1 *"}))
    fakes.queues.sent.clear()
    triggered = [fakes.jobs.trigger_job(OWNER, job.id) for _ in range(3)]
    messages = [s.message for s in fakes.queues.sent]
    fakes.queues.sent.clear()
    ((_, scheduled),) = due_jobs(fakes, 1, None)

    outcomes = fakes.starter.start_runs([*messages, message(fakes, scheduled)])

    assert outcomes == ["started", "started", "held", "started"]
    owner = flow.owner_item_key(OWNER)
    assert set(fakes.store.get_flow(owner).holders) == {triggered[0].id, triggered[1].id}
    assert stored(fakes, triggered[2]).waiting_for == (
        "one of its owner's 2 runs asked for (manual, re-runs, backfills) under way at once to end"
    )
    fakes.queues.sent.clear()
    fakes.clock.advance(1)
    assert mark_running(fakes, triggered[0])
    end(fakes, triggered[0].id)
    assert [m.run_id for m in resent(fakes)] == [triggered[2].id]


def test_given_two_runs_of_a_flow_ending_in_one_batch_when_heard_together_then_two_parked_runs_are_woken_not_the_first_twice(
    fakes: Fakes,
) -> None:
    two = {"key": "partner-api", "max_running": 2}
    (_, a), (_, b), (_, c), (_, d) = due_jobs(fakes, 4, two)
    fakes.starter.start_runs([message(fakes, run) for run in (a, b, c, d)])
    fakes.queues.sent.clear()

    assert fakes.waker.runs_ended([Ended.of(a.id, KEY), Ended.of(b.id, KEY)]) == 2

    assert sorted(m.run_id for m in resent(fakes)) == sorted([c.id, d.id])
