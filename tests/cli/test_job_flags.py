"""The job flags of limited runs and labels, ``jobs list -l``, and what ``--help`` promises
(the true defaults, what a deletion keeps)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from chronoq.cli import render
from chronoq.cli.jobspec import BadInput, JobFlags, build
from chronoq.cli.main import cli
from chronoq.domain import limits as lim
from chronoq.domain.jobs import JobSpec
from click.testing import CliRunner


def help_of(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_given_jobs_create_help_when_read_then_it_states_the_true_timeout_defaults() -> None:
    text = help_of("jobs", "create")

    assert f"[default: {lim.DEFAULT_TIMEOUT_SECONDS} s; 300 s for container targets]" in text
    assert JobSpec.model_fields["timeout_seconds"].default == lim.DEFAULT_TIMEOUT_SECONDS
    assert lim.DEFAULT_CONTAINER_TIMEOUT_SECONDS == 300
    assert "5m]" not in text


def test_given_jobs_delete_help_when_read_then_it_says_the_runs_stay_readable() -> None:
    text = help_of("jobs", "delete")

    assert "runs stay readable" in text
    assert "history goes with them" not in text


def test_given_limited_run_and_label_flags_when_built_then_the_job_has_them() -> None:
    flags = JobFlags(
        name="x",
        every="5m",
        task="chronoq.tasks:echo",
        max_runs=3,
        on_complete="DELETE",
        labels=("team=data", "env = prod", "empty="),
    )

    job = build(flags)

    assert (job["max_runs"], job["on_complete"]) == (3, "delete")
    assert job["labels"] == {"team": "data", "env": "prod", "empty": ""}
    assert JobSpec.model_validate(job).labels == job["labels"]
    with pytest.raises(BadInput, match="KEY=VALUE"):
        build(JobFlags(labels=("team",)))


def test_given_jobs_with_labels_when_listed_then_a_labels_column_shows_them_and_only_then() -> None:
    jobs: list[dict[str, Any]] = [
        {"id": "job_1", "name": "a", "state": "ACTIVE", "labels": {"team": "data", "env": "x"}},
        {"id": "job_2", "name": "b", "state": "ACTIVE", "labels": {}},
    ]
    now = datetime.now(UTC)

    lines = render.as_text(render.jobs_table(jobs, now)).splitlines()
    plain = render.as_text(render.jobs_table([jobs[1]], now)).splitlines()

    assert lines[0].split()[-1] == "LABELS"
    assert lines[1].split()[-1] == "env=x,team=data"
    assert "LABELS" not in plain[0]


def test_given_a_limited_job_when_shown_then_its_limit_last_run_and_end_are_told() -> None:
    job = {
        "id": "job_1",
        "max_runs": 3,
        "final_run_at": "2026-11-26T12:10:00Z",
        "on_complete": "delete",
        "labels": {"team": "data"},
    }

    text = render.as_text(render.job_view(job, datetime.now(UTC)))

    assert re.search(r"max runs\s+3 \(the last at 2026-11-26 12:10:00Z\)", text)
    assert re.search(r"on complete\s+delete", text)
    assert re.search(r"labels\s+team=data", text)
