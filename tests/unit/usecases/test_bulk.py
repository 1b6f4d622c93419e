"""Pausing and resuming jobs by label (usecases.bulk) on the fakes: a job changed or deleted
by another request between the page's listing and its own pause is skipped and said so, the
others of the page paused all the same."""

from __future__ import annotations

from typing import Any

import pytest
from chronoq.domain.jobs import Job, JobState
from chronoq.usecases.bulk import Action, Skip, act_on_labelled

from tests.builders import OWNER, Fakes, job_spec

DATA = (("team", "data"),)


def made(fakes: Fakes, count: int) -> list[Job]:
    jobs = []
    for _ in range(count):
        jobs.append(fakes.jobs.create_job(OWNER, job_spec(labels={"team": "data"})))
        fakes.clock.advance(1)
    return jobs


def test_given_a_job_deleted_after_the_page_was_listed_when_paused_then_it_is_skipped_as_deleted(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, gone, last = made(fakes, 3)
    listed = fakes.store.page_jobs

    def list_then_delete(*args: Any, **kwargs: Any) -> Any:
        page = listed(*args, **kwargs)
        fakes.jobs.delete_job(OWNER, gone.id)  # (another request, meanwhile)
        return page

    monkeypatch.setattr(fakes.store, "page_jobs", list_then_delete)

    outcomes = act_on_labelled(fakes.jobs, Action.PAUSE, OWNER, DATA).items

    assert [(o.job.id, o.skipped) for o in outcomes] == [
        (first.id, None),
        (gone.id, Skip.DELETED),
        (last.id, None),
    ]
    assert {fakes.store.jobs[j.id].state for j in (first, last)} == {JobState.PAUSED}


def test_given_a_job_changed_while_it_is_paused_when_paused_by_label_then_it_is_skipped_as_a_conflict(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, raced, last = made(fakes, 3)
    save = fakes.store.save_job

    def lose_the_race(job: Job, expected_version: int) -> bool:
        if job.id == raced.id:
            return False  # (another request wrote the job first: its version moved on)
        return save(job, expected_version)

    monkeypatch.setattr(fakes.store, "save_job", lose_the_race)

    outcomes = act_on_labelled(fakes.jobs, Action.PAUSE, OWNER, DATA).items

    assert [(o.job.id, o.skipped) for o in outcomes] == [
        (first.id, None),
        (raced.id, Skip.CONFLICT),
        (last.id, None),
    ]
    (conflict,) = [o for o in outcomes if o.skipped]
    assert conflict.message is not None
    assert "ask again" in conflict.message
    assert fakes.store.jobs[raced.id].state is JobState.ACTIVE
    assert {fakes.store.jobs[j.id].state for j in (first, last)} == {JobState.PAUSED}
