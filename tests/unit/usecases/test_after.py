"""Completion triggers on the fakes (docs/guides/pipelines.md): a job whose schedule is ``after``
other jobs runs once for each instant at which every upstream has a run that ended as asked;
upstream ends heard twice or in any order make one run; cycles, unknown names and other owners' jobs
are refused (422 naming ``schedule.jobs``), also when two changes race; a job that nothing follows
costs nothing more.

Why this module is long: completion triggers are one feature with several mechanisms (the
schedule's checks, the marker, fan-in exactly once, within_seconds, cascades, upstream outputs),
tested over the same helpers that end upstream runs."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq.domain import after, ids
from chronoq.domain import limits as lim
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import Job, JobPatch, JobState
from chronoq.domain.runs import Run, RunStatus, Trigger
from chronoq.usecases.timeindex import new_run

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import finish, mark_running, message, stored

#: A schedule that never fires while a test runs.
YEARLY = {"type": "cron", "expression": "0 0 1 1 *"}
#: Instants before the fake clock's now (2026-11-26 12:00 UTC): upstream runs' fire times.
T1 = datetime.fromisoformat("2026-11-26T06:00:00+00:00")
T2 = datetime.fromisoformat("2026-11-26T07:00:00+00:00")


def upstream(fakes: Fakes, name: str, owner: str = OWNER) -> Job:
    return fakes.jobs.create_job(owner, job_spec(YEARLY, name=name))


def follower(
    fakes: Fakes, jobs: list[str], name: str = "load", max_runs: int | None = None, **schedule: Any
) -> Job:
    spec = job_spec({"type": "after", "jobs": jobs, **schedule}, name=name, max_runs=max_runs)
    return fakes.jobs.create_job(OWNER, spec)


def after_patch(jobs: list[str], **schedule: Any) -> JobPatch:
    return JobPatch.model_validate({"schedule": {"type": "after", "jobs": jobs, **schedule}})


def ended(job: Job, at: datetime, status: RunStatus = RunStatus.SUCCEEDED) -> Run:
    """The end of ``job``'s scheduled run of instant ``at``, as the stream shows it."""
    run = new_run(job, ids.run_id(job.id, at), at, Trigger.SCHEDULE)
    return run.model_copy(update={"status": status})


def after_runs(fakes: Fakes, job: Job) -> list[Run]:
    return sorted(
        (r for (j, _), r in fakes.store.runs.items() if j == job.id and r.trigger is Trigger.AFTER),
        key=lambda r: r.id,
    )


def refusal(call: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as refused:
        call()
    return refused.value


# --- the schedule ----------------------------------------------------------------------------


def test_given_upstreams_by_name_and_id_when_an_after_job_is_made_then_it_follows_their_ids_and_has_no_fire_time(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")

    load = follower(fakes, ["extract", clean.id])

    assert load.schedule.type == "after"
    assert load.schedule.jobs == [extract.id, clean.id]
    assert (load.state, load.next_run_at) == (JobState.ACTIVE, None)
    assert not any(o.job_id == load.id for b in fakes.store.schedule.values() for o in b.values())
    for up in (extract, clean):
        assert fakes.store.get_job(up.id).followed_by == {load.id}  # type: ignore[union-attr]
    shown = fakes.jobs.get_job(OWNER, load.id)
    assert shown.upstreams == [
        {"id": extract.id, "name": "extract", "state": "ACTIVE"},
        {"id": clean.id, "name": "clean", "state": "ACTIVE"},
    ]
    assert fakes.jobs.get_job(OWNER, extract.id).downstreams == [
        {"id": load.id, "name": "load", "state": "ACTIVE"}
    ]


def test_given_a_paused_and_a_deleted_upstream_when_the_after_job_is_read_then_it_shows_them(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"])

    fakes.jobs.pause_job(OWNER, extract.id)
    fakes.jobs.delete_job(OWNER, clean.id)

    assert fakes.jobs.get_job(OWNER, load.id).upstreams == [
        {"id": extract.id, "name": "extract", "state": "PAUSED"},
        {"id": clean.id, "name": None, "state": None},
    ]


def test_given_an_after_job_paused_and_resumed_then_it_is_active_with_no_fire_time(
    fakes: Fakes,
) -> None:
    upstream(fakes, "extract")
    load = follower(fakes, ["extract"])

    fakes.jobs.pause_job(OWNER, load.id)
    resumed = fakes.jobs.resume_job(OWNER, load.id)

    assert (resumed.state, resumed.next_run_at) == (JobState.ACTIVE, None)


@pytest.mark.parametrize("given", ["nosuchjob", "job_0123456789abcdef0123456789abcdef"])
def test_given_an_unknown_upstream_then_the_job_is_refused_naming_schedule_jobs(
    fakes: Fakes, given: str
) -> None:
    upstream(fakes, "extract")
    refused = refusal(lambda: follower(fakes, ["extract", given]))
    assert refused.field == "schedule.jobs"
    assert given in refused.message
    assert fakes.store.job_count(OWNER) == 1


def test_given_another_owners_job_by_name_or_id_then_the_job_is_refused(fakes: Fakes) -> None:
    theirs = upstream(fakes, "extract", owner="bob")
    for given in ("extract", theirs.id):
        assert refusal(lambda g=given: follower(fakes, [g])).field == "schedule.jobs"
    assert fakes.store.get_job(theirs.id).followed_by == frozenset()  # type: ignore[union-attr]


def test_given_a_job_when_changed_to_follow_itself_then_it_is_refused(fakes: Fakes) -> None:
    job = upstream(fakes, "extract")
    refused = refusal(lambda: fakes.jobs.update_job(OWNER, job.id, after_patch(["extract"])))
    assert refused.field == "schedule.jobs"


def test_given_a_chain_when_its_head_is_changed_to_follow_its_tail_then_the_cycle_is_refused(
    fakes: Fakes,
) -> None:
    a = upstream(fakes, "a")
    follower(fakes, ["a"], name="b")
    c = follower(fakes, ["b"], name="c")

    refused = refusal(lambda: fakes.jobs.update_job(OWNER, a.id, after_patch(["c"])))

    assert refused.field == "schedule.jobs"
    assert "cycle" in refused.message
    assert "a -> c -> b -> a" in refused.message
    assert fakes.store.get_job(a.id).schedule.type == "cron"  # type: ignore[union-attr]
    assert a.id not in fakes.store.get_graph(OWNER).edges
    assert fakes.store.get_job(c.id).followed_by == frozenset()  # type: ignore[union-attr]


def test_given_two_changes_racing_to_close_a_cycle_then_one_is_refused(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a after b and b after a, each checked on the same graph as read: the second writer's
    graph write fails its version's condition, and checked again it closes a cycle."""
    a, b = upstream(fakes, "a"), upstream(fakes, "b")
    read = fakes.store.get_graph
    raced: list[Job] = []
    racing_now: list[bool] = []

    def racing(owner: str) -> Any:
        graph = read(owner)  # (the first change's read)
        if not racing_now:  # meanwhile the other change is made, whole
            racing_now.append(True)
            raced.append(fakes.jobs.update_job(OWNER, b.id, after_patch(["a"])))
        return graph

    monkeypatch.setattr(fakes.store, "get_graph", racing)
    refused = refusal(lambda: fakes.jobs.update_job(OWNER, a.id, after_patch(["b"])))

    assert refused.field == "schedule.jobs"
    assert "cycle" in refused.message
    assert raced
    assert raced[0].schedule.type == "after"
    edges = read(OWNER).edges
    assert edges == {b.id: {a.id}}
    assert after.cycle_from(edges, a.id) is None
    assert after.cycle_from(edges, b.id) is None


def test_given_an_after_job_changed_to_other_upstreams_then_the_followers_move(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract"])

    fakes.jobs.update_job(OWNER, load.id, after_patch(["clean"]))
    assert fakes.store.get_job(extract.id).followed_by == frozenset()  # type: ignore[union-attr]
    assert fakes.store.get_job(clean.id).followed_by == {load.id}  # type: ignore[union-attr]

    fakes.jobs.update_job(OWNER, load.id, JobPatch.model_validate({"schedule": YEARLY}))
    assert fakes.store.get_job(clean.id).followed_by == frozenset()  # type: ignore[union-attr]
    assert load.id not in fakes.store.get_graph(OWNER).edges

    fakes.jobs.update_job(OWNER, load.id, after_patch(["extract"]))
    fakes.jobs.delete_job(OWNER, load.id)
    assert fakes.store.get_job(extract.id).followed_by == frozenset()  # type: ignore[union-attr]
    assert fakes.store.get_graph(OWNER).edges == {}


def test_given_an_upstream_changed_then_its_followers_are_kept(fakes: Fakes) -> None:
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"])
    fakes.jobs.update_job(OWNER, extract.id, JobPatch.model_validate({"priority": "high"}))
    fakes.jobs.pause_job(OWNER, extract.id)
    assert fakes.store.get_job(extract.id).followed_by == {load.id}  # type: ignore[union-attr]


# --- the marker: ends of jobs nothing follows cost nothing more -------------------------------


def test_given_a_followed_job_when_its_run_starts_then_its_slots_name_its_followers(
    fakes: Fakes,
) -> None:
    extract, alone = upstream(fakes, "extract"), upstream(fakes, "alone")
    load = follower(fakes, ["extract"])

    slots = {}
    for job in (extract, alone):
        run = fakes.jobs.trigger_job(OWNER, job.id)
        assert fakes.starter.start_run(message(fakes, run)) == "started"
        slots[job.id] = fakes.executor.started[run.id].slots

    assert after.followers_in(slots[extract.id]) == [load.id]
    assert after.followers_in(slots[alone.id]) == []
    assert after.SLOT not in slots[alone.id]


# --- fan-in, exactly once -----------------------------------------------------------------------


def test_given_one_upstream_when_its_run_succeeds_then_the_follower_runs_once_for_its_instant(
    fakes: Fakes,
) -> None:
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"])
    end = ended(extract, T1)

    created = fakes.pipelines.upstream_ended(end, [load.id])
    again = fakes.pipelines.upstream_ended(end, [load.id])

    (run,) = after_runs(fakes, load)
    assert created == [run.id]
    assert again == []
    assert run.id == ids.after_run_id(load.id, T1)
    assert (run.scheduled_at, run.trigger, run.triggered_by) == (T1, Trigger.AFTER, [end.id])


def test_given_a_fan_in_when_ends_are_duplicated_and_reordered_then_each_instant_runs_once(
    fakes: Fakes,
) -> None:
    """Property: for many shuffles of duplicated ends of two upstreams over three instants (the
    third's ``clean`` failed), one run per complete instant, carrying both upstream runs."""
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"])
    t3 = T2 + timedelta(hours=1)
    ends = [
        ended(extract, T1),
        ended(clean, T1),
        ended(extract, T2),
        ended(clean, T2),
        ended(extract, t3),
        ended(clean, t3, RunStatus.FAILED),
    ]
    for seed in range(150):
        fakes.store.runs.clear()
        fakes.store.fanins.clear()
        rng = random.Random(seed)
        delivered = [e for e in ends for _ in range(rng.randint(1, 3))]
        rng.shuffle(delivered)

        created = [c for e in delivered for c in fakes.pipelines.upstream_ended(e, [load.id])]

        runs = after_runs(fakes, load)
        assert [r.scheduled_at for r in runs] == [T1, T2], seed
        assert sorted(created) == [r.id for r in runs], seed
        for run in runs:
            assert sorted(run.triggered_by or ()) == sorted(
                e.id for e in ends[:4] if e.scheduled_at == run.scheduled_at
            )


ON_CASES = [
    ("SUCCEEDED", RunStatus.SUCCEEDED, True),
    ("SUCCEEDED", RunStatus.FAILED, False),
    ("FAILED", RunStatus.FAILED, True),
    ("FAILED", RunStatus.TIMED_OUT, True),
    ("FAILED", RunStatus.SUCCEEDED, False),
    ("ENDED", RunStatus.SUCCEEDED, True),
    ("ENDED", RunStatus.FAILED, True),
    ("ENDED", RunStatus.CANCELLED, True),
    ("ENDED", RunStatus.MISSED, False),
]


@pytest.mark.parametrize(("on", "status", "runs"), ON_CASES)
def test_given_on_when_an_upstream_ends_then_it_counts_as_asked(
    fakes: Fakes, on: str, status: RunStatus, runs: bool
) -> None:
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"], on=on)

    fakes.pipelines.upstream_ended(ended(extract, T1, status), [load.id])

    assert len(after_runs(fakes, load)) == int(runs)


def test_given_a_paused_follower_or_one_no_longer_following_then_no_run_is_made(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract"])
    fakes.jobs.pause_job(OWNER, load.id)
    fakes.pipelines.upstream_ended(ended(extract, T1), [load.id])
    fakes.jobs.resume_job(OWNER, load.id)
    fakes.jobs.update_job(OWNER, load.id, after_patch(["clean"]))
    fakes.pipelines.upstream_ended(ended(extract, T2), [load.id])  # (a run started before)
    assert after_runs(fakes, load) == []
    fakes.pipelines.upstream_ended(ended(clean, T2), [load.id])
    assert len(after_runs(fakes, load)) == 1


def test_given_re_runs_and_backfills_of_an_upstream_then_they_do_not_trigger_the_follower(
    fakes: Fakes,
) -> None:
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"])
    for trigger in (Trigger.RERUN, Trigger.BACKFILL):
        end = ended(extract, T1).model_copy(update={"trigger": trigger, "id": f"x-{trigger}"})
        fakes.pipelines.upstream_ended(end, [load.id])
    assert after_runs(fakes, load) == []


def test_given_an_instant_hours_old_when_the_follower_run_is_sent_then_the_worker_starts_it(
    fakes: Fakes,
) -> None:
    """The run goes the way of any run (its owner's queue, the worker's claim): late on
    purpose (its instant is the upstream's), it starts when it was made, not MISSED."""
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"])  # (the clock stands 6 hours after T1)

    (created,) = fakes.pipelines.upstream_ended(ended(extract, T1), [load.id])
    (sent,) = fakes.queues.take()
    assert (sent.run_id, sent.trigger, sent.owner) == (created, Trigger.AFTER, OWNER)
    assert fakes.starter.start_run(sent) == "started"
    run = fakes.store.get_run(load.id, created)
    assert run is not None
    assert mark_running(fakes, run)
    assert finish(fakes, run, RunStatus.SUCCEEDED)
    assert stored(fakes, run).status is RunStatus.SUCCEEDED


def test_given_a_chain_when_each_ends_then_the_next_follows_for_the_same_instant(
    fakes: Fakes,
) -> None:
    extract = upstream(fakes, "extract")
    transform = follower(fakes, ["extract"], name="transform")
    load = follower(fakes, ["transform"], name="load")

    (first,) = fakes.pipelines.upstream_ended(ended(extract, T1), [transform.id])
    kept = fakes.store.get_run(transform.id, first)
    assert kept is not None
    (second,) = fakes.pipelines.upstream_ended(
        kept.model_copy(update={"status": RunStatus.SUCCEEDED}), [load.id]
    )
    (run,) = after_runs(fakes, load)
    assert (run.id, run.scheduled_at, run.triggered_by) == (second, T1, [first])


# --- within_seconds ---------------------------------------------------------------------------


def pass_time(fakes: Fakes, seconds: float) -> None:
    """Let ``seconds`` go by, the dispatcher ticking once a minute (as its rule does)."""
    end = fakes.clock() + timedelta(seconds=seconds)
    while fakes.clock() < end:
        fakes.clock.advance(min(60.0, (end - fakes.clock()).total_seconds()))
        fakes.dispatcher.dispatch()


def test_given_an_instant_missing_an_upstream_when_within_seconds_passes_then_its_run_is_skipped_naming_it(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"], within_seconds=600)
    first = ended(extract, T1)
    fakes.pipelines.upstream_ended(first, [load.id])

    pass_time(fakes, 540)
    assert after_runs(fakes, load) == []
    pass_time(fakes, 180)

    (run,) = after_runs(fakes, load)
    assert run.id == ids.after_run_id(load.id, T1)
    assert run.status is RunStatus.SKIPPED
    assert run.reason is not None
    assert "clean" in run.reason
    assert "extract" not in run.reason
    assert run.triggered_by == [first.id]
    assert fakes.queues.take() == []
    # the missing upstream arrives late: no second run, the SKIPPED one stays
    assert fakes.pipelines.upstream_ended(ended(clean, T1), [load.id]) == []
    assert [(r.id, r.status) for r in after_runs(fakes, load)] == [(run.id, RunStatus.SKIPPED)]
    assert fakes.queues.take() == []


def test_given_an_instant_complete_in_time_when_within_seconds_passes_then_its_run_is_left_alone(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"], within_seconds=600)
    fakes.pipelines.upstream_ended(ended(extract, T1), [load.id])
    pass_time(fakes, 300)
    (made,) = fakes.pipelines.upstream_ended(ended(clean, T1), [load.id])

    pass_time(fakes, 900)

    (run,) = after_runs(fakes, load)
    assert (run.id, run.status) == (made, RunStatus.SCHEDULED)


def test_given_the_wait_and_the_last_upstream_at_the_same_moment_then_one_run_whichever_is_first(
    fakes: Fakes,
) -> None:
    """The wait's end read the fan-in incomplete and made the run's record; the last upstream
    then arrives: it finds the record and neither sends it nor makes another. The wait ends
    it SKIPPED."""
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"], within_seconds=600)
    fakes.pipelines.upstream_ended(ended(extract, T1), [load.id])
    fakes.clock.advance(700)
    early = new_run(load, ids.after_run_id(load.id, T1), T1, Trigger.AFTER)
    assert fakes.store.create_run(early, fakes.clock())  # (the wait's end, halfway)

    assert fakes.pipelines.upstream_ended(ended(clean, T1), [load.id]) == []
    assert fakes.queues.take() == []
    pass_time(fakes, 120)
    (run,) = after_runs(fakes, load)
    assert run.status is RunStatus.SKIPPED


# --- cascade ------------------------------------------------------------------------------------


def finished_upstream(fakes: Fakes, job: Job) -> Run:
    """A run of ``job`` recorded SUCCEEDED at T1."""
    run = ended(job, T1)
    assert fakes.store.create_run(run.model_copy(update={"status": RunStatus.SCHEDULED}), T1)
    assert fakes.store.end_run(run, RunStatus.SUCCEEDED, T1, "", [RunStatus.SCHEDULED])
    return stored(fakes, run)


@pytest.mark.parametrize("cascade", [False, True])
def test_given_a_re_run_of_an_upstream_then_it_triggers_the_follower_again_only_when_it_cascades(
    fakes: Fakes, cascade: bool
) -> None:
    extract = upstream(fakes, "extract")
    load = follower(fakes, ["extract"])
    original = finished_upstream(fakes, extract)
    (first,) = fakes.pipelines.upstream_ended(original, [load.id])

    rerun = fakes.reruns.rerun_run(OWNER, original.id, cascade=cascade)
    assert stored(fakes, rerun).cascade is cascade
    end = stored(fakes, rerun).model_copy(update={"status": RunStatus.SUCCEEDED})
    made = fakes.pipelines.upstream_ended(end, [load.id])
    again = fakes.pipelines.upstream_ended(end, [load.id])

    ids_ = [r.id for r in after_runs(fakes, load)]
    if not cascade:
        assert (made, ids_) == ([], [first])
        return
    (cascaded,) = made
    assert again == []
    assert cascaded != first
    assert cascaded == ids.cascaded_run_id(load.id, T1, rerun.id)
    assert sorted(ids_) == sorted([first, cascaded])
    kept = fakes.store.get_run(load.id, cascaded)
    assert kept is not None
    assert (kept.scheduled_at, kept.triggered_by, kept.cascade) == (T1, [rerun.id], True)


def test_given_a_cascade_through_a_chain_then_each_follower_runs_again_under_its_own_id(
    fakes: Fakes,
) -> None:
    extract = upstream(fakes, "extract")
    transform = follower(fakes, ["extract"], name="transform")
    load = follower(fakes, ["transform"], name="load")
    original = finished_upstream(fakes, extract)
    rerun = fakes.reruns.rerun_run(OWNER, original.id, cascade=True)

    (mid,) = fakes.pipelines.upstream_ended(
        stored(fakes, rerun).model_copy(update={"status": RunStatus.SUCCEEDED}), [transform.id]
    )
    kept = fakes.store.get_run(transform.id, mid)
    assert kept is not None
    (last,) = fakes.pipelines.upstream_ended(
        kept.model_copy(update={"status": RunStatus.SUCCEEDED}), [load.id]
    )
    assert last == ids.cascaded_run_id(load.id, T1, mid)
    assert last != ids.after_run_id(load.id, T1)


def test_given_a_backfill_asking_to_cascade_then_its_runs_cascade(fakes: Fakes) -> None:
    from chronoq.domain.backfills import BackfillRequest

    hourly = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "0 * * * *"}))
    follower(fakes, [hourly.id])
    request = BackfillRequest.model_validate(
        {"from": "2026-11-26T00:00:00Z", "to": "2026-11-26T03:00:00Z", "cascade": True}
    )
    fakes.backfills.create(OWNER, hourly.id, request)

    runs = [r for (j, _), r in fakes.store.runs.items() if j == hourly.id]
    assert runs
    assert all(r.cascade and r.trigger is Trigger.BACKFILL for r in runs)


def test_given_a_followed_runs_end_when_its_slots_are_given_back_then_its_followers_are_no_flow() -> (
    None
):
    """The waker reads the flow items a run's ``slots`` name: never the followers' token."""
    from chronoq.usecases.wake import Ended

    assert Ended.of("r", f"flow#ab {after.slot(['job_d'])} expect#job_x").slots == ("flow#ab",)


def test_given_max_runs_on_an_after_job_then_it_is_refused_naming_it(fakes: Fakes) -> None:
    upstream(fakes, "extract")
    refused = refusal(lambda: follower(fakes, ["extract"], max_runs=3))
    assert refused.field == "max_runs"


def test_given_a_deleted_upstream_when_the_after_job_changes_otherwise_then_the_change_is_made(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    load = follower(fakes, ["extract", "clean"])
    fakes.jobs.delete_job(OWNER, clean.id)

    changed = fakes.jobs.update_job(OWNER, load.id, JobPatch.model_validate({"priority": "high"}))

    assert changed.schedule.jobs == [extract.id, clean.id]  # type: ignore[union-attr]
    assert fakes.store.get_job(extract.id).followed_by == {load.id}  # type: ignore[union-attr]
    refused = refusal(
        lambda: fakes.jobs.update_job(OWNER, load.id, JobPatch.model_validate({"max_runs": 2}))
    )
    assert refused.field == "max_runs"


# --- upstream outputs in the target ({{ upstream.NAME.output }}) ------------------------------


def _kept(fakes: Fakes, job: Job, at: datetime, output: str) -> Run:
    """``job``'s run of ``at``, ended with ``output`` on its record."""
    run = ended(job, at).model_copy(update={"output": output})
    fakes.store.runs[(job.id, run.id)] = run
    return run


def _started_values(fakes: Fakes, load: Job, extract: Job, clean: Job) -> Any:
    fakes.pipelines.upstream_ended(
        fakes.store.runs[(extract.id, ids.run_id(extract.id, T1))], [load.id]
    )
    (created,) = fakes.pipelines.upstream_ended(
        fakes.store.runs[(clean.id, ids.run_id(clean.id, T1))], [load.id]
    )
    (sent,) = fakes.queues.take()
    assert fakes.starter.start_run(sent) == "started"
    return fakes.executor.started[created].values


def test_given_a_target_naming_an_upstreams_output_when_the_after_run_starts_then_its_execution_carries_that_output_alone(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    _kept(fakes, extract, T1, '{"rows": 42}')
    _kept(fakes, clean, T1, '{"dropped": 3}')
    target = {
        "type": "http",
        "url": "https://example.com/load",
        "method": "POST",
        "body": {"rows": "{{ upstream.extract.output }}"},
    }
    spec = job_spec({"type": "after", "jobs": ["extract", "clean"]}, target, name="load")
    load = fakes.jobs.create_job(OWNER, spec)

    values = _started_values(fakes, load, extract, clean)

    assert values.upstream == {"extract": '{"rows": 42}'}


def test_given_a_target_naming_no_upstream_output_when_the_after_run_starts_then_none_is_read(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    _kept(fakes, extract, T1, '{"rows": 42}')
    _kept(fakes, clean, T1, '{"dropped": 3}')
    load = follower(fakes, ["extract", "clean"])

    assert _started_values(fakes, load, extract, clean).upstream == {}


def test_given_an_upstream_output_over_the_limit_when_the_after_run_starts_then_it_is_left_out(
    fakes: Fakes,
) -> None:
    extract, clean = upstream(fakes, "extract"), upstream(fakes, "clean")
    _kept(fakes, extract, T1, '"' + "x" * lim.UPSTREAM_OUTPUT_BYTES + '"')
    _kept(fakes, clean, T1, '"small"')
    target = {
        "type": "http",
        "url": "https://example.com/load?a={{ upstream.extract.output }}"
        "&b={{ upstream.clean.output }}",
    }
    spec = job_spec({"type": "after", "jobs": ["extract", "clean"]}, target, name="load")
    load = fakes.jobs.create_job(OWNER, spec)

    assert _started_values(fakes, load, extract, clean).upstream == {"clean": '"small"'}
