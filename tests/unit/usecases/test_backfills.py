"""Backfills on the fakes: every fire time of a past range run once, as ``backfill`` runs,
at most ``max_in_flight`` under way at once, the overlap policy applied; listable, followed,
cancellable as a whole; bounded."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq.domain import flow
from chronoq.domain import limits as lim
from chronoq.domain.backfills import Backfill, BackfillRequest, BackfillState
from chronoq.domain.errors import Conflict, InvalidRequest, LimitExceeded, NotFound
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Limits, Usage
from chronoq.domain.runs import Run, RunStatus, Trigger

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import mark_running


def every_ten_minutes(fakes: Fakes, **extra: Any) -> Job:
    return fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "*/10 * * * *"}, **extra)
    )


def hours_back(fakes: Fakes, hours: float, until: float = 0) -> BackfillRequest:
    now = fakes.clock()
    return BackfillRequest.model_validate(
        {
            "from": (now - timedelta(hours=hours)).isoformat(),
            "to": (now - timedelta(hours=until)).isoformat(),
        }
    )


def take_and_start(fakes: Fakes) -> list[str]:
    """Deliver every message sent so far to the worker: what became of each."""
    outcomes = fakes.starter.start_runs(fakes.queues.take())
    return [str(o) for o in outcomes]


def run_everything(fakes: Fakes, job: Job) -> None:
    """Deliver, start and end runs until nothing is left waiting (a second at a time), their
    ends counted as the notifier counts them."""
    for _ in range(200):
        fakes.count_run_ends()
        messages = fakes.queues.take()
        if not messages and not _running(fakes, job):
            return
        fakes.starter.start_runs(messages)
        for run_id, started in list(fakes.executor.started.items()):
            if run_id in fakes.executor.finished or started.job_id != job.id:
                continue
            mark_running(fakes, fakes.store.runs[(job.id, run_id)])
            fakes.store.update_run(job.id, run_id, status=RunStatus.SUCCEEDED)
            for key in started.flows:  # the state machine's ReleaseFlows
                fakes.store.release_flow(key, run_id)
            fakes.executor.finish(run_id)
        fakes.clock.advance(1)
    raise AssertionError("the backfill never settled")


def _running(fakes: Fakes, job: Job) -> bool:
    return any(
        r.status in (RunStatus.SCHEDULED, RunStatus.QUEUED, RunStatus.RUNNING)
        for (j, _), r in fakes.store.runs.items()
        if j == job.id
    )


def backfill_runs(fakes: Fakes, job: Job) -> list[Run]:
    return sorted(
        (r for (j, _), r in fakes.store.runs.items() if j == job.id and r.backfill_id),
        key=lambda r: r.scheduled_at,
    )


def test_given_a_past_range_when_backfilled_then_the_first_runs_are_made_and_sent_now_as_backfill_runs_of_their_fire_times(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    fakes.queues.sent.clear()

    backfill = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 3))

    assert (backfill.state, backfill.total, backfill.max_in_flight) == (
        BackfillState.RUNNING,
        18,
        lim.BACKFILL_MAX_IN_FLIGHT,
    )
    made = backfill_runs(fakes, job)
    assert len(made) == lim.BACKFILL_MAX_IN_FLIGHT  # the others follow as these start
    first = fakes.clock() - timedelta(hours=3)
    assert [run.scheduled_at for run in made] == [
        first + timedelta(minutes=10 * i) for i in range(lim.BACKFILL_MAX_IN_FLIGHT)
    ]
    for run in made:
        assert (run.trigger, run.status, run.backfill_id) == (
            Trigger.BACKFILL,
            RunStatus.SCHEDULED,
            backfill.id,
        )
        assert run.starts_at == fakes.clock()  # it starts now: no lag counted from the past
    assert [s.message.run_id for s in fakes.queues.sent] == [run.id for run in made]
    assert {s.delay_seconds for s in fakes.queues.sent} == {0}


def test_given_a_backfill_when_its_runs_start_and_end_then_every_fire_time_runs_once_and_never_more_than_max_in_flight_at_once(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    fakes.queues.sent.clear()
    backfill = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 5))
    key = flow.backfill_item_key(OWNER, backfill.id)
    peak = 0
    original = fakes.store.save_flow

    def noting(k: str, before: flow.FlowState, after: flow.FlowState, now: datetime) -> bool:
        nonlocal peak
        if k == key:
            peak = max(peak, len(after.holders))
        return original(k, before, after, now)

    fakes.store.save_flow = noting  # type: ignore[method-assign,assignment]

    run_everything(fakes, job)

    runs = backfill_runs(fakes, job)
    assert len(runs) == backfill.total == 30
    assert Counter(run.scheduled_at for run in runs).most_common(1)[0][1] == 1
    assert {run.status for run in runs} == {RunStatus.SUCCEEDED}
    assert peak == lim.BACKFILL_MAX_IN_FLIGHT
    view = fakes.backfills.get(OWNER, job.id, backfill.id)
    assert (view["state"], view["runs"]) == ("COMPLETED", {"SUCCEEDED": 30})


def test_given_a_forbid_job_when_backfilled_then_its_runs_go_one_at_a_time_and_skip_none_of_their_own(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes, concurrency="forbid")
    fakes.queues.sent.clear()
    backfill = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 1))

    assert backfill.max_in_flight == 1
    run_everything(fakes, job)
    assert [r.status for r in backfill_runs(fakes, job)] == [RunStatus.SUCCEEDED] * 6


def test_given_a_forbid_job_with_a_run_under_way_when_a_backfill_run_comes_then_the_policy_skips_it_and_the_backfill_goes_on(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes, concurrency="forbid")
    manual = fakes.jobs.trigger_job(OWNER, job.id)
    fakes.starter.start_runs(fakes.queues.take())
    assert mark_running(fakes, manual)
    backfill = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 0.5))

    assert take_and_start(fakes) == ["skipped"]

    first, *_ = backfill_runs(fakes, job)
    assert first.status is RunStatus.SKIPPED
    assert len(backfill_runs(fakes, job)) == 2  # the next one made all the same
    assert backfill.total == 3


def test_given_a_backfill_run_past_its_jobs_start_deadline_when_started_then_it_is_not_missed(
    fakes: Fakes,
) -> None:
    """(Its fire time is long past on purpose: its own deadline counts from when it was made.)"""
    job = every_ten_minutes(fakes, start_deadline_seconds=1)
    fakes.queues.sent.clear()
    fakes.backfills.create(OWNER, job.id, hours_back(fakes, 48, 47))
    fakes.clock.advance(lim.DEFAULT_REQUESTED_START_DEADLINE_SECONDS)  # its own, to the second

    assert set(take_and_start(fakes)) == {"started"}


def test_given_a_backfill_run_past_its_own_start_deadline_when_a_worker_takes_it_then_it_is_missed(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    fakes.queues.sent.clear()
    request = hours_back(fakes, 1).model_copy(update={"start_deadline_seconds": 60})
    backfill = fakes.backfills.create(OWNER, job.id, request)
    fakes.clock.advance(61)

    assert set(take_and_start(fakes)) == {"missed"}
    runs = backfill_runs(fakes, job)
    assert {run.status for run in runs} == {RunStatus.MISSED}
    assert all("(60 s) of its request" in str(run.reason) for run in runs)
    assert backfill.start_deadline_seconds == 60


def test_given_a_running_backfill_when_cancelled_then_no_further_run_is_made_and_its_runs_not_ended_are_cancelled(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    fakes.queues.sent.clear()
    backfill = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 5))
    assert set(take_and_start(fakes)) == {"started"}  # ten under way, ten more made, waiting
    for run in backfill_runs(fakes, job)[:3]:
        mark_running(fakes, run)

    view = fakes.backfills.cancel(OWNER, job.id, backfill.id)

    assert view["state"] == "CANCELLED"
    assert fakes.count_run_ends() == 20  # (as the notifier hears of their ends)
    view = fakes.backfills.get(OWNER, job.id, backfill.id)
    assert (view["ended"], view["runs"]) == (20, {"CANCELLED": 20})
    assert set(take_and_start(fakes)) <= {"cancelled", "duplicate"}  # the waiting ones
    assert len(backfill_runs(fakes, job)) == 20  # none made since
    with pytest.raises(Conflict):
        fakes.backfills.cancel(OWNER, job.id, backfill.id)


def test_given_backfills_of_a_job_when_listed_then_newest_first_and_only_the_owners(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    first = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 2, 1))
    fakes.clock.advance(1)
    second = fakes.backfills.create(OWNER, job.id, hours_back(fakes, 1))

    listing = fakes.backfills.page(OWNER, job.id)

    assert [b.id for b in listing.items] == [second.id, first.id]
    with pytest.raises(NotFound):
        fakes.backfills.page("bob", job.id)
    with pytest.raises(NotFound):
        fakes.backfills.get("bob", job.id, first.id)


@pytest.mark.parametrize(
    ("hours", "until", "field"),
    [
        (1, 2, "to"),  # to before from
        (1, -1, "to"),  # to in the future
        (24 * (lim.MAX_BACKFILL_DAYS + 1), 24 * lim.MAX_BACKFILL_DAYS, "from"),  # too far back
        (0.05, 0, "from"),  # no fire time in 3 minutes of a ten-minute schedule
    ],
)
def test_given_a_range_out_of_bounds_when_backfilled_then_422_names_the_field_and_nothing_is_made(
    fakes: Fakes, hours: float, until: float, field: str
) -> None:
    job = every_ten_minutes(fakes)
    fakes.queues.sent.clear()

    with pytest.raises(InvalidRequest) as refused:
        fakes.backfills.create(OWNER, job.id, hours_back(fakes, hours, until))

    assert refused.value.field == field
    assert fakes.store.backfills == {}
    assert fakes.queues.sent == []


def test_given_a_range_with_more_fire_times_than_allowed_when_backfilled_then_422_names_to(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    minutes = lim.MAX_BACKFILL_RUNS + 1

    with pytest.raises(InvalidRequest) as refused:
        fakes.backfills.create(OWNER, job.id, hours_back(fakes, minutes / 60))

    assert refused.value.field == "to"
    fakes.backfills.create(OWNER, job.id, hours_back(fakes, lim.MAX_BACKFILL_RUNS / 60))


def test_given_a_forbid_backfill_whose_run_is_under_way_when_its_next_run_comes_then_it_waits_for_it_rather_than_skip(
    fakes: Fakes,
) -> None:
    """A backfill's next run is made (and sent) as the one before it starts: it may reach a
    worker while that one still runs, and waits for it (its backfill's one slot) instead of
    being skipped by the job's own policy."""
    job = every_ten_minutes(fakes, concurrency="forbid")
    fakes.queues.sent.clear()
    fakes.backfills.create(OWNER, job.id, hours_back(fakes, 0.5))
    assert take_and_start(fakes) == ["started"]
    first, second = backfill_runs(fakes, job)
    assert mark_running(fakes, first)

    outcomes = take_and_start(fakes)  # the second, while the first runs

    assert fakes.store.runs[(job.id, second.id)].status is RunStatus.SCHEDULED, outcomes
    run_everything(fakes, job)
    assert [r.status for r in backfill_runs(fakes, job)] == [RunStatus.SUCCEEDED] * 3


def test_given_two_backfills_asked_for_at_once_when_only_one_fits_then_the_other_is_refused() -> (
    None
):
    """Another request of the owner takes the job's last slot between this one's read of the
    usage and its write: the write, at the version read, is refused; read again, the limit
    refuses it."""
    fakes = Fakes(limits=Limits(running_backfills_per_job=1))
    job = every_ten_minutes(fakes)
    original = fakes.store.start_backfill

    def meanwhile(backfill: Backfill, usage: Usage) -> bool:
        fakes.store.start_backfill = original  # type: ignore[method-assign]
        fakes.backfills.create(OWNER, job.id, hours_back(fakes, 1))
        return original(backfill, usage)

    fakes.store.start_backfill = meanwhile  # type: ignore[method-assign]

    with pytest.raises(LimitExceeded) as refused:
        fakes.backfills.create(OWNER, job.id, hours_back(fakes, 2))

    assert refused.value.limit == "max_running_backfills_per_job"
    assert len(fakes.store.backfills) == 1
