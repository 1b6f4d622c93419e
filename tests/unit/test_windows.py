"""Time windows: each occurrence of a windowed schedule starts at an offset derived from its
job and its fire time, the same however often it is computed, spread evenly over the window
across jobs; a window longer than the schedule's shortest gap is refused."""

from __future__ import annotations

import secrets
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from chronoq.domain import ids, windows
from chronoq.domain import limits as lim
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.jobs import JobSpec
from chronoq.domain.runs import Occurrence, Trigger, planned_start
from chronoq.domain.schedules import CronSchedule, RateSchedule, Schedule, preview
from pydantic import TypeAdapter, ValidationError

from tests.builders import job_spec

MIDNIGHT = datetime(2026, 11, 27, tzinfo=UTC)
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


def schedule(**fields: object) -> CronSchedule | RateSchedule:
    parsed = TypeAdapter(Schedule).validate_python(fields)
    assert isinstance(parsed, CronSchedule | RateSchedule)
    return parsed


def test_given_a_job_and_a_fire_time_when_the_offset_is_computed_again_then_it_is_the_same() -> (
    None
):
    job_id = "job_5f0c1a2b3c4d5e6f"

    offsets = {windows.offset(job_id, MIDNIGHT, 60) for _ in range(5)}

    (offset,) = offsets
    assert 0 <= offset < 60
    # another fire time of the same job: another offset (the job does not always go last)
    later = [windows.offset(job_id, MIDNIGHT + timedelta(days=d), 60) for d in range(20)]
    assert len(set(later)) > 5


def test_given_no_window_when_the_offset_is_computed_then_it_is_zero() -> None:
    assert windows.offset("job_5f0c1a2b3c4d5e6f", MIDNIGHT, 0) == 0
    assert windows.offset("job_5f0c1a2b3c4d5e6f", MIDNIGHT, 1) == 0
    assert windows.window_of(schedule(type="cron", expression="0 0 * * *")) == 0


def test_given_10000_jobs_on_one_cron_with_a_60s_window_when_offsets_are_computed_then_they_spread_evenly_over_the_window() -> (
    None
):
    jobs = [f"job_{secrets.token_hex(8)}" for _ in range(10_000)]

    per_second = Counter(windows.offset(job, MIDNIGHT, 60) for job in jobs)

    assert set(per_second) == set(range(60))  # every second of the window is used
    mean = 10_000 / 60  # about 167 a second, where without a window all 10,000 share one
    assert max(per_second.values()) < 1.35 * mean
    assert min(per_second.values()) > 0.65 * mean


def test_given_a_windowed_occurrence_when_its_run_id_is_made_then_it_carries_the_offset_and_its_planned_start_follows() -> (
    None
):
    run_id = ids.run_id("job_5f0c1a2b3c4d5e6f", MIDNIGHT, generation=2, offset=37)

    assert run_id == "job_5f0c1a2b3c4d5e6f_20261127T000000Z-g2-w37"
    assert ids.window_offset_of(run_id) == 37
    assert ids.job_id_of_run(run_id) == "job_5f0c1a2b3c4d5e6f"
    assert planned_start(run_id, Trigger.SCHEDULE, MIDNIGHT, None) == MIDNIGHT + timedelta(
        seconds=37
    )
    occurrence = Occurrence(
        job_id="job_5f0c1a2b3c4d5e6f", run_id=run_id, scheduled_at=MIDNIGHT, priority="normal"
    )
    assert occurrence.starts_at == MIDNIGHT + timedelta(seconds=37)
    # without a window the id is as it always was
    assert ids.run_id("job_5f0c1a2b3c4d5e6f", MIDNIGHT) == "job_5f0c1a2b3c4d5e6f_20261127T000000Z"
    assert ids.window_offset_of("job_5f0c1a2b3c4d5e6f_20261127T000000Z-mabc123") == 0


def test_given_a_job_with_a_window_when_its_occurrence_id_is_asked_then_it_is_derived_from_the_job_and_the_instant() -> (
    None
):
    from chronoq.domain.jobs import Job

    spec = job_spec({"type": "cron", "expression": "0 0 * * *", "window_seconds": 600})
    job = Job.model_validate(
        {
            **spec.model_dump(),
            "id": "job_5f0c1a2b3c4d5e6f",
            "owner": "alice",
            "state": "ACTIVE",
            "next_run_at": MIDNIGHT,
            "version": 1,
            "created_at": NOW,
            "updated_at": NOW,
        }
    )
    offset = windows.offset(job.id, MIDNIGHT, 600)

    assert job.occurrence_id(MIDNIGHT) == ids.run_id(job.id, MIDNIGHT, 1, offset)
    assert job.starts_at(MIDNIGHT) == MIDNIGHT + timedelta(seconds=offset)
    assert job.next_start_at == job.starts_at(MIDNIGHT)


@pytest.mark.parametrize(
    ("fields", "longest"),
    [
        ({"type": "rate", "every": "5 minutes", "start_at": "2026-11-26T12:05:00Z"}, 300),
        ({"type": "cron", "expression": "*/10 * * * *"}, 600),
        ({"type": "cron", "expression": "0,5 * * * *"}, 300),  # 5 min apart, then 55
        ({"type": "cron", "expression": "0 0 * * *", "timezone": "Europe/Berlin"}, 23 * 3600),
    ],
)
def test_given_a_window_when_checked_then_it_may_be_as_long_as_the_shortest_gap_and_no_longer(
    fields: dict[str, object], longest: int
) -> None:
    windows.check(schedule(**fields, window_seconds=longest), NOW)
    with pytest.raises(InvalidRequest) as refused:
        windows.check(schedule(**fields, window_seconds=longest + 1), NOW)
    assert refused.value.field == "schedule.window_seconds"


def test_given_a_window_of_a_minute_or_less_when_checked_then_every_recurring_schedule_takes_it() -> (
    None
):
    windows.check(schedule(type="cron", expression="* * * * *", window_seconds=60), NOW)


@pytest.mark.parametrize(
    "fields",
    [
        {"type": "cron", "expression": "0 0 * * *", "window_seconds": -1},
        {"type": "cron", "expression": "0 0 * * *", "window_seconds": lim.MAX_WINDOW_SECONDS + 1},
        {"type": "cron", "expression": "0 0 * * *", "window_seconds": "60"},
        {"type": "at", "at": "2030-01-01T00:00:00Z", "window_seconds": 60},
    ],
)
def test_given_a_window_out_of_bounds_or_on_a_one_time_schedule_when_validated_then_it_is_refused(
    fields: dict[str, object],
) -> None:
    with pytest.raises(ValidationError) as refused:
        JobSpec.model_validate(
            {"name": "n", "schedule": fields, "target": {"type": "http", "url": "http://x/"}}
        )
    assert "window_seconds" in str(refused.value)


def test_given_a_windowed_schedule_when_previewed_for_a_job_then_each_fire_time_shows_the_jobs_start() -> (
    None
):
    windowed = schedule(type="cron", expression="0 0 * * *", window_seconds=3600)
    fires = preview(windowed, NOW, 3)
    job_id = "job_5f0c1a2b3c4d5e6f"

    shown = windows.preview(windowed, fires, job_id)
    anonymous = windows.preview(windowed, fires, None)
    plain = windows.preview(schedule(type="cron", expression="0 0 * * *"), fires, None)

    for entry in shown:
        fire = datetime.fromisoformat(entry["utc"] or "")
        assert entry["starts_at"] == (
            fire + timedelta(seconds=windows.offset(job_id, fire, 3600))
        ).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [e["starts_at"] for e in anonymous] == [None] * 3  # the offset is the job's
    assert [e["starts_at"] for e in plain] == [e["utc"] for e in plain]
