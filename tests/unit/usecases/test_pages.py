"""Listings page by page and idempotency keys, on the fakes: tokens bound to their owner and
list, filters as the owner sees the jobs now, runs of deleted jobs, requests served once."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq.domain.errors import Conflict, InvalidRequest, NotFound
from chronoq.domain.jobs import JobState
from chronoq.domain.runs import RunStatus
from chronoq.resources import IDEMPOTENCY_KEY_SECONDS, IDEMPOTENCY_STALE_SECONDS
from chronoq.usecases.runs import run_filter

from tests.builders import OWNER, Fakes, at, job_spec, seconds_from

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def test_given_jobs_when_paged_then_tokens_lead_through_every_job_once(fakes: Fakes) -> None:
    jobs = []
    for _ in range(5):
        jobs.append(fakes.jobs.create_job(OWNER, job_spec()))
        fakes.clock.advance(1)

    first = fakes.jobs.page_jobs(OWNER, 2)
    second = fakes.jobs.page_jobs(OWNER, 2, first.next_token)
    third = fakes.jobs.page_jobs(OWNER, 2, second.next_token)

    assert [first.items, second.items, third.items] == [jobs[:2], jobs[2:4], jobs[4:]]
    assert third.next_token is None


def test_given_a_one_time_job_that_has_fired_when_listed_by_state_then_it_is_completed(
    fakes: Fakes,
) -> None:
    once = fakes.jobs.create_job(OWNER, job_spec(at(seconds_from(NOW, 10))))
    recurring = fakes.jobs.create_job(OWNER, job_spec())
    fakes.clock.advance(20)  # (the stored job still says ACTIVE)

    completed = fakes.jobs.page_jobs(OWNER, state=JobState.COMPLETED)
    active = fakes.jobs.page_jobs(OWNER, state=JobState.ACTIVE)

    assert [(j.id, j.state) for j in completed.items] == [(once.id, JobState.COMPLETED)]
    assert [j.id for j in active.items] == [recurring.id]


def test_given_alices_token_when_bob_or_another_list_uses_it_then_invalid_next_token(
    fakes: Fakes,
) -> None:
    for owner in (OWNER, OWNER, "bob"):
        fakes.jobs.create_job(owner, job_spec())
    token = fakes.jobs.page_jobs(OWNER, 1).next_token
    assert token is not None

    for call in (
        lambda: fakes.jobs.page_jobs("bob", 1, token),
        lambda: fakes.jobs.page_jobs(OWNER, 1, token, JobState.PAUSED),
        lambda: fakes.runs.page_runs(OWNER, "job_0123456789abcdef", 1, token),
        lambda: fakes.jobs.page_jobs(OWNER, 1, token[:-2]),
    ):
        with pytest.raises(InvalidRequest) as refused:
            call()
        assert refused.value.field == "next_token"


def test_given_a_deleted_jobs_runs_when_paged_by_job_id_then_its_owner_still_has_them(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())
    runs = []
    for _ in range(3):
        runs.append(fakes.jobs.trigger_job(OWNER, job.id))
        fakes.clock.advance(1)
    fakes.jobs.delete_job(OWNER, job.id)

    with pytest.raises(NotFound):
        fakes.runs.page_job_runs(OWNER, job.id)
    first = fakes.runs.page_runs(OWNER, job.id, 2)
    rest = fakes.runs.page_runs(OWNER, job.id, 2, first.next_token)

    assert [r.id for r in first.items + rest.items] == [r.id for r in reversed(runs)]
    assert fakes.runs.page_runs("bob", job.id).items == []


def test_given_run_statuses_when_parsed_then_any_case_and_several_else_invalid_status() -> None:
    assert run_filter("failed, TIMED_OUT").statuses == frozenset(
        {RunStatus.FAILED, RunStatus.TIMED_OUT}
    )
    assert run_filter(None).statuses is None
    with pytest.raises(InvalidRequest) as refused:
        run_filter("FAILED,DONE")
    assert refused.value.field == "status"


# --- idempotency keys -------------------------------------------------------------------------


def counted(fakes: Fakes, calls: list[int]) -> Any:
    def act() -> dict[str, Any]:
        calls.append(1)
        return {"n": len(calls)}

    return act


def test_given_a_key_when_the_same_request_comes_again_then_the_first_answer_without_acting(
    fakes: Fakes,
) -> None:
    calls: list[int] = []
    act = counted(fakes, calls)

    first = fakes.idempotency.once(OWNER, "k", {"body": 1}, act)
    again = fakes.idempotency.once(OWNER, "k", {"body": 1}, act)
    bobs = fakes.idempotency.once("bob", "k", {"body": 1}, act)
    without = fakes.idempotency.once(OWNER, None, {"body": 1}, act)

    assert (first, again, bobs, without) == (
        ({"n": 1}, False),
        ({"n": 1}, True),
        ({"n": 2}, False),
        ({"n": 3}, False),
    )


def test_given_a_key_when_another_request_or_one_still_served_comes_then_conflict(
    fakes: Fakes,
) -> None:
    calls: list[int] = []
    fakes.idempotency.once(OWNER, "k", {"body": 1}, counted(fakes, calls))

    with pytest.raises(Conflict, match="another request"):
        fakes.idempotency.once(OWNER, "k", {"body": 2}, counted(fakes, calls))

    def inner() -> dict[str, Any]:
        with pytest.raises(Conflict, match="still being served"):
            fakes.idempotency.once(OWNER, "k2", {"body": 1}, counted(fakes, calls))
        return {}

    fakes.idempotency.once(OWNER, "k2", {"body": 1}, inner)
    assert calls == [1]


def test_given_a_failed_request_or_an_expired_key_when_the_key_comes_again_then_it_acts_afresh(
    fakes: Fakes,
) -> None:
    def fail() -> dict[str, Any]:
        raise InvalidRequest("name", "bad")

    with pytest.raises(InvalidRequest):
        fakes.idempotency.once(OWNER, "k", {"body": 1}, fail)
    calls: list[int] = []
    assert fakes.idempotency.once(OWNER, "k", {"body": 2}, counted(fakes, calls)) == (
        {"n": 1},
        False,
    )

    fakes.clock.advance(IDEMPOTENCY_KEY_SECONDS)

    assert fakes.idempotency.once(OWNER, "k", {"body": 3}, counted(fakes, calls)) == (
        {"n": 2},
        False,
    )


def test_given_a_key_whose_first_request_died_when_it_comes_again_after_a_while_then_it_acts(
    fakes: Fakes,
) -> None:
    calls: list[int] = []
    fakes.idempotency.once(OWNER, "k", {"body": 1}, counted(fakes, calls))
    # (as if its function had died after taking the key: no answer kept)
    fakes.store.keys = {
        key: (replace(record, answer=None), expires)
        for key, (record, expires) in fakes.store.keys.items()
    }
    with pytest.raises(Conflict, match="still being served"):
        fakes.idempotency.once(OWNER, "k", {"body": 1}, counted(fakes, calls))

    fakes.clock.advance(IDEMPOTENCY_STALE_SECONDS + 1)

    assert fakes.idempotency.once(OWNER, "k", {"body": 1}, counted(fakes, calls)) == (
        {"n": 2},
        False,
    )


def test_given_a_bad_key_when_used_then_invalid_idempotency_key(fakes: Fakes) -> None:
    for key in ("", "x" * 256, "caf\u00e9", "a\nb"):
        with pytest.raises(InvalidRequest) as refused:
            fakes.idempotency.once(OWNER, key, {}, dict)
        assert refused.value.field == "Idempotency-Key"
