"""Limited runs and jobs deleted on completion, on the fakes and a fake clock: the system
played minute by minute (dispatcher, worker, the state machine's writes, the notifier).

What counts as a run: each fire time of the job's schedule it reaches while active, however
the run ends (succeeded, failed, skipped, missed); not manual runs, not fire times while
paused. The job item is never written per run: its last run's fire time is computed when
max_runs is set (or the job changes), and its end derived from it when it is read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain.errors import InvalidRequest, NotFound
from chronoq.domain.jobs import Job, JobPatch, JobState
from chronoq.domain.notifications import topic_statuses
from chronoq.domain.runs import Priority, Run, RunMessage, RunStatus
from chronoq.execution.egress import Egress
from chronoq.usecases.notify import Notifier

from tests.builders import OWNER, Fakes, at, job_spec
from tests.unit.usecases.helpers import CountingStore, finish, mark_running, stored

T0 = datetime(2026, 11, 26, 12, 0, 30, tzinfo=UTC)
EVERY_MINUTE = {"type": "cron", "expression": "* * * * *"}


def minute(n: int) -> datetime:
    """The start of the n-th minute after T0's."""
    return T0.replace(second=0) + timedelta(minutes=n)


@dataclass
class Heard:
    """The runs the notifier heard of because their record was marked ``notify``."""

    runs: list[str] = field(default_factory=list)


@dataclass
class Topic:
    published: list[dict[str, Any]] = field(default_factory=list)

    def publish(self, **request: Any) -> dict[str, str]:
        self.published.append(request)
        return {"MessageId": f"sns-{len(self.published)}"}


@pytest.fixture
def fakes(fakes: Fakes) -> Fakes:
    fakes.clock.set(T0)
    fakes.dispatcher.dispatch()  # the dispatcher has been ticking: checkpoints exist
    return fakes


def notifier(fakes: Fakes) -> Notifier:
    return Notifier(
        store=fakes.store,
        sns=Topic(),
        ses=None,
        topic_arn="arn:aws:sns:us-east-1:123456789012:chronoq-runs",
        topic_statuses=topic_statuses(r.DEFAULT_TOPIC_STATUSES),
        email_sender="",
        master_secret=lambda: "master",
        clock=lambda: fakes.clock().timestamp(),
        egress=Egress(),
    )


def play(
    fakes: Fakes,
    until: datetime,
    heard: Heard | None = None,
    end: RunStatus = RunStatus.SUCCEEDED,
    running: bool = False,
) -> list[RunMessage]:
    """Time passes to ``until``: each minute the dispatcher ticks, each run reaches a worker
    at its second, the state machine runs it (ending it ``end``, unless ``running``: left
    running), and the notifier hears of each ended run whose record asks for it (or whose
    status the topic hears of). Returns the messages the workers got."""
    told = notifier(fakes)
    delivered: list[RunMessage] = []
    tick = fakes.clock().replace(second=0) + timedelta(minutes=1)
    while True:
        if tick <= until:
            fakes.clock.set(tick)
            fakes.dispatcher.dispatch()
        now = min(tick, until)
        queued = fakes.queues.sent
        due = sorted(
            (s.message for s in queued if s.message.scheduled_at <= now),
            key=lambda m: m.scheduled_at,
        )
        fakes.queues.sent = [s for s in queued if s.message.scheduled_at > now]
        for message in due:
            fakes.clock.set(max(fakes.clock(), message.scheduled_at))
            delivered.append(message)
            outcome = fakes.starter.start_run(message)
            kept = fakes.store.get_run(message.job_id, message.run_id)
            if outcome == "started" and mark_running(fakes, fake_run(message)) and not running:
                finish(fakes, fake_run(message), end)
                kept = stored(fakes, fake_run(message))
            if kept is not None and kept.status not in (RunStatus.RUNNING, RunStatus.QUEUED):
                if kept.notify and heard is not None:
                    heard.runs.append(kept.id)
                told.run_finished(kept)
        if tick > until:
            break
        tick += timedelta(minutes=1)
    fakes.clock.set(until)
    return delivered


def fake_run(message: RunMessage) -> Run:
    return Run(
        id=message.run_id,
        job_id=message.job_id,
        owner=OWNER,
        status=RunStatus.SCHEDULED,
        priority=Priority.NORMAL,
        scheduled_at=message.scheduled_at,
    )


def limited(fakes: Fakes, max_runs: int, **extra: Any) -> Job:
    """A job firing every minute (from 12:01), that ends after ``max_runs`` runs."""
    return fakes.jobs.create_job(OWNER, job_spec(EVERY_MINUTE, max_runs=max_runs, **extra))


def scheduled(fakes: Fakes, job: Job) -> list[datetime]:
    """The fire times of the job's scheduled runs whose execution started."""
    return sorted(
        datetime.fromisoformat(e.scheduled_at)
        for e in fakes.executor.started.values()
        if e.job_id == job.id and e.trigger == "schedule"
    )


# --- max_runs ----------------------------------------------------------------------------------


def test_given_max_runs_3_on_a_job_every_minute_when_time_passes_then_three_runs_start_and_it_completes(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 3)
    assert job.final_run_at == minute(3)

    play(fakes, minute(8))

    assert scheduled(fakes, job) == [minute(1), minute(2), minute(3)]
    assert len(fakes.executor.started) == 3
    done = fakes.jobs.get_job(OWNER, job.id)
    assert (done.state, done.next_run_at, done.final_run_at) == (
        JobState.COMPLETED,
        None,
        minute(3),
    )
    assert [j.id for j in fakes.jobs.list_jobs(OWNER)] == [job.id]  # kept (on_complete: keep)
    unlimited = fakes.jobs.create_job(OWNER, job_spec(EVERY_MINUTE))
    play(fakes, minute(12))
    assert len(scheduled(fakes, unlimited)) == 4  # and on


def test_given_a_limited_job_when_its_runs_happen_then_neither_the_dispatcher_nor_the_worker_writes_the_job(
    fakes: Fakes,
) -> None:
    counting = Fakes(store=CountingStore(), clock=fakes.clock)
    counting.dispatcher.dispatch()
    job = counting.jobs.create_job(OWNER, job_spec(EVERY_MINUTE, max_runs=3))
    before = list(counting.store.job_writes)  # type: ignore[attr-defined]

    play(counting, minute(6))

    assert len(scheduled(counting, job)) == 3
    assert counting.store.job_writes == before  # type: ignore[attr-defined]


def test_given_manual_runs_when_a_limited_job_is_triggered_then_they_do_not_count(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 2)
    fakes.jobs.trigger_job(OWNER, job.id)
    fakes.jobs.trigger_job(OWNER, job.id)

    delivered = play(fakes, minute(5))

    assert scheduled(fakes, job) == [minute(1), minute(2)]
    assert len([m for m in delivered if m.trigger == "manual"]) == 2


def test_given_a_forbid_job_whose_runs_are_skipped_when_counted_then_skipped_runs_count(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 2, concurrency="forbid", timeout_seconds=900)

    play(fakes, minute(4), running=True)  # the first run runs on: the second is SKIPPED

    runs = {run.scheduled_at: run.status for run in fakes.store.runs.values()}
    assert runs == {minute(1): RunStatus.RUNNING, minute(2): RunStatus.SKIPPED}
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED


def test_given_a_paused_limited_job_when_resumed_then_fire_times_while_paused_do_not_count(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 3)
    play(fakes, minute(1) + timedelta(seconds=30))
    fakes.jobs.pause_job(OWNER, job.id)
    play(fakes, minute(10))
    fakes.jobs.resume_job(OWNER, job.id)

    play(fakes, minute(20))

    assert scheduled(fakes, job) == [minute(1), minute(11), minute(12)]
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED


def test_given_a_limited_job_when_rescheduled_then_its_runs_so_far_still_count(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 3)
    play(fakes, minute(2) + timedelta(seconds=30))  # two runs

    changed = fakes.jobs.update_job(
        OWNER,
        job.id,
        JobPatch.model_validate({"schedule": {"type": "cron", "expression": "*/5 * * * *"}}),
    )

    assert changed.final_run_at == minute(5)  # one run left
    play(fakes, minute(20))
    assert scheduled(fakes, job) == [minute(1), minute(2), minute(5)]
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED


def test_given_a_completed_limited_job_when_max_runs_is_raised_then_it_runs_the_difference(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 1)
    play(fakes, minute(3))
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.COMPLETED

    raised = fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"max_runs": 3}))

    assert (raised.state, raised.next_run_at, raised.final_run_at) == (
        JobState.ACTIVE,
        minute(4),
        minute(5),
    )
    play(fakes, minute(9))
    assert scheduled(fakes, job) == [minute(1), minute(4), minute(5)]


def test_given_a_limited_job_when_max_runs_is_lowered_to_what_it_ran_then_invalid_names_max_runs(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 5)
    play(fakes, minute(2) + timedelta(seconds=30))

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"max_runs": 2}))

    assert refused.value.field == "max_runs"
    assert "2 scheduled runs" in refused.value.message
    assert fakes.store.get_job(job.id) == job  # nothing changed


def test_given_a_limited_job_when_max_runs_is_removed_then_it_runs_on(fakes: Fakes) -> None:
    job = limited(fakes, 2)

    unlimited = fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"max_runs": None}))

    assert (unlimited.max_runs, unlimited.final_run_at) == (None, None)
    play(fakes, minute(6))
    assert len(scheduled(fakes, job)) == 6


def test_given_an_occurrence_after_a_limited_jobs_last_run_when_it_reaches_a_worker_then_it_never_starts(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 1)
    fakes.index.schedule([(job, minute(2))], fakes.clock())  # (as no one writes it)

    play(fakes, minute(4))

    assert scheduled(fakes, job) == [minute(1)]


def test_given_a_limited_job_whose_next_occurrence_is_queued_when_max_runs_is_changed_then_its_count_holds(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 5)
    play(fakes, minute(1) + timedelta(seconds=30))
    fakes.dispatcher.dispatch()  # 12:02 is on its queue already

    changed = fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"max_runs": 2}))

    assert (changed.generation, changed.final_run_at) == (job.generation + 1, minute(2))
    play(fakes, minute(6))
    assert scheduled(fakes, job) == [minute(1), minute(2)]  # 12:02 once, in the new generation


# --- on_complete: delete -----------------------------------------------------------------------


def test_given_a_one_time_job_deleted_on_completion_when_its_run_ends_then_the_job_is_gone_and_its_run_stays(
    fakes: Fakes,
) -> None:
    heard = Heard()
    job = fakes.jobs.create_job(OWNER, job_spec(at(minute(1)), on_complete="delete"))
    assert fakes.store.job_counts[OWNER] == 1

    play(fakes, minute(2), heard)

    assert len(heard.runs) == 1  # its one run was marked for the notifier
    with pytest.raises(NotFound):
        fakes.jobs.get_job(OWNER, job.id)
    assert fakes.store.job_counts[OWNER] == 0  # its place in the quota is free
    (run,) = fakes.runs.page_runs(OWNER, job.id).items  # its run stays readable
    assert run.status is RunStatus.SUCCEEDED
    again = fakes.jobs.create_job(OWNER, job_spec(at(minute(5)), name=job.name))  # and its name
    assert again.name == job.name


def test_given_a_limited_job_deleted_on_completion_when_its_runs_end_then_only_the_last_deletes_it(
    fakes: Fakes,
) -> None:
    heard = Heard()
    job = limited(fakes, 2, on_complete="delete")

    play(fakes, minute(1) + timedelta(seconds=30), heard)
    assert fakes.jobs.get_job(OWNER, job.id).state is JobState.ACTIVE
    assert heard.runs == []  # its first run was not marked: the notifier never heard of it

    play(fakes, minute(4), heard)

    assert len(heard.runs) == 1
    assert fakes.store.get_job(job.id) is None


@pytest.mark.parametrize("end", [RunStatus.FAILED, RunStatus.CANCELLED])
def test_given_a_job_deleted_on_completion_when_its_last_run_ends_otherwise_then_it_is_deleted_too(
    fakes: Fakes, end: RunStatus
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(minute(1)), on_complete="delete"))

    play(fakes, minute(2), end=end)

    assert fakes.store.get_job(job.id) is None


def test_given_a_job_deleted_on_completion_whose_last_run_is_missed_when_the_dispatcher_catches_up_then_it_is_deleted(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(
        OWNER, job_spec(at(minute(1)), on_complete="delete", start_deadline_seconds=60)
    )
    fakes.clock.set(minute(5))  # the dispatcher was down: too late to start

    play(fakes, minute(6))

    (run,) = fakes.store.runs.values()
    assert run.status is RunStatus.MISSED
    assert fakes.store.get_job(job.id) is None


def test_given_a_job_deleted_on_completion_whose_last_run_is_skipped_ahead_of_its_second_then_it_is_deleted(
    fakes: Fakes,
) -> None:
    job = limited(fakes, 2, on_complete="delete", concurrency="forbid", timeout_seconds=900)

    play(fakes, minute(2), running=True)

    statuses = sorted(run.status for run in fakes.store.runs.values())
    assert statuses == [RunStatus.RUNNING, RunStatus.SKIPPED]
    assert fakes.store.get_job(job.id) is None


def test_given_a_job_kept_on_completion_when_its_runs_end_then_the_notifier_never_hears_of_them(
    fakes: Fakes,
) -> None:
    heard = Heard()
    job = limited(fakes, 2)

    play(fakes, minute(5), heard)

    assert heard.runs == []
    assert fakes.store.get_job(job.id) is not None


def test_given_a_paused_job_deleted_on_completion_when_resumed_after_its_time_then_it_is_deleted_at_once(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(at(minute(3)), on_complete="delete"))
    fakes.jobs.pause_job(OWNER, job.id)
    fakes.clock.set(minute(5))

    answered = fakes.jobs.resume_job(OWNER, job.id)

    assert answered.state is JobState.COMPLETED
    assert fakes.store.get_job(job.id) is None
    assert fakes.store.job_counts[OWNER] == 0


def test_given_a_job_deleted_on_completion_whose_earlier_run_ends_after_the_last_began_then_only_the_last_deletes_it(
    fakes: Fakes,
) -> None:
    notify = {"on": ["SUCCEEDED"], "webhook": "https://example.com/hook"}  # (all runs heard)
    job = limited(fakes, 2, on_complete="delete", notify=notify, timeout_seconds=900)
    play(fakes, minute(3), running=True)  # both runs run on, past the job's last fire time
    first, last = sorted(fakes.store.runs.values(), key=lambda run: run.scheduled_at)
    told = notifier(fakes)
    told.egress = Egress(_http=Hooks())  # type: ignore[arg-type]

    finish(fakes, first, RunStatus.SUCCEEDED)
    told.run_finished(stored(fakes, first))
    assert fakes.store.get_job(job.id) is not None  # its last run has not ended

    finish(fakes, last, RunStatus.SUCCEEDED)
    told.run_finished(stored(fakes, last))
    assert fakes.store.get_job(job.id) is None


@dataclass
class Hooks:
    """Webhooks answered 200."""

    def request(self, *_: Any, **__: Any) -> Any:
        return type("Answer", (), {"status": 200})()


def test_given_a_completed_limited_job_when_max_runs_is_lowered_below_what_it_ran_then_invalid_as_for_an_active_one(
    fakes: Fakes,
) -> None:
    """The same rule whatever the job's state: max_runs may not fall below the runs it has
    had (2 here)."""
    job = limited(fakes, 2)
    play(fakes, minute(4))
    completed = fakes.jobs.get_job(OWNER, job.id)
    assert completed.state is JobState.COMPLETED

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"max_runs": 1}))

    assert refused.value.field == "max_runs"
    assert fakes.store.get_job(job.id) == fakes.store.get_job(completed.id)
