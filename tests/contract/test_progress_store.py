"""The store's side of backfill progress and owners' usage, on the fakes and on DynamoDB: a
backfill begins in its owner's usage at the version read, and leaves it when it ends; a run's
end is counted once (its mark), on its backfill's counters read as they are, whole or not at
all; re-runs are held in their owner's usage until counted down."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import ids
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Usage
from chronoq.domain.runs import Priority, Run, RunStatus, Trigger
from chronoq.domain.schedules import CronSchedule
from chronoq.usecases.ports import RunEnd, Tally, TallyRefused

from tests.contract.backends import NOW, Backend, a_job, a_run

OWNER = "alice"


def a_backfill(job: Job, backfill_id: str, total: int = 3) -> Backfill:
    return Backfill(
        id=backfill_id,
        job_id=job.id,
        owner=job.owner,
        start=NOW - timedelta(hours=1),
        to=NOW,
        state=BackfillState.RUNNING,
        total=total,
        max_in_flight=10,
        schedule=CronSchedule(type="cron", expression="*/20 * * * *"),
        created_at=NOW,
        ended=0,
    )


def its_run(backend: Backend, backfill: Backfill, minutes: int) -> Run:
    """A run of ``backfill`` (made, SCHEDULED) of the fire time ``minutes`` into its range."""
    fire = backfill.start + timedelta(minutes=minutes)
    run = Run(
        id=ids.backfill_run_id(backfill.job_id, fire, backfill.id),
        job_id=backfill.job_id,
        owner=backfill.owner,
        status=RunStatus.SCHEDULED,
        priority=Priority.NORMAL,
        trigger=Trigger.BACKFILL,
        scheduled_at=fire,
        backfill_id=backfill.id,
    )
    assert backend.store.create_run(run, NOW)
    return run


def ended(backend: Backend, run: Run, status: RunStatus) -> RunEnd:
    """End ``run`` in ``status``: its end, as the stream shows it."""
    assert backend.store.end_run(run, status, NOW, "ended", [RunStatus.SCHEDULED])
    return RunEnd(run.job_id, run.id, run.owner, status, run.backfill_id)


def read(backend: Backend, backfill: Backfill) -> Backfill:
    kept = backend.store.get_backfill(backfill.job_id, backfill.id)
    assert kept is not None
    return kept


def test_given_a_new_backfill_when_started_then_it_enters_its_owners_usage_only_at_the_version_read(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(OWNER)
    first, second = a_backfill(job, "bf0000000001aaaa"), a_backfill(job, "bf0000000002bbbb")
    empty = store.get_usage(OWNER)
    assert empty == Usage()

    assert store.start_backfill(first, empty)
    assert not store.start_backfill(second, empty)  # the usage moved on meanwhile

    assert store.get_backfill(job.id, second.id) is None
    assert read(backend, first) == first
    assert store.get_usage(OWNER) == Usage(running={job.id: frozenset({first.id})}, version=1)
    assert store.start_backfill(second, store.get_usage(OWNER))
    usage = store.get_usage(OWNER)
    assert (usage.running, usage.version) == ({job.id: frozenset({first.id, second.id})}, 2)
    assert [b.id for b in store.get_backfills([(job.id, second.id), (job.id, "bf9")])] == [
        second.id
    ]


def test_given_a_started_backfill_when_ended_then_it_leaves_its_owners_usage_once(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(OWNER)
    backfill = a_backfill(job, "bf0000000001aaaa")
    store.start_backfill(backfill, store.get_usage(OWNER))

    assert store.end_backfill(backfill, BackfillState.CANCELLED, NOW)
    assert not store.end_backfill(backfill, BackfillState.COMPLETED, NOW)

    kept = read(backend, backfill)
    assert (kept.state, kept.finished_at) == (BackfillState.CANCELLED, NOW)
    assert store.get_usage(OWNER).running == {}  # (the job's set gone with its last id)


def test_given_run_ends_when_counted_then_the_backfill_counts_each_once_and_completes_at_its_total(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(OWNER)
    backfill = a_backfill(job, "bf0000000001aaaa", total=3)
    store.start_backfill(backfill, store.get_usage(OWNER))
    one, two, three = (its_run(backend, backfill, m) for m in (0, 20, 40))
    first = ended(backend, one, RunStatus.SUCCEEDED)
    second = ended(backend, two, RunStatus.FAILED)

    assert store.count_ends(Tally(OWNER, (first, second), read(backend, backfill))) is None

    kept = read(backend, backfill)
    assert (kept.state, kept.ended, kept.runs) == (
        BackfillState.RUNNING,
        2,
        {"FAILED": 1, "SUCCEEDED": 1},
    )
    # delivered again (a retried batch), its backfill read afresh: the marks refuse them
    again = store.count_ends(Tally(OWNER, (first, second), read(backend, backfill)))
    assert again == TallyRefused(frozenset({one.id, two.id}), backfill=False)
    assert read(backend, backfill) == kept
    # against counters read before they moved: the backfill refuses, nothing is written
    third = ended(backend, three, RunStatus.SKIPPED)
    stale = store.count_ends(Tally(OWNER, (third,), backfill))
    assert stale == TallyRefused(frozenset(), backfill=True)
    # the end as seen no longer the run's status: refused, left for the record that shows it
    seen_earlier = RunEnd(job.id, three.id, OWNER, RunStatus.SUCCEEDED, backfill.id)
    assert store.count_ends(Tally(OWNER, (seen_earlier,), kept)).runs == {three.id}  # type: ignore[union-attr]

    assert store.count_ends(Tally(OWNER, (third,), kept, completed_at=NOW)) is None

    done = read(backend, backfill)
    assert (done.state, done.finished_at, done.ended) == (BackfillState.COMPLETED, NOW, 3)
    assert done.runs == {"FAILED": 1, "SKIPPED": 1, "SUCCEEDED": 1}
    assert store.get_usage(OWNER).running == {}


def test_given_runs_whose_end_is_not_counted_when_counted_then_only_backfill_runs_and_reruns_are(
    backend: Backend,
) -> None:
    """A run of neither kind is never marked uncounted: its end is refused as counted."""
    store = backend.store
    job = a_job(OWNER)
    plain = a_run(job)
    store.create_run(plain, NOW)
    end = ended(backend, plain, RunStatus.SUCCEEDED)

    assert store.count_ends(Tally(OWNER, (end,))) == TallyRefused(frozenset({plain.id}), False)


def test_given_reruns_held_in_the_usage_when_they_end_then_they_are_counted_down_once(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(OWNER)
    empty = store.get_usage(OWNER)
    assert store.reserve_reruns(OWNER, 2, empty)
    assert not store.reserve_reruns(OWNER, 5, empty)  # (at a version no longer current)
    reruns = [
        a_run(job, NOW - timedelta(minutes=m), trigger=Trigger.RERUN).model_copy(
            update={"id": ids.rerun_run_id(job.id, NOW - timedelta(minutes=m)), "rerun_of": "x"}
        )
        for m in (1, 2)
    ]
    for run in reruns:
        store.create_run(run, NOW)
    ends = tuple(ended(backend, run, RunStatus.SUCCEEDED) for run in reruns)

    assert store.count_ends(Tally(OWNER, ends, reruns=2)) is None
    assert store.count_ends(Tally(OWNER, ends, reruns=2)) is not None  # a duplicate

    usage = store.get_usage(OWNER)
    assert (usage.reruns, usage.version) == (0, 1)
    store.reserve_reruns(OWNER, 3, usage)
    store.release_reruns(OWNER, 3)
    assert store.get_usage(OWNER).reruns == 0


def test_given_a_backfill_gone_from_under_the_usage_when_released_then_the_usage_forgets_it(
    backend: Backend,
) -> None:
    store = backend.store
    job = a_job(OWNER)
    backfill = a_backfill(job, "bf0000000001aaaa")
    store.start_backfill(backfill, store.get_usage(OWNER))

    store.release_backfill(OWNER, job.id, backfill.id)

    assert store.get_usage(OWNER).running == {}
