"""Job names, unique per owner from now on (create, rename, delete; a create that fails
halfway gives the name back), the migration that claims the names of jobs stored before,
and lists filtered by labels; on the fakes."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from chronoq.domain import limits as lim
from chronoq.domain.errors import Conflict, InvalidRequest, NameTaken
from chronoq.domain.jobs import JobPatch, JobState
from chronoq.usecases.names import claim_existing_names

from tests.builders import OWNER, Fakes, at, job_spec


def test_given_a_job_when_another_is_created_with_its_name_then_conflict_names_the_field_and_nothing_is_kept(
    fakes: Fakes,
) -> None:
    first = fakes.jobs.create_job(OWNER, job_spec(name="nightly"))

    with pytest.raises(NameTaken) as refused:
        fakes.jobs.create_job(OWNER, job_spec(name="nightly"))

    assert refused.value.field == "name"
    assert first.id in str(refused.value)
    assert [j.id for j in fakes.jobs.list_jobs(OWNER)] == [first.id]
    assert fakes.store.job_counts[OWNER] == 1  # the refused one took no place in the quota
    assert fakes.jobs.create_job("bob", job_spec(name="nightly")).owner == "bob"


def test_given_concurrent_creates_of_one_name_when_they_race_then_one_job_is_created(
    fakes: Fakes,
) -> None:
    start = threading.Barrier(6)
    outcomes: list[str] = []

    def create() -> None:
        start.wait()
        try:
            fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
            outcomes.append("created")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["conflict"] * 5 + ["created"]
    assert len(fakes.jobs.list_jobs(OWNER)) == 1


def test_given_a_job_when_renamed_then_its_old_name_is_free_and_a_taken_name_is_refused(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
    other = fakes.jobs.create_job(OWNER, job_spec(name="weekly"))

    with pytest.raises(NameTaken):
        fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"name": "weekly"}))
    assert fakes.store.get_job(job.id) == job

    renamed = fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"name": "daily"}))
    assert renamed.name == "daily"
    assert fakes.jobs.create_job(OWNER, job_spec(name="nightly")).name == "nightly"
    with pytest.raises(NameTaken):
        fakes.jobs.update_job(OWNER, other.id, JobPatch.model_validate({"name": "daily"}))
    same = fakes.jobs.update_job(
        OWNER, job.id, JobPatch.model_validate({"name": "daily", "priority": "high"})
    )
    assert (same.name, same.priority) == ("daily", "high")  # its own name again: fine


def test_given_a_rename_that_loses_to_a_concurrent_change_when_refused_then_the_new_name_stays_free(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
    fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"priority": "high"}))

    with pytest.raises(Conflict):
        fakes.jobs.update_job(
            OWNER, job.id, JobPatch.model_validate({"name": "daily", "version": job.version})
        )

    assert fakes.jobs.create_job(OWNER, job_spec(name="daily")).name == "daily"
    with pytest.raises(NameTaken):
        fakes.jobs.create_job(OWNER, job_spec(name="nightly"))


def test_given_a_deleted_job_when_its_name_is_used_again_then_a_new_job_gets_it(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(name="nightly"))

    fakes.jobs.delete_job(OWNER, job.id)

    assert fakes.jobs.create_job(OWNER, job_spec(name="nightly")).id != job.id


def test_given_a_create_whose_job_cannot_be_stored_when_it_fails_then_name_and_quota_are_given_back(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: object) -> None:
        raise RuntimeError("DynamoDB is unavailable")

    monkeypatch.setattr(fakes.store, "put_new_job", unavailable)
    with pytest.raises(RuntimeError):
        fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
    monkeypatch.undo()

    assert fakes.store.job_counts[OWNER] == 0
    assert fakes.jobs.create_job(OWNER, job_spec(name="nightly")).name == "nightly"


def test_given_a_create_whose_run_cannot_be_sent_when_it_fails_then_nothing_is_left(
    fakes: Fakes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: object) -> int:
        raise RuntimeError("SQS is unavailable")

    fakes.dispatcher.dispatch()  # (its minute is dispatched: the run is sent at once)
    monkeypatch.setattr(fakes.queues, "send", unavailable)
    with pytest.raises(RuntimeError):
        fakes.jobs.create_job(OWNER, job_spec(at(fakes.clock() + timedelta(seconds=5)), name="x"))
    monkeypatch.undo()

    assert (fakes.store.jobs, fakes.store.names, fakes.store.job_counts[OWNER]) == ({}, {}, 0)


# --- jobs stored before names were unique ------------------------------------------------------


def test_given_jobs_stored_before_names_were_unique_when_migrated_then_each_name_is_claimed_and_duplicates_reported(
    fakes: Fakes,
) -> None:
    older = fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
    fakes.clock.advance(1)
    newer = fakes.jobs.create_job(OWNER, job_spec(name="other"))
    lone = fakes.jobs.create_job("bob", job_spec(name="nightly"))
    # as they were stored before: the same name twice, and no name claimed
    fakes.store.jobs[newer.id] = newer.model_copy(update={"name": "nightly"})
    fakes.store.names.clear()

    report = claim_existing_names(fakes.store, fakes.clock())

    assert report.names == 2
    assert [(d.owner, d.name, d.job_ids) for d in report.duplicates] == [
        (OWNER, "nightly", (older.id, newer.id))
    ]
    with pytest.raises(NameTaken) as refused:  # from now on, not a third
        fakes.jobs.create_job(OWNER, job_spec(name="nightly"))
    assert older.id in str(refused.value)  # the oldest holds it
    assert fakes.store.names[("bob", "nightly")][0] == lone.id
    again = claim_existing_names(fakes.store, fakes.clock())
    assert (again.names, again.duplicates) == (2, report.duplicates)  # run again: the same


# --- labels ------------------------------------------------------------------------------------


def test_given_labelled_jobs_when_listed_by_labels_then_only_those_with_every_label(
    fakes: Fakes,
) -> None:
    data = fakes.jobs.create_job(OWNER, job_spec(labels={"team": "data", "env": "prod"}))
    fakes.clock.advance(1)  # (listed in order of creation)
    staging = fakes.jobs.create_job(OWNER, job_spec(labels={"team": "data", "env": "staging"}))
    fakes.jobs.create_job(OWNER, job_spec(labels={"team": "web"}))
    fakes.jobs.create_job("bob", job_spec(labels={"team": "data", "env": "prod"}))

    def listed(*wanted: tuple[str, str], state: JobState | None = None) -> list[str]:
        page = fakes.jobs.page_jobs(OWNER, labels=wanted, state=state)
        return [j.id for j in page.items]

    assert listed(("team", "data")) == [data.id, staging.id]
    assert listed(("env", "prod"), ("team", "data")) == [data.id]
    assert listed(("team", "nobody")) == []
    assert listed(("team", "data"), state=JobState.ACTIVE) == [data.id, staging.id]
    assert listed(("team", "data"), state=JobState.PAUSED) == []


def test_given_a_page_of_a_label_filter_when_its_token_is_used_with_another_filter_then_refused(
    fakes: Fakes,
) -> None:
    for _ in range(3):
        fakes.jobs.create_job(OWNER, job_spec(labels={"team": "data"}))

    first = fakes.jobs.page_jobs(OWNER, limit=2, labels=(("team", "data"),))
    assert first.next_token is not None

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.page_jobs(OWNER, limit=2, next_token=first.next_token)
    assert refused.value.field == "next_token"
    rest = fakes.jobs.page_jobs(
        OWNER, limit=2, next_token=first.next_token, labels=(("team", "data"),)
    )
    assert len(rest.items) == 1


def test_given_labels_when_a_job_is_patched_then_they_are_replaced_and_an_empty_object_removes_them(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(labels={"team": "data"}))

    relabelled = fakes.jobs.update_job(
        OWNER, job.id, JobPatch.model_validate({"labels": {"team": "web", "x": "1"}})
    )
    assert relabelled.labels == {"team": "web", "x": "1"}
    assert relabelled.generation == job.generation  # the pending run is kept
    assert (
        fakes.jobs.update_job(OWNER, job.id, JobPatch.model_validate({"labels": {}})).labels == {}
    )


def test_given_the_most_labels_when_the_job_is_stored_then_it_stays_within_the_limits(
    fakes: Fakes,
) -> None:
    labels = {f"example.com/key-{i:02d}": "v" * 63 for i in range(lim.MAX_LABELS)}

    job = fakes.jobs.create_job(OWNER, job_spec(labels=labels))

    assert fakes.store.get_job(job.id) == job
