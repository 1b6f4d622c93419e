"""Two deliveries of a run its flow holds back, in one worker batch: the run stays parked once,
and the batch's other runs, of any owner, start as if it were not there.

Two deliveries of one parked run come together when two runs holding slots of its flow end
one after the other before it starts (each end wakes the flow's first parked run: the same
one), or when SQS delivers a message twice. Both are due at the same second, so the worker
asks the flow about them together."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import flow
from chronoq.domain.runs import RunStatus

from tests.builders import Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import message, pending_run, stored
from tests.unit.usecases.test_flow import ONE_AT_A_TIME, due_jobs


def test_given_two_deliveries_of_a_parked_run_in_one_batch_when_its_flow_is_full_then_it_stays_parked_and_another_owners_run_in_the_batch_starts(
    fakes: Fakes,
) -> None:
    (_, running), (_, parked) = due_jobs(fakes, 2, ONE_AT_A_TIME)
    assert fakes.starter.start_runs([message(fakes, running)]) == ["started"]
    bobs = fakes.jobs.create_job(
        "bob",
        job_spec({"type": "at", "at": seconds_from(fakes.clock(), 2).isoformat()}),
    )
    bob_run = pending_run(fakes, bobs)
    assert bob_run.scheduled_at == parked.scheduled_at  # (the worker decides them together)
    again = message(fakes, parked)
    fakes.clock.advance(timedelta(seconds=1).total_seconds())

    outcomes = fakes.starter.start_runs([again, message(fakes, bob_run), again])

    assert outcomes[1] == "started"  # bob's run does not wait on alice's flow
    assert {outcomes[0], outcomes[2]} <= {"held", "duplicate"}
    key = flow.item_key("alice", "partner-api")  # (ONE_AT_A_TIME's key)
    assert list(fakes.store.get_flow(key).holders) == [running.id]  # it keeps its slot
    assert [w.id for w in fakes.store.waiting_runs(key, 10)] == [parked.id]  # parked once
    assert stored(fakes, parked).status is RunStatus.SCHEDULED


def test_given_a_wake_and_the_look_again_of_a_parked_run_in_one_batch_when_it_is_parked_again_then_its_look_again_is_sent_again(
    fakes: Fakes,
) -> None:
    (_, running), (_, parked) = due_jobs(fakes, 2, ONE_AT_A_TIME)
    fakes.starter.start_runs([message(fakes, running), message(fakes, parked)])
    (relook,) = [s.message for s in fakes.queues.sent if s.message.run_id == parked.id]
    fakes.queues.sent.clear()
    relook = relook.model_copy(update={"not_before": None})  # (both due now: asked together)
    woken = relook.model_copy(update={"woken": True})

    assert fakes.starter.start_runs([woken, relook]) == ["duplicate", "held"]

    (again,) = fakes.queues.sent  # the look-again chain goes on: the wake was the duplicate
    assert (again.message.run_id, again.message.woken) == (parked.id, False)
