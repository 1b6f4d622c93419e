"""A run's parameters in the archive: the archive table types every column, and parameters
are a JSON object of any shape, so a line keeps them as their JSON text (the run, read back
from the line, has them again)."""

from __future__ import annotations

from datetime import UTC, datetime

from chronoq.domain import archive
from chronoq.domain.runs import Priority, Run, RunStatus

AT = datetime(2026, 11, 26, 3, tzinfo=UTC)


def _ended(parameters: dict[str, object] | None) -> Run:
    return Run(
        id="job_a_1",
        job_id="job_a",
        owner="alice",
        status=RunStatus.SUCCEEDED,
        priority=Priority.NORMAL,
        scheduled_at=AT,
        parameters=parameters,
    )


def test_given_a_run_with_parameters_when_archived_then_its_line_keeps_their_json_text_and_reads_back() -> (
    None
):
    given = {"day": "2026-11-01", "n": 3, "nested": {"a": [1, "x"]}}
    planned = archive.objects("archive/", [archive.Archived("1" * 40, _ended(given))])

    (line,) = archive.decode(planned[0].body())

    assert isinstance(line["parameters"], str)
    assert Run.model_validate(line).parameters == given
    assert ("parameters", "string") in archive.COLUMNS


def test_given_a_run_without_parameters_when_archived_then_its_line_holds_none() -> None:
    planned = archive.objects("archive/", [archive.Archived("1" * 40, _ended(None))])

    (line,) = archive.decode(planned[0].body())

    assert line["parameters"] is None
