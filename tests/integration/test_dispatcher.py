"""The dispatcher on moto: the handler as EventBridge invokes it, and the dispatching rules
with a controlled clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from chronoq import app, ids
from chronoq import resources as r
from chronoq.models import JobSpec, JobState
from chronoq.service import Chronoq

from tests.integration.conftest import Harness
from tests.support import load_event


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def spec(schedule: dict[str, str], priority: str = "normal") -> JobSpec:
    return JobSpec.model_validate(
        {
            "name": "t",
            "schedule": schedule,
            "target": {"type": "http", "url": "http://127.0.0.1:9/x"},
            "priority": priority,
        }
    )


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 11, 25, 21, 47, 30, tzinfo=UTC))


@pytest.fixture
def service(harness: Harness, clock: Clock) -> Chronoq:
    built = app.build()
    built.clock = clock
    return built


def bodies(harness: Harness, priority: str = "normal") -> list[dict[str, str]]:
    """Every message on a queue in the order sent, delayed ones included (read from moto's
    queue: a receive would only show the visible ones and hide them for a while)."""
    from moto.sqs.models import sqs_backends

    queue_name = harness.aws.queue_urls[priority].rsplit("/", 1)[1]
    queue = sqs_backends["123456789012"]["us-east-1"].get_queue(queue_name)
    return [json.loads(m.body) for m in queue._messages]


def test_given_the_tick_event_when_the_handler_runs_then_the_coming_minute_is_enqueued(
    harness: Harness,
) -> None:
    service = app.build()
    job = service.create_job(
        "alice", spec({"type": "at", "at": (datetime.now(UTC) + timedelta(seconds=30)).isoformat()})
    )

    report = harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))

    assert report["dispatched"] == 1
    assert [b["run_id"] for b in bodies(harness)] == [ids.run_id(job.id, job.next_run_at)]  # type: ignore[arg-type]
    assert service.get_job("alice", job.id).state == JobState.COMPLETED
    assert harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))["dispatched"] == 0


def test_given_a_cron_job_when_its_minute_is_dispatched_then_the_next_occurrence_is_written(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    job = service.create_job("alice", spec({"type": "cron", "expression": "*/10 * * * *"}))
    assert job.next_run_at == datetime(2026, 11, 25, 21, 50, tzinfo=UTC)

    clock.now = datetime(2026, 11, 25, 21, 49, 5, tzinfo=UTC)  # dispatches 21:49 and 21:50
    report = service.dispatch()

    assert report.dispatched == 1
    assert report.scheduled == 1
    stored = service.get_job("alice", job.id)
    assert stored.next_run_at == datetime(2026, 11, 25, 22, 0, tzinfo=UTC)
    runs = service.list_runs("alice", job.id)
    assert [(x.scheduled_at.minute, x.status.value) for x in runs] == [
        (0, "SCHEDULED"),
        (50, "SCHEDULED"),
    ]
    message = bodies(harness)[0]
    assert message["run_id"] == ids.run_id(job.id, datetime(2026, 11, 25, 21, 50, tzinfo=UTC))


def test_given_a_dispatched_minute_when_dispatching_again_then_nothing_is_sent_twice(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    service.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:40Z"}))

    first = service.dispatch()
    second = service.dispatch()

    assert (first.dispatched, second.dispatched, second.minutes) == (1, 0, 0)
    assert len(bodies(harness)) == 1


def test_given_priorities_when_dispatched_then_each_run_goes_to_its_priority_queue(
    harness: Harness, service: Chronoq
) -> None:
    for priority in r.PRIORITIES:
        service.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:10Z"}, priority))

    service.dispatch()

    assert {p: len(bodies(harness, p)) for p in r.PRIORITIES} == {"high": 1, "normal": 1, "low": 1}


def test_given_a_run_inside_the_dispatched_window_when_created_then_it_goes_straight_to_sqs(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    service.dispatch()  # every shard has now dispatched through 21:48
    job = service.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:20Z"}))

    assert [b["run_id"] for b in bodies(harness)] == [ids.run_id(job.id, job.next_run_at)]  # type: ignore[arg-type]
    # The dispatcher does not send it again when its minute comes round.
    clock.now += timedelta(minutes=1)
    service.dispatch()
    assert len(bodies(harness)) == 1


def test_given_an_outage_when_dispatching_resumes_then_every_missed_minute_is_processed_in_order(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    service.dispatch()
    job = service.create_job("alice", spec({"type": "cron", "expression": "* * * * *"}))
    sent_before = len(bodies(harness))  # 21:48 was already dispatched: sent straight away

    clock.now = datetime(2026, 11, 25, 21, 53, 30, tzinfo=UTC)  # no tick for five minutes
    report = service.dispatch()

    assert report.minutes == 6 * service.shards  # 21:49 .. 21:54 on every shard
    runs = [b["run_id"] for b in bodies(harness)][sent_before:]
    expected = [
        ids.run_id(job.id, datetime(2026, 11, 25, 21, m, tzinfo=UTC)) for m in range(49, 55)
    ]
    assert runs == expected
    assert service.get_job("alice", job.id).next_run_at == datetime(
        2026, 11, 25, 21, 55, tzinfo=UTC
    )


def test_given_many_due_runs_when_dispatched_then_sqs_is_called_in_batches(
    harness: Harness, service: Chronoq
) -> None:
    for _ in range(25):
        service.create_job("alice", spec({"type": "at", "at": "2026-11-25T21:48:05Z"}))
    calls: list[int] = []
    original = service.queues._sqs.send_message_batch  # type: ignore[union-attr]

    def counting(**kwargs: object) -> object:
        calls.append(len(kwargs["Entries"]))  # type: ignore[arg-type]
        return original(**kwargs)  # type: ignore[arg-type]

    service.queues._sqs.send_message_batch = counting  # type: ignore[union-attr,method-assign]
    try:
        report = service.dispatch()
    finally:
        service.queues._sqs.send_message_batch = original  # type: ignore[union-attr,method-assign]

    assert report.dispatched == 25
    assert sum(calls) == 25
    assert max(calls) <= 10
    assert len(calls) <= 25 // 10 + service.shards


def test_given_an_outage_longer_than_the_start_deadline_when_dispatching_resumes_then_older_runs_are_missed(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    service.dispatch()
    job = service.create_job(
        "alice",
        JobSpec.model_validate(
            {
                "name": "t",
                "schedule": {"type": "cron", "expression": "* * * * *"},
                "target": {"type": "http", "url": "http://127.0.0.1:9/x"},
                "start_deadline_seconds": 150,
            }
        ),
    )
    sent_before = len(bodies(harness))

    clock.now = datetime(2026, 11, 25, 21, 54, 30, tzinfo=UTC)  # dispatching stopped at 21:48
    report = service.dispatch()

    runs = {x.scheduled_at.minute: x for x in service.list_runs("alice", job.id, limit=100)}
    sent = [b["run_id"] for b in bodies(harness)][sent_before:]
    # Deadline 150 s before 21:54:30 is 21:52:00: 21:49 .. 21:51 are too late, 21:52 on still run.
    assert [runs[m].status.value for m in (49, 50, 51)] == ["MISSED"] * 3
    assert runs[49].reason == "could not start within start_deadline_seconds (150 s)"
    assert sent == [
        ids.run_id(job.id, datetime(2026, 11, 25, 21, m, tzinfo=UTC)) for m in range(52, 56)
    ]
    assert report.missed == 3
    assert service.get_job("alice", job.id).next_run_at == datetime(
        2026, 11, 25, 21, 56, tzinfo=UTC
    )


def test_given_a_cron_with_an_end_when_its_last_occurrence_is_dispatched_then_the_job_completes(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    job = service.create_job(
        "alice",
        spec({"type": "cron", "expression": "*/1 * * * *", "end_at": "2026-11-25T21:49:00Z"}),
    )

    clock.now = datetime(2026, 11, 25, 21, 48, 30, tzinfo=UTC)
    service.dispatch()

    done = service.get_job("alice", job.id)
    assert (done.state, done.next_run_at) == (JobState.COMPLETED, None)
    assert [x.scheduled_at.minute for x in service.list_runs("alice", job.id)] == [49, 48]


def test_given_a_paused_job_when_its_minute_is_dispatched_then_nothing_is_sent(
    harness: Harness, service: Chronoq, clock: Clock
) -> None:
    job = service.create_job("alice", spec({"type": "cron", "expression": "* * * * *"}))
    service.pause_job("alice", job.id)

    clock.now = datetime(2026, 11, 25, 21, 48, 30, tzinfo=UTC)
    report = service.dispatch()

    assert report.dispatched == 0
    assert bodies(harness) == []
