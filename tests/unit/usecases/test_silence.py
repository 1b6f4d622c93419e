"""Silence on the fakes, with a fake clock (docs/api/notifications.md, "Silence"): a job that says
how often it must succeed (``expect``) goes silent when its deadline passes with no success, and its
owner is told once per silence (SILENT); the next success ends it, told once (RECOVERED). The
deadline is an entry of the time index the dispatcher finds in the minutes it reads; each success
writes the next one. Paused jobs are never silent; a change leaves the deadline alone unless it
changes ``expect``; and a job without ``expect`` costs nothing more.

Why this module is long: it is one feature's suite: the deadline and its one notice per silence,
recovery, how pauses, changes and deletions move the deadline, and what it costs, all over the
same helpers that move the fake clock and dispatch the minutes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from chronoq.domain import ids
from chronoq.domain.jobs import Job, JobPatch
from chronoq.domain.runs import RunStatus
from chronoq.domain.silence import Deadline, SilenceEvent, SilenceStatus, expects
from chronoq.execution.contract import ExecutionInput
from chronoq.usecases.ports import ExpectStore

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import finish, message, stored
from tests.unit.usecases.test_notify import WEBHOOK, Channels, notifier

#: The job's promise: a success within the hour.
HOUR = 3600
#: A schedule that never fires while a test runs (runs are triggered by hand, when wanted).
YEARLY = {"type": "cron", "expression": "0 0 1 1 *"}


@pytest.fixture
def channels() -> Channels:
    return Channels()


def expecting(fakes: Fakes, seconds: int = HOUR, owner: str = OWNER, **extra: Any) -> Job:
    spec = job_spec(YEARLY, expect={"success_within_seconds": seconds}, **extra)
    return fakes.jobs.create_job(owner, spec)


def pass_time(fakes: Fakes, seconds: float) -> None:
    """Let ``seconds`` go by, the dispatcher ticking once a minute (as its rule does)."""
    end = fakes.clock() + timedelta(seconds=seconds)
    while fakes.clock() < end:
        fakes.clock.advance(min(60.0, (end - fakes.clock()).total_seconds()))
        fakes.dispatcher.dispatch()


def dispatch_again(fakes: Fakes, since: datetime) -> None:
    """Every minute from ``since`` on read again (a dispatcher that died before checkpointing
    them), then dispatched."""
    for shard in range(fakes.shards):
        fakes.store.reopen_minute(shard, since)
    fakes.dispatcher.dispatch()


def succeeds(fakes: Fakes, job: Job) -> str:
    """A run of ``job`` triggered, started and SUCCEEDED now; the notifier hears of its end
    (its ``slots`` name the job's expectation)."""
    run = fakes.jobs.trigger_job(job.owner, job.id)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    started = fakes.executor.started[run.id]
    assert expects(started.slots), started.slots
    from tests.unit.usecases.helpers import mark_running

    assert mark_running(fakes, run)
    finish(fakes, run, RunStatus.SUCCEEDED)
    ended = stored(fakes, run)
    assert ended.status is RunStatus.SUCCEEDED
    assert ended.finished_at is not None
    return fakes.silence.succeeded(job.id, run.id, ended.finished_at)


def records(fakes: Fakes, job: Job) -> list[SilenceEvent]:
    """The job's silence records, in the order written (each once: what the stream delivers)."""
    return [e for e in fakes.store.silence_stream if e.job_id == job.id]


def deadlines(fakes: Fakes, job: Job) -> list[Deadline]:
    return [
        d for items in fakes.store.deadlines.values() for d in items.values() if d.job_id == job.id
    ]


# --- silent, once per silence ---------------------------------------------------------------


def test_given_a_job_expecting_a_success_hourly_when_none_comes_then_it_goes_silent_once(
    fakes: Fakes,
) -> None:
    start = fakes.clock()
    job = expecting(fakes)

    pass_time(fakes, HOUR - 60)
    assert records(fakes, job) == []
    assert fakes.jobs.get_job(OWNER, job.id).silent_since is None

    pass_time(fakes, 3 * 60)  # the deadline has passed: the dispatcher's next minutes see it
    (silent,) = records(fakes, job)
    assert silent.status is SilenceStatus.SILENT
    assert (silent.owner, silent.within, silent.last_success_at) == (OWNER, HOUR, None)
    assert start + timedelta(seconds=HOUR) <= silent.silent_since
    assert silent.silent_since <= start + timedelta(seconds=HOUR + 3 * 60)
    shown = fakes.jobs.get_job(OWNER, job.id)
    assert (shown.silent_since, shown.last_success_at) == (silent.silent_since, None)

    dispatch_again(fakes, start)  # its deadline read again
    pass_time(fakes, 2 * HOUR)  # and hours more of silence
    assert records(fakes, job) == [silent]


def test_given_a_silence_when_its_record_is_delivered_twice_then_each_channel_is_told_once(
    fakes: Fakes, channels: Channels
) -> None:
    job = expecting(fakes, notify={"webhook": WEBHOOK, "email": "ops@example.com"})
    pass_time(fakes, HOUR + 3 * 60)
    (silent,) = records(fakes, job)
    told = notifier(fakes, channels)

    first = told.silence_noted(silent)
    again = told.silence_noted(silent)  # (the stream batch delivered again)

    assert set(first) == {"sns", "webhook", "email"}
    assert again == first
    (published,) = channels.sns.published
    document = json.loads(published["Message"])
    assert (document["type"], document["status"], document["job_id"]) == (
        "job.silent",
        "SILENT",
        job.id,
    )
    assert document["success_within_seconds"] == HOUR
    assert published["MessageAttributes"]["status"]["StringValue"] == "SILENT"
    assert len(channels.http.requests) == len(channels.ses.sent) == 1
    (request,) = channels.http.requests
    assert request.headers["X-Chronoq-Delivery"] == f"{job.id}:{silent.key}:SILENT"
    assert "SILENT" in channels.ses.sent[0]["Message"]["Subject"]["Data"]


def test_given_a_silent_job_when_a_run_succeeds_then_it_recovers_once_and_waits_again(
    fakes: Fakes, channels: Channels
) -> None:
    job = expecting(fakes)
    pass_time(fakes, HOUR + 3 * 60)
    (silent,) = records(fakes, job)

    assert succeeds(fakes, job) == "recovered"

    silent_then, recovered = records(fakes, job)
    assert silent_then == silent
    assert recovered.status is SilenceStatus.RECOVERED
    assert (recovered.silent_since, recovered.recovered_at) == (silent.silent_since, fakes.clock())
    shown = fakes.jobs.get_job(OWNER, job.id)
    assert (shown.silent_since, shown.last_success_at) == (None, fakes.clock())
    told = notifier(fakes, channels)
    told.silence_noted(recovered)
    told.silence_noted(recovered)
    (published,) = channels.sns.published
    assert json.loads(published["Message"])["status"] == "RECOVERED"

    # the same end heard again (a stream batch delivered again): nothing more is told
    run_id, at = recovered.run_id, recovered.recovered_at
    assert run_id is not None
    assert at is not None
    assert fakes.silence.succeeded(job.id, run_id, at) == "again"
    assert len(records(fakes, job)) == 2

    # it waits again: silent an hour after that success, a new silence told once
    pass_time(fakes, HOUR + 3 * 60)
    *_, second = records(fakes, job)
    assert second.status is SilenceStatus.SILENT
    assert second.silent_since > recovered.silent_since
    assert second.last_success_at == at
    assert len(records(fakes, job)) == 3


def test_given_a_job_that_succeeds_in_time_when_its_first_deadline_passes_then_it_is_not_silent(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    pass_time(fakes, HOUR - 10 * 60)

    assert succeeds(fakes, job) == "moved"
    success = fakes.clock()
    pass_time(fakes, 20 * 60)  # past the first deadline: the success moved it on

    assert records(fakes, job) == []
    assert fakes.jobs.get_job(OWNER, job.id).last_success_at == success
    pass_time(fakes, HOUR)  # an hour after the success, with none since: silent
    (silent,) = records(fakes, job)
    assert silent.last_success_at == success


def test_given_two_dispatchers_that_read_a_deadline_at_once_when_both_mark_it_then_one_is_told(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = expecting(fakes)
    kept = fakes.store.get_expectation(job.id)
    assert kept is not None
    deadline = Deadline(job_id=job.id, at=kept.deadline)
    fakes.clock.set(kept.deadline + timedelta(minutes=2))
    read = fakes.store.get_expectations([job.id])  # (both read it before either marked it)
    monkeypatch.setattr(fakes.store, "get_expectations", lambda _: read)

    assert fakes.silence.due([deadline], fakes.clock()) == 1
    fakes.clock.advance(1)
    assert fakes.silence.due([deadline], fakes.clock()) == 0

    assert len(records(fakes, job)) == 1


def test_given_a_success_whose_deadline_was_not_written_when_heard_again_then_it_is(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = expecting(fakes)
    pass_time(fakes, 30 * 60)
    run = fakes.jobs.trigger_job(OWNER, job.id)
    at = fakes.clock()
    put = fakes.store.put_deadlines

    def dies(*_: Any) -> None:
        raise ConnectionError("the notifier died before writing the deadline")

    monkeypatch.setattr(fakes.store, "put_deadlines", dies)
    with pytest.raises(ConnectionError):
        fakes.silence.succeeded(job.id, run.id, at)
    monkeypatch.setattr(fakes.store, "put_deadlines", put)

    assert fakes.silence.succeeded(job.id, run.id, at) == "again"  # its batch delivered again

    assert Deadline(job_id=job.id, at=at + timedelta(seconds=HOUR)) in deadlines(fakes, job)
    pass_time(fakes, HOUR + 3 * 60)
    (silent,) = records(fakes, job)
    assert silent.last_success_at == at


def test_given_a_success_heard_late_when_the_job_already_went_silent_then_it_recovers(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    pass_time(fakes, HOUR - 60)
    run = fakes.jobs.trigger_job(OWNER, job.id)
    finished = fakes.clock()
    pass_time(fakes, 4 * 60)  # (the stream lags: the dispatcher sees no success)
    assert [e.status for e in records(fakes, job)] == [SilenceStatus.SILENT]

    assert fakes.silence.succeeded(job.id, run.id, finished) == "recovered"

    assert [e.status for e in records(fakes, job)] == [
        SilenceStatus.SILENT,
        SilenceStatus.RECOVERED,
    ]


# --- paused jobs, changes -------------------------------------------------------------------


def test_given_a_paused_job_when_its_deadline_passes_then_it_is_never_silent(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    pass_time(fakes, 10 * 60)
    fakes.jobs.pause_job(OWNER, job.id)

    pass_time(fakes, 3 * HOUR)

    assert records(fakes, job) == []
    assert fakes.jobs.get_job(OWNER, job.id).silent_since is None


def test_given_a_dispatcher_that_read_the_job_active_when_it_is_paused_meanwhile_then_no_silence(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = expecting(fakes)
    kept = fakes.store.get_expectation(job.id)
    assert kept is not None
    fakes.clock.set(kept.deadline + timedelta(minutes=2))
    active = fakes.store.get_jobs([job.id])  # read just before the pause
    get_jobs = fakes.store.get_jobs

    def read_then_paused(job_ids: Any, consistent: bool = False) -> dict[str, Job]:
        fakes.jobs.pause_job(OWNER, job.id)
        monkeypatch.setattr(fakes.store, "get_jobs", get_jobs)
        return active

    monkeypatch.setattr(fakes.store, "get_jobs", read_then_paused)

    assert fakes.silence.due([Deadline(job_id=job.id, at=kept.deadline)], fakes.clock()) == 0

    assert records(fakes, job) == []


def test_given_a_finished_job_when_its_deadline_passes_then_it_goes_away(fakes: Fakes) -> None:
    soon = fakes.clock() + timedelta(minutes=10)
    job = fakes.jobs.create_job(
        OWNER,
        job_spec(
            {"type": "at", "at": soon.isoformat()},
            expect={"success_within_seconds": HOUR},
        ),
    )

    pass_time(fakes, HOUR + 3 * 60)  # (its one run was sent, never heard to succeed)

    assert fakes.jobs.get_job(OWNER, job.id).state.value == "COMPLETED"
    assert records(fakes, job) == []


def test_given_a_silent_job_when_it_is_paused_then_its_silence_ends_without_a_word(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    pass_time(fakes, HOUR + 3 * 60)
    assert len(records(fakes, job)) == 1

    paused = fakes.jobs.pause_job(OWNER, job.id)

    assert paused.silent_since is None
    assert fakes.jobs.get_job(OWNER, job.id).silent_since is None
    assert fakes.jobs.page_jobs(OWNER, silent=True).items == []
    assert len(records(fakes, job)) == 1  # no RECOVERED: nothing succeeded


def test_given_a_paused_job_when_resumed_then_it_waits_from_its_resume(fakes: Fakes) -> None:
    job = expecting(fakes)
    pass_time(fakes, 10 * 60)
    fakes.jobs.pause_job(OWNER, job.id)
    pass_time(fakes, 2 * HOUR)
    resumed_at = fakes.clock()

    fakes.jobs.resume_job(OWNER, job.id)

    pass_time(fakes, HOUR - 60)
    assert records(fakes, job) == []
    pass_time(fakes, 3 * 60)
    (silent,) = records(fakes, job)
    assert silent.silent_since >= resumed_at + timedelta(seconds=HOUR)


def test_given_a_change_that_leaves_expect_alone_when_made_then_the_deadline_is_kept(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    kept = fakes.store.get_expectation(job.id)
    entries = deadlines(fakes, job)
    pass_time(fakes, 30 * 60)
    calls = counting(fakes)

    patch = {"name": "renamed", "schedule": {"type": "cron", "expression": "0 0 2 1 *"}}
    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate(patch))

    assert calls == ["get_expectation"]  # (its answer shows its silence: nothing written)
    assert fakes.store.get_expectation(job.id) == kept
    assert deadlines(fakes, job) == entries
    pass_time(fakes, 30 * 60 + 3 * 60)  # the first deadline still holds
    assert [e.status for e in records(fakes, job)] == [SilenceStatus.SILENT]


def test_given_a_change_of_expect_when_made_then_the_deadline_moves(fakes: Fakes) -> None:
    start = fakes.clock()
    job = expecting(fakes)
    pass_time(fakes, 30 * 60)

    two_hours = JobPatch.model_validate({"expect": {"success_within_seconds": 2 * HOUR}})
    fakes.jobs.update_job(OWNER, job.id, two_hours)

    assert Deadline(job_id=job.id, at=start + timedelta(hours=2)) in deadlines(fakes, job)
    pass_time(fakes, HOUR)  # past the hour: no longer its deadline
    assert records(fakes, job) == []
    pass_time(fakes, 30 * 60 + 3 * 60)  # past two hours since its start
    (silent,) = records(fakes, job)
    assert silent.within == 2 * HOUR


def test_given_expect_removed_when_its_deadline_passes_then_it_is_forgotten(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)

    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"expect": None}))

    assert fakes.store.get_expectation(job.id) is None
    pass_time(fakes, HOUR + 3 * 60)
    assert records(fakes, job) == []
    shown = fakes.jobs.get_job(OWNER, job.id)
    assert (shown.expect, shown.last_success_at, shown.silent_since) == (None, None, None)


def test_given_expect_set_on_a_job_when_made_then_it_waits_from_then(fakes: Fakes) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(YEARLY))
    pass_time(fakes, 2 * HOUR)
    set_at = fakes.clock()

    patch = JobPatch.model_validate({"expect": {"success_within_seconds": HOUR}})
    fakes.jobs.update_job(OWNER, job.id, patch)

    pass_time(fakes, HOUR + 3 * 60)
    (silent,) = records(fakes, job)
    assert silent.silent_since >= set_at + timedelta(seconds=HOUR)


def test_given_a_deleted_job_when_its_deadline_passes_then_it_goes_away(fakes: Fakes) -> None:
    job = expecting(fakes)

    fakes.jobs.delete_job(OWNER, job.id)

    assert fakes.store.get_expectation(job.id) is None
    pass_time(fakes, HOUR + 3 * 60)
    assert records(fakes, job) == []


# --- the owner's silent jobs ----------------------------------------------------------------


def test_given_silent_jobs_of_two_owners_when_each_lists_them_then_each_sees_only_theirs(
    fakes: Fakes,
) -> None:
    quiet = expecting(fakes)
    expecting(fakes, owner="bob")
    fine = expecting(fakes)
    fakes.jobs.create_job(OWNER, job_spec(YEARLY))
    pass_time(fakes, HOUR - 5 * 60)
    succeeds(fakes, fine)
    pass_time(fakes, 10 * 60)

    calls = counting(fakes)
    mine = fakes.jobs.page_jobs(OWNER, silent=True)
    theirs = fakes.jobs.page_jobs("bob", silent=True)

    assert calls == ["silent_jobs", "silent_jobs"]  # (the index holds what they show)

    assert [j.id for j in mine.items] == [quiet.id]
    assert mine.items[0].silent_since is not None
    assert [j.owner for j in theirs.items] == ["bob"]
    assert len(fakes.jobs.page_jobs(OWNER).items) == 3


# --- what it costs ----------------------------------------------------------------------------


#: Every method of the ExpectStore port (what silence reads and writes).
EXPECT_CALLS = frozenset(
    name
    for name in vars(ExpectStore)
    if not name.startswith("_") and callable(getattr(ExpectStore, name))
)


def counting(fakes: Fakes) -> list[str]:
    """Every call of the ExpectStore port from now on, by name."""
    calls: list[str] = []
    for name in EXPECT_CALLS:
        original: Callable[..., Any] = getattr(fakes.store, name)

        def counted(*args: Any, __name: str = name, __original: Any = original, **kw: Any) -> Any:
            calls.append(__name)
            return __original(*args, **kw)

        setattr(fakes.store, name, counted)
    return calls


def test_given_jobs_without_expect_when_created_run_listed_and_changed_then_silence_costs_nothing(
    fakes: Fakes, channels: Channels
) -> None:
    assert {"record_success", "mark_silent", "get_expectations", "put_deadlines"} <= EXPECT_CALLS
    calls = counting(fakes)
    job = fakes.jobs.create_job(OWNER, job_spec({"type": "cron", "expression": "* * * * *"}))
    fakes.jobs.create_job(OWNER, job_spec(YEARLY, notify={"webhook": WEBHOOK}))

    pass_time(fakes, 5 * 60)  # five minutes dispatched, a run of it queued for each
    run = fakes.jobs.trigger_job(OWNER, job.id)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert not expects(fakes.executor.started[run.id].slots)  # the notifier makes no call
    fakes.jobs.get_job(OWNER, job.id)
    fakes.jobs.page_jobs(OWNER)
    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"name": "other"}))
    fakes.jobs.pause_job(OWNER, job.id)
    fakes.jobs.resume_job(OWNER, job.id)
    fakes.jobs.delete_job(OWNER, job.id)

    assert calls == []


def test_given_a_job_with_expect_when_its_run_starts_then_its_slots_name_its_expectation(
    fakes: Fakes,
) -> None:
    job = expecting(fakes)
    plain = fakes.jobs.create_job(OWNER, job_spec(YEARLY))
    now = fakes.clock()

    assert expects(ExecutionInput.of(job, ids.run_id(job.id, now), now).slots)
    assert not expects(ExecutionInput.of(plain, ids.run_id(plain.id, now), now).slots)


def test_given_a_job_with_expect_when_the_api_changes_it_then_each_call_costs_what_the_docs_say(
    fakes: Fakes,
) -> None:
    calls = counting(fakes)

    job = expecting(fakes)
    assert calls == ["start_expectation", "put_deadlines"]
    calls.clear()
    fakes.jobs.get_job(OWNER, job.id)
    fakes.jobs.page_jobs(OWNER)
    assert calls == ["get_expectation", "get_expectations"]
    for change, written in (
        (lambda: fakes.jobs.pause_job(OWNER, job.id), ["pause_expectation"]),
        (lambda: fakes.jobs.resume_job(OWNER, job.id), ["start_expectation", "put_deadlines"]),
        (
            lambda: fakes.jobs.update_job(
                OWNER, job.id, JobPatch.model_validate({"expect": {"success_within_seconds": 120}})
            ),
            ["change_expectation", "put_deadlines"],
        ),
        (lambda: fakes.jobs.delete_job(OWNER, job.id), ["end_expectation"]),
    ):
        calls.clear()
        change()
        assert calls == written


def test_given_a_silence_that_cannot_be_marked_when_its_minute_is_dispatched_then_no_run_waits_for_it(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = expecting(fakes)
    every_minute = fakes.jobs.create_job(
        OWNER, job_spec({"type": "cron", "expression": "* * * * *"})
    )
    pass_time(fakes, HOUR - 60)
    mark = fakes.store.mark_silent

    def throttled(*_: Any) -> bool:
        raise ConnectionError("throttled")

    monkeypatch.setattr(fakes.store, "mark_silent", throttled)
    sent = len(fakes.queues.sent)
    pass_time(fakes, 3 * 60)  # its deadline's minute: the job's write refused

    assert records(fakes, job) == []
    after = [s.message.job_id for s in fakes.queues.sent[sent:]]
    assert after.count(every_minute.id) == 3  # the minutes' runs sent all the same
    monkeypatch.setattr(fakes.store, "mark_silent", mark)
    pass_time(fakes, 3 * 60)  # looked at again, in a later minute

    assert [e.status for e in records(fakes, job)] == [SilenceStatus.SILENT]
