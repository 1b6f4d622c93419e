"""``chronoq runs export`` against the api function's handler over the fakes: the runs of a
range from the runs table and the archive together, each run once (the archive's highest
version, unless the table still holds the run: its copy is the latest)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from chronoq.domain import archive
from chronoq.domain.archive import Archived
from chronoq.domain.jobs import Job
from chronoq.domain.runs import Run, RunStatus
from chronoq.fakes import FakeArchive

from tests.builders import Fakes, job_spec
from tests.unit.cli_on_fakes import USER, HandlerApi, api, chronoq, fakes

__all__ = ["api", "fakes"]  # (fixtures)

DAY = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.fixture(autouse=True)
def downloads(fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The archive's links, followed on the fake bucket (no network)."""
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    monkeypatch.setattr("chronoq.cli.export._download", store.download)


def a_job(fakes: Fakes, name: str) -> Job:
    return fakes.jobs.create_job(USER, job_spec(name=name))


def a_run(job: Job, at: datetime, status: RunStatus = RunStatus.SUCCEEDED, **more: Any) -> Run:
    return Run(
        id=f"{job.id}_{at:%Y%m%dT%H%M%SZ}",
        job_id=job.id,
        owner=job.owner,
        status=status,
        priority=job.priority,
        scheduled_at=at,
        started_at=at + timedelta(milliseconds=5),
        finished_at=at + timedelta(seconds=1),
        **more,
    )


def archived(fakes: Fakes, *versions: tuple[int, Run]) -> None:
    fakes.archiver.archive_batch([Archived(archive.version(str(n)), run) for n, run in versions])


def exported(*args: str) -> list[dict[str, Any]]:
    text = chronoq("runs", "export", *args).stdout
    return [json.loads(line) for line in text.splitlines()]


def test_given_runs_in_the_table_and_the_archive_when_exported_then_each_run_comes_once_latest_first(
    api: HandlerApi, fakes: Fakes
) -> None:
    job = a_job(fakes, "nightly")
    expired = a_run(job, DAY + timedelta(hours=1), RunStatus.FAILED)  # (the table let it go)
    rewritten = a_run(job, DAY + timedelta(hours=2))
    kept = a_run(job, DAY + timedelta(days=1, hours=3))
    archived(
        fakes,
        (10, expired),
        (11, rewritten),
        (30, rewritten.model_copy(update={"notifications": {"sns": "published"}})),
        (12, kept),
    )
    fakes.store.create_run(kept, DAY)

    runs = exported("--from", "2026-11-20", "--to", "2026-11-22")

    assert [(run["id"], run["source"]) for run in runs] == [
        (expired.id, "archive"),
        (rewritten.id, "archive"),
        (kept.id, "table"),
    ]
    assert runs[1]["version"] == archive.version("30")
    assert runs[1]["notifications"] == {"sns": "published"}
    assert "version" not in runs[2]  # (the table's copy, as the API shows it)


def test_given_a_range_when_exported_then_runs_of_other_fire_times_stay_out(
    api: HandlerApi, fakes: Fakes
) -> None:
    job = a_job(fakes, "hourly")
    runs = [a_run(job, DAY + timedelta(hours=h)) for h in (-1, 0, 5, 24, 30)]
    archived(fakes, *((n, run) for n, run in enumerate(runs, start=1)))

    found = exported("--from", "2026-11-20T00:00:00Z", "--to", "2026-11-21T00:00:00Z")

    assert [run["id"] for run in found] == [runs[1].id, runs[2].id]


def test_given_a_job_and_statuses_when_exported_then_only_those_runs(
    api: HandlerApi, fakes: Fakes
) -> None:
    mine, other = a_job(fakes, "mine"), a_job(fakes, "other")
    failed = a_run(mine, DAY + timedelta(hours=1), RunStatus.FAILED)
    archived(
        fakes,
        (1, failed),
        (2, a_run(mine, DAY + timedelta(hours=2))),
        (3, a_run(other, DAY + timedelta(hours=3), RunStatus.FAILED)),
    )

    found = exported(
        "--from", "2026-11-20", "--to", "2026-11-21", "--job", "mine", "--status", "failed"
    )

    assert [run["id"] for run in found] == [failed.id]


def test_given_archive_only_when_exported_then_what_only_the_table_holds_stays_out(
    api: HandlerApi, fakes: Fakes
) -> None:
    job = a_job(fakes, "both")
    in_both = a_run(job, DAY + timedelta(hours=1))
    only_table = a_run(job, DAY + timedelta(hours=2), RunStatus.RUNNING)
    archived(fakes, (1, in_both))
    fakes.store.create_run(in_both, DAY)
    fakes.store.create_run(only_table, DAY)

    found = exported("--from", "2026-11-20", "--to", "2026-11-21", "--archive-only")

    assert [(run["id"], run["source"]) for run in found] == [(in_both.id, "archive")]


def test_given_csv_and_a_file_when_exported_then_the_file_holds_a_row_per_run(
    api: HandlerApi, fakes: Fakes, tmp_path: Path
) -> None:
    job = a_job(fakes, "csv")
    run = a_run(job, DAY + timedelta(hours=1), RunStatus.FAILED, error="TargetError: HTTP 503")
    archived(fakes, (1, run))
    target = tmp_path / "runs.csv"

    result = chronoq(
        "runs",
        "export",
        "--from",
        "2026-11-20",
        "--to",
        "2026-11-21",
        "-o",
        "csv",
        "--output",
        str(target),
    )

    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [(row["id"], row["status"], row["error"], row["source"]) for row in rows] == [
        (run.id, "FAILED", "TargetError: HTTP 503", "archive")
    ]
    assert result.stdout == ""
    assert "1 runs (1 from the archive)" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--from", "yesterday", "--to", "2026-11-21"), "ISO 8601"),
        (("--from", "2026-11-21T00:00:00", "--to", "2026-11-22"), "offset"),
        (("--from", "2026-11-21", "--to", "2026-11-20"), "--to must come after --from"),
        (("--from", "2026-11-20", "--to", "2026-11-21", "--status", "DONE"), "statuses are"),
    ],
)
def test_given_a_bad_range_or_status_when_exported_then_refused_before_anything_is_sent(
    api: HandlerApi, args: tuple[str, ...], message: str
) -> None:
    result = chronoq("runs", "export", *args, code=2)

    assert message in result.stderr
    assert not api.sent


def test_given_a_job_name_no_job_has_when_exported_then_not_found(api: HandlerApi) -> None:
    result = chronoq(
        "runs", "export", "--from", "2026-11-20", "--to", "2026-11-21", "--job", "nope", code=3
    )

    assert "no job named 'nope'" in result.stderr
