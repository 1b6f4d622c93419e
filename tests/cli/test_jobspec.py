"""Jobs from flags and files: the JSON the command line sends."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from chronoq.cli.jobspec import (
    BadInput,
    JobFlags,
    build,
    load,
    parse_duration,
    parse_instant,
    rate_every,
)
from chronoq.domain.jobs import JobSpec

NOW = datetime(2026, 11, 25, 21, 48, 0, 250000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("5m", 300),
        ("1h30m", 5400),
        ("2d", 172800),
        ("5 minutes", 300),
        ("1 hour", 3600),
    ],
)
def test_given_a_duration_when_parsed_then_it_is_its_seconds(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m5", "five minutes", "1h 30"])
def test_given_no_duration_when_parsed_then_it_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("every", "rate"),
    [
        ("5m", "5 minutes"),
        ("1m", "1 minute"),
        ("90m", "90 minutes"),
        ("2h", "2 hours"),
        ("1d", "1 day"),
        ("24h", "1 day"),
    ],
)
def test_given_every_when_built_then_it_is_a_rate_in_the_largest_whole_unit(
    every: str, rate: str
) -> None:
    assert rate_every(every) == rate


def test_given_every_below_a_minute_when_built_then_it_is_refused_naming_the_flag() -> None:
    with pytest.raises(BadInput, match="--every: must be whole minutes"):
        build(JobFlags(every="30s"))


def test_given_a_relative_at_when_built_then_it_is_the_next_whole_second_from_now() -> None:
    assert parse_instant("+30s", now=NOW) == "2026-11-25T21:48:31Z"
    assert parse_instant("in 5m", now=NOW) == "2026-11-25T21:53:01Z"


def test_given_an_at_without_offset_when_built_then_it_is_read_in_the_timezone() -> None:
    assert parse_instant("2027-01-01T09:00", "Europe/Berlin") == "2027-01-01T09:00:00+01:00"


def test_given_the_issues_example_flags_when_built_then_they_make_the_apis_job() -> None:
    job = build(JobFlags(name="nightly", cron="0 2 * * *", http="https://example.com/hook"))

    assert job == {
        "name": "nightly",
        "schedule": {"type": "cron", "expression": "0 2 * * *"},
        "target": {"type": "http", "url": "https://example.com/hook"},
    }
    JobSpec.model_validate(job)  # the API takes it


def test_given_every_option_when_built_then_each_lands_in_its_field() -> None:
    flags = JobFlags(
        name="report",
        every="1h",
        start_at="2027-01-01T00:00:00Z",
        http="https://example.com/hook",
        method="put",
        headers=("X-Team: data", "Authorization:Bearer abc"),
        body='{"full": true}',
        priority="HIGH",
        timeout="2m",
        start_deadline="30s",
        concurrency="forbid",
        max_attempts=5,
        retry_interval="20s",
        notify_webhook="https://example.com/ended",
        notify_on=("failed,timed_out",),
    )

    job = build(flags)

    assert job["schedule"] == {
        "type": "rate",
        "every": "1 hour",
        "start_at": "2027-01-01T00:00:00+00:00",
    }
    assert job["target"] == {
        "type": "http",
        "url": "https://example.com/hook",
        "method": "PUT",
        "headers": {"X-Team": "data", "Authorization": "Bearer abc"},
        "body": {"full": True},
    }
    assert (
        job["priority"],
        job["timeout_seconds"],
        job["start_deadline_seconds"],
        job["concurrency"],
    ) == ("high", 120, 30, "forbid")
    assert job["retry"] == {"max_attempts": 5, "interval_seconds": 20}
    assert job["notify"] == {"webhook": "https://example.com/ended", "on": ["FAILED", "TIMED_OUT"]}
    JobSpec.model_validate(job)


def test_given_a_task_with_args_when_built_then_it_is_a_python_target() -> None:
    job = build(JobFlags(name="t", at="+1m", task="chronoq.tasks:echo", args='{"n": 1}'), now=NOW)

    assert job["target"] == {"type": "python", "task": "chronoq.tasks:echo", "args": {"n": 1}}
    assert job["schedule"] == {"type": "at", "at": "2026-11-25T21:49:01Z"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (JobFlags(cron="* * * * *", every="5m"), "--every: give one of --cron, --every, --at"),
        (JobFlags(http="https://x.example", task="a:b"), "--task: give one of --http and --task"),
        (JobFlags(method="GET"), "--method: goes with --http URL"),
        (JobFlags(task="a:b", args="[1]"), "--args: must be a JSON object"),
        (JobFlags(http="https://x.example", headers=("no-colon",)), "--header: must be NAME:VALUE"),
        (JobFlags(timezone="Europe/Berlin"), "--timezone: give the schedule too"),
        (JobFlags(timeout="forever"), "--timeout: not a duration"),
    ],
)
def test_given_flags_that_make_no_job_when_built_then_the_flag_is_named(
    flags: JobFlags, message: str
) -> None:
    with pytest.raises(BadInput) as refused:
        build(flags)

    assert str(refused.value).startswith(message)


def test_given_a_patch_with_one_flag_when_built_then_only_that_field_is_sent() -> None:
    assert build(JobFlags(priority="low")) == {"priority": "low"}


def test_given_a_yaml_file_and_flags_when_built_then_the_flags_change_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: from-file\n"
        "schedule: {type: cron, expression: '*/5 * * * *', start_at: 2027-01-01T00:00:00Z}\n"
        "target: {type: python, task: 'chronoq.tasks:echo'}\n"
    )

    job = build(JobFlags(name="renamed", timezone="Europe/Berlin"), load(str(path)))

    assert job["name"] == "renamed"
    assert job["schedule"] == {
        "type": "cron",
        "expression": "*/5 * * * *",
        "start_at": "2027-01-01T00:00:00+00:00",
        "timezone": "Europe/Berlin",
    }


def test_given_a_file_that_is_not_a_job_when_loaded_then_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text("[1, 2]")

    with pytest.raises(BadInput, match="must hold one job"):
        load(str(path))
