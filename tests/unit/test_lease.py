"""A worker's claim on a run (forbid and replace jobs): how long it lasts, held to the other
settings it depends on, as the resources define them. It must outlast the worker that made
it (no second delivery starts the run while its worker may still be starting it), and lapse
before SQS delivers the message again after a worker died holding it (or the run is never
started)."""

from __future__ import annotations

import pytest
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.usecases.start import ClaimHeld

from tests.builders import Fakes
from tests.unit.usecases.helpers import due_job, message, stored, visibility_timeout

WORKER_SECONDS = r.WORKER_FUNCTION.timeout_seconds


def test_given_the_worker_function_when_its_timeout_is_compared_then_a_claim_outlasts_it() -> None:
    assert r.CLAIM_LEASE_SECONDS > WORKER_SECONDS


@pytest.mark.parametrize("queue", r.QUEUES, ids=lambda q: q.priority)
def test_given_a_run_queue_when_its_visibility_timeout_is_compared_then_a_claim_made_in_a_worker_has_lapsed_when_the_message_comes_back(
    queue: r.Queue,
) -> None:
    # a worker claims the run at most its timeout after receiving the message; the message
    # comes back (if the worker did not delete it) the visibility timeout after it was received
    assert queue.visibility_timeout_seconds >= r.CLAIM_LEASE_SECONDS + WORKER_SECONDS
    # (and the event source mapping's own rule: at least six times the function's timeout)
    assert queue.visibility_timeout_seconds >= 6 * WORKER_SECONDS


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


def test_given_a_claimed_run_when_delivered_again_while_its_worker_may_still_be_starting_it_then_it_is_handed_back(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes, concurrency="forbid")
    now = fakes.clock()
    assert fakes.store.claim_run(job, run, now, now, exclusive=True) == "claimed"

    fakes.clock.advance(WORKER_SECONDS)  # the claiming worker's invocation may last this long
    with pytest.raises(ClaimHeld):
        fakes.starter.start_run(message(fakes, run))

    assert fakes.executor.starts == {}


def test_given_a_worker_that_died_holding_a_claim_when_sqs_delivers_the_message_again_then_the_run_starts(
    fakes: Fakes,
) -> None:
    job, run = due_job(fakes, concurrency="replace")
    received = fakes.clock()
    fakes.clock.advance(WORKER_SECONDS)  # claimed as late as a worker can
    now = fakes.clock()
    assert fakes.store.claim_run(job, run, now, now, exclusive=True) == "claimed"

    fakes.clock.set(received)  # the message comes back the visibility timeout after it came
    fakes.clock.advance(visibility_timeout(run))
    assert fakes.starter.start_run(message(fakes, run)) == "started"

    assert fakes.executor.starts == {run.id: 1}
    assert stored(fakes, run).status is RunStatus.QUEUED
