"""Erasing an owner, on the fakes: every piece of the owner's data goes (jobs, runs and
backfills, outputs, secrets and their values, the owner's own items), runs still under way are
cancelled first, runs of jobs deleted before go too when another store knows their job, another
owner keeps everything, and erasing again takes nothing out."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain import inflight
from chronoq.domain.runs import RunStatus
from chronoq.fakes.secrets import FakeSecretValues
from chronoq.usecases.erasure import Eraser, owner_digest

from tests.builders import Fakes, job_spec, seconds_from
from tests.unit.usecases.helpers import mark_running, message, pending_run


def eraser(fakes: Fakes, **extra: object) -> Eraser:
    return Eraser(
        fakes.store,
        fakes.secret_values,
        fakes.artifacts,
        fakes.canceller,
        fakes.clock,
        **extra,  # type: ignore[arg-type]
    )


def owners_data(fakes: Fakes, owner: str) -> dict[str, object]:
    """What the fakes hold of ``owner``."""
    store, values = fakes.store, fakes.secret_values
    assert isinstance(values, FakeSecretValues)
    return {
        "jobs": [j.id for j in store.list_jobs(owner)],
        "runs": sorted(k[1] for k, run in store.runs.items() if run.owner == owner),
        "secrets": sorted(store.get_secrets(owner)),
        "values": sorted(n for (o, n) in values.values if o == owner),
        "count": store.job_count(owner),
        "in_flight": store.get_in_flight(inflight.item_key(owner)).total,
    }


def test_given_an_owner_with_jobs_runs_secrets_and_a_run_under_way_when_erased_then_nothing_of_theirs_is_left_and_bob_keeps_his() -> (
    None
):
    fakes = Fakes()
    fakes.secrets.put("alice", "token", "s3cr3t-value")
    header = {"Authorization": {"secret": "token"}}
    due = seconds_from(fakes.clock(), 2)
    spec = job_spec(
        {"type": "at", "at": due.isoformat()},
        {"type": "http", "url": "https://example.com/x", "headers": header},
        timeout_seconds=600,  # (a STANDARD execution: one that can be stopped)
    )
    job = fakes.jobs.create_job("alice", spec)
    other = fakes.jobs.create_job("alice", job_spec())
    bobs = fakes.jobs.create_job("bob", job_spec())
    run = pending_run(fakes, job)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    fakes.clock.set(run.scheduled_at)
    assert mark_running(fakes, run)
    fakes.artifacts.save_output(job.id, run.id, 1, "x" * 40_000, None)  # an S3 object
    bob_before = owners_data(fakes, "bob")

    erased = eraser(fakes).erase("alice")

    assert owners_data(fakes, "alice") == {
        "jobs": [],
        "runs": [],
        "secrets": [],
        "values": [],
        "count": 0,
        "in_flight": 0,
    }
    assert fakes.executor.stopped[run.id]  # its execution stopped, not left to write again
    assert not [o for o in fakes.artifacts.objects if f"/{job.id}/" in o]
    assert owners_data(fakes, "bob") == bob_before
    assert fakes.store.get_job(bobs.id) is not None
    assert erased.counts["jobs"] == 2
    assert erased.counts["runs_cancelled"] == 1
    assert erased.counts["run_items"] == 1
    assert erased.counts["objects"] == 1
    assert erased.counts["secrets"] == 1
    # the record names no owner: a digest of it
    assert erased.owner_digest == owner_digest("alice") != owner_digest("bob")
    assert "alice" not in erased.owner_digest
    assert other.id not in [j.id for j in fakes.store.list_jobs("alice")]


def test_given_runs_of_a_job_deleted_before_when_another_store_knows_the_job_then_they_are_erased_too() -> (
    None
):
    fakes = Fakes()
    due = seconds_from(fakes.clock(), 2)
    job = fakes.jobs.create_job("alice", job_spec({"type": "at", "at": due.isoformat()}))
    run = pending_run(fakes, job)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    fakes.clock.set(run.scheduled_at)
    assert mark_running(fakes, run)
    fakes.store.update_run(job.id, run.id, status=RunStatus.SUCCEEDED)
    fakes.jobs.delete_job("alice", job.id)  # its runs stay, until they expire
    fakes.clock.advance(timedelta(hours=1).total_seconds())

    without = eraser(fakes).erase("alice")
    assert without.counts["run_items"] == 0  # nothing knew the job
    erased = eraser(fakes, known_jobs=lambda owner: [job.id]).erase("alice")

    assert erased.counts["run_items"] == 1
    assert fakes.store.get_run(job.id, run.id) is None


def test_given_an_owner_erased_when_erased_again_then_nothing_more_is_taken_out_and_extra_steps_run() -> (
    None
):
    fakes = Fakes()
    fakes.jobs.create_job("alice", job_spec())
    calls: list[str] = []

    def audit(owner: str) -> int:
        calls.append(owner)
        return 3

    eraser(fakes, extra={"audit_entries": audit}).erase("alice")
    again = eraser(fakes, extra={"audit_entries": audit}).erase("alice")

    assert calls == ["alice", "alice"]
    assert again.counts == {
        "jobs": 0,
        "runs_cancelled": 0,
        "run_items": 0,
        "objects": 0,
        "secrets": 0,
        "owner_items": 0,
        "audit_entries": 3,
    }


def test_given_an_owners_archive_when_erased_then_every_object_of_theirs_goes_and_bobs_stay() -> (
    None
):
    from datetime import date

    from chronoq import resources as r
    from chronoq.domain import archive as domain_archive
    from chronoq.fakes.archive import FakeArchive
    from chronoq.usecases.erasure import erase_archive

    archive = FakeArchive()
    for owner in ("alice", "bob"):
        for day in range(1, 4):
            key = domain_archive.object_key(
                r.ARCHIVE_PREFIX, owner, date(2026, 11, day), "0" * 40, "1" * 40
            )
            archive.put(key, b"{}")
    bobs = sorted(k for k in archive.objects if "owner=bob/" in k)

    erased = erase_archive(archive, "alice")

    assert erased == 3
    assert sorted(archive.objects) == bobs
    assert erase_archive(archive, "alice") == 0
