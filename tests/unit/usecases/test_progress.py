"""A backfill's progress and its owner's usage, counted as runs end (usecases.progress, the
notifier's part) on the fakes: whatever the stream does with the ends (delivers one twice, in
another batch, out of order), each counts once, the counters are the runs' statuses, and the
backfill is COMPLETED (and leaves its owner's usage) exactly when its last run has ended."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from chronoq.domain.backfills import Backfill, BackfillRequest, BackfillState
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Limits
from chronoq.domain.reruns import RerunRequest
from chronoq.domain.runs import TERMINAL_STATUSES, Run, RunStatus
from chronoq.usecases.backfills import BackfillOperations
from chronoq.usecases.limits import owner_usage
from chronoq.usecases.ports import Tally, TallyRefused
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import OWNER, Fakes, job_spec

#: A backfill of an hour of a ten-minute schedule: six fire times, all made at once.
FIRES = 6
FINAL = sorted(TERMINAL_STATUSES)


def every_ten_minutes(fakes: Fakes, owner: str = OWNER) -> Job:
    return fakes.jobs.create_job(owner, job_spec({"type": "cron", "expression": "*/10 * * * *"}))


def an_hour_back(fakes: Fakes) -> BackfillRequest:
    now = fakes.clock()
    return BackfillRequest.model_validate(
        {"from": (now - timedelta(hours=1)).isoformat(), "to": now.isoformat()}
    )


def its_runs(fakes: Fakes, backfill: Backfill) -> list[Run]:
    return sorted(
        (r for r in fakes.store.runs.values() if r.backfill_id == backfill.id),
        key=lambda r: r.scheduled_at,
    )


def kept(fakes: Fakes, backfill: Backfill) -> Backfill:
    found = fakes.store.get_backfill(backfill.job_id, backfill.id)
    assert found is not None
    return found


def end(fakes: Fakes, run: Run, status: RunStatus) -> None:
    """The run ends in ``status`` (a write, seen by the stream)."""
    fakes.store.update_run(run.job_id, run.id, status=status, finished_at=fakes.clock())


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(st.sampled_from(FINAL), min_size=FIRES, max_size=FIRES),
    copies=st.lists(st.integers(1, 3), min_size=FIRES, max_size=FIRES),
    order=st.randoms(use_true_random=False),
    cuts=st.lists(st.integers(1, 4), min_size=1, max_size=8),
)
def test_given_run_ends_delivered_twice_and_out_of_order_when_counted_then_each_counts_once(
    statuses: list[RunStatus], copies: list[int], order: random.Random, cuts: list[int]
) -> None:
    fakes = Fakes()
    job = every_ten_minutes(fakes)
    backfill = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    runs = its_runs(fakes, backfill)
    assert len(runs) == backfill.total == FIRES
    for run, status in zip(runs, statuses, strict=True):
        end(fakes, run, status)
        fakes.store.note_notification(run.job_id, run.id, "sns", "published")  # a later write
    heard = fakes.store.runs.take_ends()
    ids = [run.id for run in runs]
    deliveries = [e for e in heard for _ in range(copies[ids.index(e.run_id)])]
    order.shuffle(deliveries)

    counted = 0
    seen: set[str] = set()
    while deliveries:
        batch, deliveries = deliveries[: cuts[0]], deliveries[cuts[0] :]
        cuts = cuts[1:] or [len(deliveries) or 1]
        counted += fakes.progress.count(batch)
        seen |= {e.run_id for e in batch}
        now = kept(fakes, backfill)
        assert now.ended == len(seen)
        assert now.state is (
            BackfillState.COMPLETED if len(seen) == FIRES else BackfillState.RUNNING
        )

    final = kept(fakes, backfill)
    assert counted == final.ended == FIRES
    assert final.runs == dict(Counter(s.value for s in statuses))
    assert final.finished_at == fakes.clock()
    assert fakes.store.get_usage(OWNER).running == {}


def test_given_the_ends_of_a_backfill_paced_through_the_worker_when_counted_then_it_completes_once_all_have_ended(
    fakes: Fakes,
) -> None:
    """Runs ended by the worker without starting (missed, skipped, cancelled) count too."""
    job = every_ten_minutes(fakes)
    request = an_hour_back(fakes).model_copy(update={"start_deadline_seconds": 60})
    backfill = fakes.backfills.create(OWNER, job.id, request)
    fakes.clock.advance(61)  # past their start deadline when a worker takes them

    outcomes = fakes.starter.start_runs(fakes.queues.take())

    assert outcomes == ["missed"] * FIRES
    assert fakes.count_run_ends() == FIRES
    done = kept(fakes, backfill)
    assert (done.state, done.ended, done.runs) == (
        BackfillState.COMPLETED,
        FIRES,
        {"MISSED": FIRES},
    )
    view = fakes.backfills.get(OWNER, job.id, backfill.id)
    assert (view["state"], view["ended"], view["total"]) == ("COMPLETED", FIRES, FIRES)


def test_given_a_cancelled_backfill_when_its_runs_end_then_they_are_counted_and_it_stays_cancelled(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    backfill = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    assert fakes.store.get_usage(OWNER).running == {job.id: frozenset({backfill.id})}

    fakes.backfills.cancel(OWNER, job.id, backfill.id)

    assert fakes.store.get_usage(OWNER).running == {}  # left with the cancel
    assert fakes.count_run_ends() == FIRES
    view = fakes.backfills.get(OWNER, job.id, backfill.id)
    assert (view["state"], view["ended"], view["runs"]) == ("CANCELLED", FIRES, {"CANCELLED": 6})


def test_given_reruns_when_they_end_then_their_owners_usage_counts_them_down_once(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    backfill = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    for run in its_runs(fakes, backfill):
        end(fakes, run, RunStatus.FAILED)
    fakes.count_run_ends()
    now = fakes.clock()
    request = RerunRequest.model_validate(
        {"from": (now - timedelta(hours=2)).isoformat(), "to": now.isoformat()}
    )

    reruns = fakes.reruns.rerun_job(OWNER, job.id, request)

    assert len(reruns) == FIRES
    assert fakes.store.get_usage(OWNER).reruns == FIRES
    for run in reruns[:4]:
        end(fakes, run, RunStatus.SUCCEEDED)
    ends = fakes.store.runs.take_ends()
    fakes.progress.count(ends)
    fakes.progress.count(ends)  # delivered again
    assert fakes.store.get_usage(OWNER).reruns == FIRES - 4


def test_given_a_backfill_kept_before_counting_when_read_then_its_progress_comes_from_its_runs_and_its_runs_are_only_marked(
    fakes: Fakes,
) -> None:
    """A backfill stored before its runs' ends were counted (no counters): GET counts its
    runs; once all have ended it is COMPLETED (listing settles it too); the counting of its
    runs' ends marks them and adds nothing to it."""
    job = every_ten_minutes(fakes)
    made = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    legacy = kept(fakes, made).model_copy(update={"ended": None, "runs": {}})
    fakes.store.put_backfill(legacy)
    runs = its_runs(fakes, made)
    for run in runs[:2]:
        end(fakes, run, RunStatus.SUCCEEDED)

    view = fakes.backfills.get(OWNER, job.id, made.id)
    assert (view["state"], view["ended"], view["runs"]) == ("RUNNING", 2, {"SUCCEEDED": 2})
    fakes.count_run_ends()
    assert kept(fakes, made).ended is None  # marked, not counted on it

    for run in runs[2:]:
        end(fakes, run, RunStatus.FAILED)
    (listed,) = fakes.backfills.page(OWNER, job.id).items
    assert (listed.state, listed.ended, listed.runs) == (
        BackfillState.COMPLETED,
        FIRES,
        {"FAILED": 4, "SUCCEEDED": 2},
    )
    assert kept(fakes, made).state is BackfillState.COMPLETED


def test_given_a_job_with_a_running_backfill_when_deleted_then_the_backfill_is_cancelled_and_leaves_the_usage(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes)
    backfill = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))

    fakes.jobs.delete_job(OWNER, job.id)

    assert kept(fakes, backfill).state is BackfillState.CANCELLED
    assert fakes.store.get_usage(OWNER).running == {}


@pytest.mark.parametrize("duplicates", [1, 2])
def test_given_many_ends_of_one_backfill_in_one_batch_when_counted_then_they_are_counted_in_transactions_of_at_most_100_items(
    fakes: Fakes, duplicates: int
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    now = fakes.clock()
    request = BackfillRequest.model_validate(
        {"from": (now - timedelta(minutes=250)).isoformat(), "to": now.isoformat()}
    )
    backfill = fakes.backfills.create(OWNER, job.id, request)
    backfill = kept(fakes, backfill)
    runs = [
        BackfillOperations._run(job, backfill, backfill.start + timedelta(minutes=m), now)
        for m in range(250)
    ]
    for run in runs:
        fakes.store.create_run(run, now)
        end(fakes, run, RunStatus.SUCCEEDED)
    sizes: list[int] = []
    original = fakes.store.count_ends

    def noting(tally: Tally) -> TallyRefused | None:
        sizes.append(len(tally.ends) + 2)  # (its runs, its backfill, its owner's usage)
        return original(tally)

    fakes.store.count_ends = noting  # type: ignore[method-assign]

    assert fakes.progress.count(fakes.store.runs.take_ends() * duplicates) == 250

    assert max(sizes) <= 100
    assert kept(fakes, backfill).state is BackfillState.COMPLETED


def test_given_the_queues_unavailable_when_a_backfill_and_a_rerun_are_asked_for_then_nothing_is_left_holding_the_owners_usage(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = every_ten_minutes(fakes)
    backfill = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    first = its_runs(fakes, backfill)[0]
    end(fakes, first, RunStatus.FAILED)

    def unavailable(*_: object) -> int:
        raise RuntimeError("SQS is unavailable")

    monkeypatch.setattr(fakes.queues, "send", unavailable)
    with pytest.raises(RuntimeError):
        fakes.backfills.create(OWNER, every_ten_minutes(fakes).id, an_hour_back(fakes))
    with pytest.raises(RuntimeError):
        fakes.reruns.rerun_run(OWNER, first.id)

    usage = fakes.store.get_usage(OWNER)
    assert (usage.running, usage.reruns) == ({job.id: frozenset({backfill.id})}, 0)
    refused = [b for b in fakes.store.backfills.values() if b.id != backfill.id]
    assert [b.state for b in refused] == [BackfillState.CANCELLED]


def test_given_an_owners_backfills_and_reruns_when_their_usage_is_read_then_it_holds_their_fire_times_not_ended(
    fakes: Fakes,
) -> None:
    """What a GET /limits will show: read from the usage item and the running backfills."""
    job, other = every_ten_minutes(fakes), every_ten_minutes(fakes)
    first = fakes.backfills.create(OWNER, job.id, an_hour_back(fakes))
    second = fakes.backfills.create(OWNER, other.id, an_hour_back(fakes))
    for run in its_runs(fakes, first)[:4]:
        end(fakes, run, RunStatus.SUCCEEDED)
    fakes.count_run_ends()
    del fakes.store.backfills[(other.id, second.id)]  # (expired from under the usage)

    usage = owner_usage(fakes.store, OWNER)

    assert (usage.running_backfills, usage.queued_runs) == (1, FIRES - 4)
    assert fakes.store.get_usage(OWNER).running == {job.id: frozenset({first.id})}
    assert usage.view(Limits()) == {
        "running_backfills_per_owner": {"limit": 10, "used": 1},
        "running_backfills_per_job": {"limit": 3, "used": {job.id: 1}},
        "queued_runs_per_owner": {"limit": 10_000, "used": 2},
    }
