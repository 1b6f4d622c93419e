"""Business calendars in the use cases, on the fakes: a job naming one carries a copy of its
rules; changing the calendar re-plans the jobs using it as a schedule change does (no run lost,
none doubled), a page of jobs per request; a calendar in use is not deleted; the per-owner
limit."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
from chronoq.domain.calendars import CalendarRules
from chronoq.domain.errors import CalendarInUse, InvalidRequest, LimitExceeded
from chronoq.domain.jobs import Job, JobPatch
from chronoq.domain.runs import RunMessage, Trigger
from chronoq.fakes import FakeQueues
from chronoq.fakes.statemachine import ExecutingFakeExecutor

from tests.builders import OWNER, Fakes, job_spec
from tests.unit.usecases.helpers import stepping_fakes

THURSDAY = date(2026, 11, 26)  # (the fake clock's day)
EVERY_DAY = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def rules(*excluded: date) -> CalendarRules:
    return CalendarRules(dates=excluded, timezone="UTC", business_days=EVERY_DAY)


def every_minute_on(name: str, mode: str = "skip") -> dict[str, object]:
    return {
        "type": "cron",
        "expression": "* * * * *",
        "calendar": {"name": name, "on_excluded": mode},
    }


class System:
    """The system running on its own (as helpers.settle runs it), its messages kept between
    calls: a tick every 20 s, every message delivered once SQS shows it."""

    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes
        self.waiting: list[tuple[RunMessage, datetime]] = []

    def run(self, minutes: int) -> Counter[str]:
        fakes = self.fakes
        assert isinstance(fakes.executor, ExecutingFakeExecutor)
        assert isinstance(fakes.queues, FakeQueues)
        end = fakes.clock() + timedelta(minutes=minutes)
        while fakes.clock() < end:
            fakes.clock.advance(20)
            fakes.dispatcher.dispatch()
            now = fakes.clock()
            self.waiting += [
                (s.message, now + timedelta(seconds=s.delay_seconds)) for s in fakes.queues.sent
            ]
            fakes.queues.sent = []
            for item in [(m, at) for m, at in self.waiting if at <= now]:
                self.waiting.remove(item)
                fakes.starter.start_run(item[0])
            fakes.executor.finish_all()
        return fakes.executor.executed


def scheduled_runs(fakes: Fakes, job: Job) -> Counter[datetime]:
    """How many scheduled runs of ``job`` executed, by fire time."""
    runs = [
        r
        for r in fakes.store.runs.values()
        if r.job_id == job.id and r.trigger is Trigger.SCHEDULE and r.started_at is not None
    ]
    return Counter(r.scheduled_at for r in runs)


def test_given_a_job_on_a_calendar_when_created_then_it_carries_its_rules_and_is_in_its_index(
    fakes: Fakes,
) -> None:
    fakes.calendars.put(OWNER, "holidays", rules(THURSDAY))
    job = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("holidays")))

    assert job.schedule.calendar is not None  # type: ignore[union-attr]
    assert job.schedule.calendar.rules == rules(THURSDAY)  # type: ignore[union-attr]
    assert job.next_run_at == datetime(2026, 11, 27, tzinfo=UTC)  # (Thursday is excluded)
    assert fakes.calendars.users(OWNER, "holidays") == [job.id]


def test_given_an_unknown_calendar_when_a_job_names_it_then_422_names_the_field(
    fakes: Fakes,
) -> None:
    fakes.calendars.put("bob", "holidays", rules())  # (another owner's)
    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.create_job(OWNER, job_spec(every_minute_on("holidays")))
    assert refused.value.field == "schedule.calendar.name"
    assert fakes.store.jobs == {}


def test_given_a_calendar_in_use_when_deleted_then_409_names_the_jobs_until_none_uses_it(
    fakes: Fakes,
) -> None:
    fakes.calendars.put(OWNER, "holidays", rules())
    first = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("holidays")))
    second = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("holidays")))

    with pytest.raises(CalendarInUse) as refused:
        fakes.calendars.delete(OWNER, "holidays")
    assert refused.value.jobs == sorted([first.id, second.id])

    plain = JobPatch.model_validate({"schedule": {"type": "cron", "expression": "* * * * *"}})
    fakes.jobs.update_job(OWNER, first.id, plain)  # (no longer names it)
    fakes.jobs.delete_job(OWNER, second.id)
    fakes.calendars.delete(OWNER, "holidays")
    assert fakes.calendars.all(OWNER) == []


def test_given_an_owner_at_the_calendar_limit_when_another_is_put_then_refused_but_a_change_is_kept(
    fakes: Fakes,
) -> None:
    calendars = fakes.calendars
    calendars.max_calendars_per_owner = 2
    calendars.put(OWNER, "a", rules())
    calendars.put(OWNER, "b", rules())

    with pytest.raises(LimitExceeded) as refused:
        calendars.put(OWNER, "c", rules())
    assert refused.value.limit == "max_calendars_per_owner"
    meta, made, _ = calendars.put(OWNER, "b", rules(THURSDAY))
    assert (meta.version, made) == (2, False)
    calendars.put("bob", "c", rules())  # (per owner)


def test_given_a_calendar_change_when_it_excludes_today_then_no_run_starts_and_when_it_no_longer_does_each_minute_runs_once() -> (
    None
):
    fakes = stepping_fakes()
    fakes.calendars.put(OWNER, "ops", rules())
    job = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("ops")))
    system = System(fakes)
    system.run(minutes=3)
    fakes.clock.advance(5)  # (the coming minute's run sent already, not yet due)
    before = scheduled_runs(fakes, job)
    assert len(before) >= 2

    _, _, replan = fakes.calendars.put(OWNER, "ops", rules(THURSDAY))
    assert replan["replanned"] == [job.id]
    system.run(minutes=3)
    assert scheduled_runs(fakes, job) == before  # (the run sent before the change never ran)

    changed_back = fakes.clock()
    fakes.calendars.put(OWNER, "ops", rules())
    executed = system.run(minutes=4)
    after = scheduled_runs(fakes, job)
    new = sorted(at for at in after if at > changed_back)
    assert len(new) >= 3
    assert all(after[at] == 1 for at in after)  # none doubled
    assert all(b - a == timedelta(minutes=1) for a, b in itertools.pairwise(new))
    assert max(executed.values()) == 1


def test_given_a_calendar_change_when_the_next_run_is_unchanged_then_it_runs_exactly_once() -> None:
    fakes = stepping_fakes()
    fakes.calendars.put(OWNER, "ops", rules())
    job = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("ops")))
    system = System(fakes)
    system.run(minutes=2)
    fakes.clock.advance(5)  # (the coming minute's run sent already, not yet due)
    fakes.calendars.put(OWNER, "ops", rules(THURSDAY + timedelta(days=7)))  # (not today)
    system.run(minutes=3)

    counted = scheduled_runs(fakes, job)
    times = sorted(counted)
    assert all(counted[at] == 1 for at in times)
    assert all(b - a == timedelta(minutes=1) for a, b in itertools.pairwise(times))


def test_given_more_users_than_a_page_when_the_calendar_changes_then_a_page_is_replanned_and_the_token_goes_on(
    fakes: Fakes,
) -> None:
    calendars = fakes.calendars
    calendars.page = 2
    calendars.put(OWNER, "ops", rules())
    jobs = [fakes.jobs.create_job(OWNER, job_spec(every_minute_on("ops"))) for _ in range(5)]
    ids = sorted(j.id for j in jobs)

    _, _, first = calendars.put(OWNER, "ops", rules(THURSDAY))
    assert first["replanned"] == ids[:2]
    assert first["next_token"] == ids[1]
    second = calendars.replan(OWNER, "ops", first["next_token"])
    assert second["replanned"] == ids[2:4]
    third = calendars.replan(OWNER, "ops", second["next_token"])
    assert (third["replanned"], third["next_token"]) == (ids[4:], None)
    again = calendars.replan(OWNER, "ops", None)  # (all on the latest version: nothing to do)
    assert again["replanned"] == []

    for job_id in ids:
        stored = fakes.jobs.get_job(OWNER, job_id)
        assert stored.next_run_at == datetime(2026, 11, 27, tzinfo=UTC)


def test_given_a_calendar_changed_while_a_job_naming_it_is_created_then_the_job_plans_on_the_change(
    fakes: Fakes,
) -> None:
    fakes.calendars.put(OWNER, "ops", rules())
    store = fakes.store
    put_new_job = store.put_new_job

    def changed_meanwhile(job: Job) -> None:
        # the calendar changes after the job read it, and its re-planning looks for the job
        # before the job is saved
        fakes.calendars.put(OWNER, "ops", rules(THURSDAY))
        put_new_job(job)

    store.put_new_job = changed_meanwhile  # type: ignore[method-assign]
    job = fakes.jobs.create_job(OWNER, job_spec(every_minute_on("ops")))

    assert job.next_run_at == datetime(2026, 11, 27, tzinfo=UTC)
    assert fakes.jobs.get_job(OWNER, job.id).next_run_at == datetime(2026, 11, 27, tzinfo=UTC)
