"""Jobs per owner (max_jobs_per_owner), on the fakes: a create past the quota is refused and
leaves nothing; a deleted job, or a create that failed, no longer counts; each owner has a
quota of their own."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

import pytest
from chronoq.domain.errors import QuotaExceeded
from chronoq.domain.runs import Priority, RunMessage
from chronoq.fakes import FakeQueues
from chronoq.usecases.jobs import JobOperations

from tests.builders import OWNER, Fakes, job_spec

QUOTA = 2


class Unavailable(FakeQueues):
    """SQS, refusing every send while ``down``."""

    down = False

    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        if self.down:
            raise ConnectionError("SQS is unavailable")
        return super().send(messages, now)


@pytest.fixture
def fakes() -> Fakes:
    return Fakes(queues=Unavailable())


def operations(fakes: Fakes) -> JobOperations:
    return dataclasses.replace(fakes.jobs, max_jobs_per_owner=QUOTA)


def due_now(fakes: Fakes) -> dict[str, str]:
    """A one-time schedule in the minute already dispatched: creating it sends its run."""
    return {"type": "at", "at": fakes.clock().replace(second=30).isoformat()}


def test_given_an_owner_at_the_quota_when_creating_another_job_then_refused_and_nothing_is_stored(
    fakes: Fakes,
) -> None:
    jobs = operations(fakes)
    for _ in range(QUOTA):
        jobs.create_job(OWNER, job_spec())
    index = dict(fakes.store.schedule)

    with pytest.raises(QuotaExceeded, match="max_jobs_per_owner"):
        jobs.create_job(OWNER, job_spec())

    assert len(fakes.store.list_jobs(OWNER)) == QUOTA
    assert fakes.store.schedule == index


def test_given_an_owner_at_the_quota_when_another_owner_creates_a_job_then_it_is_created(
    fakes: Fakes,
) -> None:
    jobs = operations(fakes)
    for _ in range(QUOTA):
        jobs.create_job(OWNER, job_spec())

    assert jobs.create_job("bob", job_spec()).owner == "bob"


def test_given_an_owner_at_the_quota_when_a_job_is_deleted_then_another_may_be_created(
    fakes: Fakes,
) -> None:
    jobs = operations(fakes)
    created = [jobs.create_job(OWNER, job_spec()) for _ in range(QUOTA)]

    jobs.delete_job(OWNER, created[0].id)

    assert jobs.create_job(OWNER, job_spec()).owner == OWNER
    with pytest.raises(QuotaExceeded):
        jobs.create_job(OWNER, job_spec())


def test_given_creates_that_failed_when_the_owner_creates_again_then_they_did_not_count(
    fakes: Fakes,
) -> None:
    jobs = operations(fakes)
    assert isinstance(fakes.queues, Unavailable)
    fakes.dispatcher.dispatch()  # the coming minute has begun
    fakes.queues.down = True
    for _ in range(QUOTA + 1):  # its run due at once cannot be sent: the job is not kept
        with pytest.raises(ConnectionError):
            jobs.create_job(OWNER, job_spec(due_now(fakes)))
    fakes.queues.down = False

    for _ in range(QUOTA):
        jobs.create_job(OWNER, job_spec())

    assert len(fakes.store.list_jobs(OWNER)) == QUOTA
