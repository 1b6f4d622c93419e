"""Flow control in the worker, on the fakes: the runs of the owner's jobs that share a flow
key share its limits; a run over a limit is not failed nor dropped: it waits (recorded,
parked until a run of its flow gives a slot back, which wakes it) and starts as soon as the
limit allows; a run of a job without a flow costs nothing more."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq.domain import flow
from chronoq.domain import limits as lim
from chronoq.domain.flow import FlowState
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunMessage, RunStatus
from chronoq.domain.time import format_instant, utc_second
from chronoq.execution.contract import ExecutionInput
from chronoq.fakes import FakeExecutor, FakeStore
from chronoq.usecases.wake import Ended

from tests.builders import OWNER, Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import (
    LONGER_THAN_EXPRESS,
    CountingStore,
    mark_running,
    message,
    pending_run,
    stored,
)

ONE_AT_A_TIME = {"key": "partner-api", "max_running": 1}


@dataclass
class FlowCountingStore(CountingStore):
    """The fake store, noting every read and write of a flow item."""

    flow_calls: list[str] = field(default_factory=list)

    def get_flow(self, key: str) -> FlowState:
        self.flow_calls.append("get_flow")
        return super().get_flow(key)

    def save_flow(self, key: str, before: FlowState, after: FlowState, now: datetime) -> bool:
        self.flow_calls.append("save_flow")
        return super().save_flow(key, before, after, now)

    def release_flow(self, key: str, run_id: str) -> None:
        self.flow_calls.append("release_flow")
        super().release_flow(key, run_id)


def due_jobs(
    fakes: Fakes, count: int, flow_: dict[str, Any] | None, seconds: float = 2, **extra: Any
) -> list[tuple[Job, Run]]:
    """``count`` one-time jobs due in the same second, with ``flow_``."""
    due = seconds_from(fakes.clock(), seconds)
    made = []
    for _ in range(count):
        spec = job_spec({"type": "at", "at": due.isoformat()}, flow=flow_, **extra)
        job = fakes.jobs.create_job(OWNER, spec)
        made.append((job, pending_run(fakes, job)))
    return made


def end(fakes: Fakes, run_id: str) -> None:
    """What the state machine does at a run's end: its outcome, then ReleaseFlows (each flow
    item it holds a slot in), then its execution is over."""
    started = fakes.executor.started[run_id]
    fakes.store.update_run(
        started.job_id, run_id, status=RunStatus.SUCCEEDED, finished_at=fakes.clock()
    )
    for key in started.flows:
        fakes.store.release_flow(key, run_id)
    fakes.executor.finish(run_id)
    if started.slots:  # the notifier hears of its end
        fakes.waker.runs_ended([Ended.of(run_id, started.slots)])


def stored_id(fakes: Fakes, run_id: str) -> Run:
    return next(run for (_, rid), run in fakes.store.runs.items() if rid == run_id)


def resent(fakes: Fakes) -> list[RunMessage]:
    return [s.message for s in fakes.queues.sent]


def test_given_two_jobs_of_one_flow_with_max_running_1_when_their_runs_are_due_together_then_one_starts_and_the_other_is_parked_recorded_and_looks_again_only_much_later(
    fakes: Fakes,
) -> None:
    (job_a, run_a), (_, run_b) = due_jobs(fakes, 2, ONE_AT_A_TIME)
    fakes.queues.sent.clear()

    outcomes = fakes.starter.start_runs([message(fakes, run_a), message(fakes, run_b)])

    assert outcomes == ["started", "held"]
    key = flow.item_key(OWNER, "partner-api")
    assert fakes.executor.started[run_a.id].flows == [key]  # released at its end
    # noted on its record: its end wakes (its count among its owner's runs in flight after)
    assert fakes.executor.started[run_a.id].slots.split()[0] == key
    assert set(fakes.store.get_flow(key).holders) == {run_a.id}
    waiting = stored(fakes, run_b)  # visible: it waits, it was not dropped
    assert (waiting.status, waiting.held_at) == (RunStatus.SCHEDULED, run_b.scheduled_at)
    assert waiting.waiting_for == "a slot of its flow 'partner-api' (max_running 1 runs under way)"
    assert [w.id for w in fakes.store.waiting_runs(key, 10)] == [run_b.id]  # parked
    (again,) = fakes.queues.sent
    assert again.message.run_id == run_b.id
    assert (again.message.held_at, again.message.reserved) == (run_b.scheduled_at, False)
    # no per-second look: it looks again only in case its wake is lost
    assert again.delay_seconds == lim.FLOW_RELOOK_SECONDS
    assert job_a.flow is not None
    assert job_a.flow.key == "partner-api"


def test_given_a_parked_run_when_the_running_one_ends_then_its_end_wakes_it_and_it_starts_its_wait_recorded(
    fakes: Fakes,
) -> None:
    (_, run_a), (_, run_b) = due_jobs(fakes, 2, ONE_AT_A_TIME)
    fakes.queues.sent.clear()
    fakes.starter.start_runs([message(fakes, run_a), message(fakes, run_b)])
    (relook,) = resent(fakes)
    fakes.queues.sent.clear()
    fakes.clock.set(run_a.scheduled_at)
    assert mark_running(fakes, run_a)

    fakes.clock.advance(5)
    end(fakes, run_a.id)  # its end (the notifier hearing of it) wakes run_b, at once

    (woken,) = fakes.queues.sent
    assert (woken.message.run_id, woken.message.woken, woken.delay_seconds) == (
        run_b.id,
        True,
        0,
    )
    fakes.queues.sent.clear()
    fakes.clock.advance(1)
    assert fakes.starter.start_run(woken.message) == "started"
    started = fakes.executor.started[run_b.id]
    # (a flow that limits only its runs at once: the woken run starts in this very second)
    assert datetime.fromisoformat(started.starts_at) == utc_second(fakes.clock())
    fakes.clock.set(datetime.fromisoformat(started.starts_at))
    assert mark_running(fakes, run_b)
    run = stored(fakes, run_b)
    assert run.flow_wait_ms == 6000  # from when it first had to wait to its start
    assert run.lag_ms == 6000  # from its planned start: the wait is part of it
    assert fakes.store.waiting_runs(flow.item_key(OWNER, "partner-api"), 10) == []
    # its look-again message, later, finds it started: nothing more
    assert fakes.starter.start_run(relook) == "duplicate"
    assert fakes.queues.sent == []


def test_given_a_rate_when_a_burst_is_due_then_no_second_holds_more_starts_and_those_past_the_next_seconds_wait_for_theirs_on_the_queue(
    fakes: Fakes,
) -> None:
    runs = [run for _, run in due_jobs(fakes, 5, {"key": "api", "max_starts_per_second": 2})]
    fakes.queues.sent.clear()
    due = runs[0].scheduled_at
    fakes.clock.set(due - timedelta(seconds=1))  # delivered in the second before

    outcomes = fakes.starter.start_runs([message(fakes, run) for run in runs])

    assert outcomes.count("started") == 4
    assert outcomes.count("held") == 1
    seconds = Counter(e.starts_at for e in fakes.executor.started.values())
    assert seconds == {
        due.strftime("%Y-%m-%dT%H:%M:%SZ"): 2,
        (due + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ"): 2,
    }
    (later,) = fakes.queues.sent  # its reserved second, 3 s away: it waits for it queued
    assert later.message.reserved
    assert stored_id(fakes, later.message.run_id).waiting_for == (
        f"its flow's rate: starts at its second, {format_instant(due + timedelta(seconds=2))}"
    )
    assert later.message.not_before == due + timedelta(seconds=2)
    fakes.clock.set(due + timedelta(seconds=1))
    assert fakes.starter.start_run(later.message) == "started"  # its second, uncounted again
    assert fakes.executor.started[later.message.run_id].starts_at == (
        due + timedelta(seconds=2)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert fakes.store.get_flow(flow.item_key(OWNER, "api")).starts == 1


def test_given_jobs_without_a_flow_when_their_runs_start_then_no_flow_item_is_read_or_written_and_nothing_more_is_written(
    fakes: Fakes,
) -> None:
    fakes = Fakes(store=FlowCountingStore())
    assert isinstance(fakes.store, FlowCountingStore)
    runs = [run for _, run in due_jobs(fakes, 3, None)]
    job_writes, run_writes = len(fakes.store.job_writes), len(fakes.store.run_writes)

    assert fakes.starter.start_runs([message(fakes, run) for run in runs]) == ["started"] * 3

    assert fakes.store.flow_calls == []
    assert fakes.store.job_writes[job_writes:] == []
    assert fakes.store.run_writes[run_writes:] == []
    assert all(e.flows == [] for e in fakes.executor.started.values())


def test_given_a_flow_run_that_does_not_wait_when_it_starts_then_it_costs_one_read_and_one_write_of_the_flow_item_per_batch(
    fakes: Fakes,
) -> None:
    fakes = Fakes(store=FlowCountingStore())
    assert isinstance(fakes.store, FlowCountingStore)
    runs = [run for _, run in due_jobs(fakes, 3, {"key": "api", "max_running": 5})]

    assert fakes.starter.start_runs([message(fakes, run) for run in runs]) == ["started"] * 3

    assert fakes.store.flow_calls == ["get_flow", "save_flow"]  # for the three together


def test_given_the_same_key_of_two_owners_when_their_runs_are_due_then_each_owner_has_a_flow_of_their_own(
    fakes: Fakes,
) -> None:
    due = seconds_from(fakes.clock(), 2)
    messages = []
    for owner in ("alice", "bob"):
        job = fakes.jobs.create_job(
            owner, job_spec({"type": "at", "at": due.isoformat()}, flow=ONE_AT_A_TIME)
        )
        messages.append(message(fakes, pending_run(fakes, job)))

    assert fakes.starter.start_runs(messages) == ["started", "started"]


def test_given_a_duplicate_delivery_of_a_flow_run_that_ended_when_the_worker_gets_it_then_it_takes_no_slot(
    fakes: Fakes,
) -> None:
    ((_, run),) = due_jobs(fakes, 1, ONE_AT_A_TIME)
    queued = message(fakes, run)
    assert fakes.starter.start_run(queued) == "started"
    assert mark_running(fakes, run)
    end(fakes, run.id)

    assert fakes.starter.start_run(queued) == "duplicate"
    assert fakes.store.get_flow(flow.item_key(OWNER, "partner-api")).holders == {}


def test_given_duplicate_deliveries_of_a_waiting_flow_run_in_one_batch_when_admitted_then_it_holds_one_slot(
    fakes: Fakes,
) -> None:
    ((_, run),) = due_jobs(fakes, 1, {"key": "k", "max_running": 2})
    queued = message(fakes, run)

    assert fakes.starter.start_runs([queued, queued]) == ["started", "duplicate"]

    assert list(fakes.store.get_flow(flow.item_key(OWNER, "k")).holders) == [run.id]
    assert fakes.executor.starts == {run.id: 1}  # started once


def test_given_a_second_delivery_of_a_started_standard_flow_run_when_its_execution_refuses_it_then_the_run_keeps_its_slot(
    fakes: Fakes,
) -> None:
    """The execution of the first delivery holds the slot (the name is the run's id): the
    second delivery, refused by Step Functions, must not give it back while it runs."""
    (_, run), (_, other) = due_jobs(fakes, 2, ONE_AT_A_TIME, timeout_seconds=LONGER_THAN_EXPRESS)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    fakes.clock.advance(1)  # delivered again, before the execution marks the run RUNNING

    assert fakes.starter.start_run(message(fakes, run)) == "duplicate"

    assert list(fakes.store.get_flow(flow.item_key(OWNER, "partner-api")).holders) == [run.id]
    assert fakes.starter.start_run(message(fakes, other)) == "held"


@pytest.mark.parametrize("express", [True, False], ids=["express", "standard"])
def test_given_a_running_flow_run_when_cancelled_then_its_slot_is_given_back_when_its_execution_can_no_longer_run(
    fakes: Fakes, express: bool
) -> None:
    """STANDARD: the execution is stopped with the attempt: the slot is given back at once.
    EXPRESS: the attempt under way runs on (it cannot be stopped): the slot stays taken until
    its execution ends, so the flow never has more running than it allows."""
    extra = {} if express else {"timeout_seconds": LONGER_THAN_EXPRESS}
    ((_, run),) = due_jobs(fakes, 1, ONE_AT_A_TIME, **extra)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert mark_running(fakes, run)
    key = flow.item_key(OWNER, "partner-api")

    fakes.runs.cancel_run(OWNER, run.id)

    assert stored(fakes, run).status is RunStatus.CANCELLED
    assert (run.id in fakes.store.get_flow(key).holders) is express
    if express:
        end(fakes, run.id)  # (the state machine's last step, the outcome not recorded)
        assert fakes.store.get_flow(key).holders == {}


def test_given_a_worker_that_died_after_its_run_got_a_slot_when_the_flow_is_full_and_the_lease_is_past_then_the_slot_is_taken_back(
    fakes: Fakes,
) -> None:
    class Dying(FakeExecutor):
        def start_batch(self, inputs: list[ExecutionInput]) -> None:
            raise ConnectionError("the worker died before StartExecution")

    (_, lost), (_, next_run) = due_jobs(fakes, 2, ONE_AT_A_TIME)
    working = fakes.executor
    fakes.executor = Dying()
    results = fakes.starter.start_runs([message(fakes, lost)])
    assert isinstance(results[0], ConnectionError)  # its message comes back after 3 minutes
    fakes.executor = working
    key = flow.item_key(OWNER, "partner-api")
    assert set(fakes.store.get_flow(key).holders) == {lost.id}

    fakes.clock.advance(30)
    assert fakes.starter.start_run(message(fakes, next_run)) == "held"  # within the lease
    fakes.clock.advance(lim.FLOW_LEASE_SECONDS)
    assert fakes.starter.start_run(message(fakes, next_run)) == "started"  # taken back
    assert set(fakes.store.get_flow(key).holders) == {next_run.id}


def test_given_a_worker_that_died_after_its_run_got_a_slot_when_the_message_comes_back_in_time_then_the_run_starts_on_the_same_slot(
    fakes: Fakes,
) -> None:
    ((_, run),) = due_jobs(fakes, 1, ONE_AT_A_TIME)

    class Dying(FakeExecutor):
        def start_batch(self, inputs: list[ExecutionInput]) -> None:
            raise ConnectionError("the worker died before StartExecution")

    working, fakes.executor = fakes.executor, Dying()
    assert isinstance(fakes.starter.start_runs([message(fakes, run)])[0], ConnectionError)
    fakes.executor = working
    fakes.clock.advance(10)

    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert list(fakes.store.get_flow(flow.item_key(OWNER, "partner-api")).holders) == [run.id]


@pytest.mark.parametrize("concurrency", ["forbid", "replace"])
def test_given_an_exclusive_job_with_a_flow_when_its_run_waits_then_it_is_claimed_only_once_its_flow_lets_it_start(
    fakes: Fakes, concurrency: str
) -> None:
    (_, run_a), (job_b, run_b) = due_jobs(fakes, 2, ONE_AT_A_TIME, concurrency=concurrency)

    assert fakes.starter.start_runs([message(fakes, run_a), message(fakes, run_b)]) == [
        "started",
        "held",
    ]

    assert stored(fakes, run_a).status is RunStatus.QUEUED  # claimed, then started
    assert stored(fakes, run_b).status is RunStatus.SCHEDULED  # waiting: not claimed
    assert fakes.store.get_job(job_b.id).active_runs == frozenset()  # type: ignore[union-attr]


def test_given_a_store_that_fails_when_flows_are_asked_then_only_their_runs_messages_come_back(
    fakes: Fakes,
) -> None:
    class Failing(FakeStore):
        def get_flow(self, key: str) -> FlowState:
            raise ConnectionError("DynamoDB timed out")

    (_, gated), (_, plain) = due_jobs(fakes, 1, ONE_AT_A_TIME) + due_jobs(fakes, 1, None)
    failing = Failing()
    failing.jobs, failing.runs, failing.schedule = (
        fakes.store.jobs,
        fakes.store.runs,
        fakes.store.schedule,
    )
    fakes.store = failing

    results = fakes.starter.start_runs([message(fakes, gated), message(fakes, plain)])

    assert isinstance(results[0], ConnectionError)
    assert results[1] == "started"
