from __future__ import annotations

import pytest
from chronoq.cli.main import main
from chronoq.domain import limits as lim


def test_given_a_berlin_cron_when_previewed_on_the_command_line_then_utc_and_local_times_are_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "schedule",
            "preview",
            "--cron",
            "30 2 * * *",
            "--timezone",
            "Europe/Berlin",
            "--start-at",
            "2027-03-27T00:00:00Z",
            "--count",
            "2",
        ]
    )

    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "2027-03-27T01:30:00Z  2027-03-27T02:30:00+01:00",
        "2027-03-28T01:00:00Z  2027-03-28T03:00:00+02:00",
    ]


def test_given_an_invalid_rate_when_previewed_then_the_field_is_named_and_the_exit_code_is_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["schedule", "preview", "--rate", "30 seconds"])

    assert code == 2
    assert capsys.readouterr().err.startswith("schedule.every:")  # (as the API names it)


def test_given_a_schedule_as_json_when_previewed_then_it_is_used_as_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["schedule", "preview", "--json", '{"type": "at", "at": "2031-01-01T00:00:00+01:00"}']
    )

    assert code == 0
    assert capsys.readouterr().out.split() == ["2030-12-31T23:00:00Z", "2030-12-31T23:00:00+00:00"]


def test_given_topic_statuses_when_chronoq_local_is_started_then_they_are_checked_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from chronoq.cli.main import local

    context = local.make_context("local", [])
    assert context.params["topic_statuses"] == "FAILED,MISSED,TIMED_OUT"
    widened = local.make_context("local", ["--topic-statuses", "succeeded,failed"])
    assert widened.params["topic_statuses"] == "FAILED,SUCCEEDED"

    code = main(["local", "--topic-statuses", "FAILED,DONE"])

    assert code == 2
    assert "--topic-statuses" in capsys.readouterr().err


def test_given_a_compact_rate_when_previewed_then_it_reads_like_jobs_create_every(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "schedule",
            "preview",
            "--every",
            "90m",
            "--start-at",
            "2027-01-01T00:00:00Z",
            "--count",
            "2",
        ]
    )

    assert code == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "2027-01-01T00:00:00Z",
        "2027-01-01T01:30:00Z",
    ]


def test_given_the_local_command_when_no_guard_option_is_given_then_the_ssrf_guard_is_off() -> None:
    from chronoq.cli.main import local

    params = local.make_context("local", []).params

    assert (params["block_private_targets"], params["allowed_target_networks"]) == (False, "")
    assert params["max_jobs_per_owner"] == lim.DEFAULT_MAX_JOBS_PER_OWNER


def test_given_block_private_targets_when_chronoq_local_is_started_then_the_guard_and_quota_are_set() -> (
    None
):
    from chronoq.cli.main import local

    params = local.make_context(
        "local",
        [
            "--block-private-targets",
            "--allowed-target-networks",
            "10.0.0.0/8, fd12::/16",
            "--max-jobs-per-owner",
            "5",
            "--max-running-backfills-per-job",
            "7",
            "--max-queued-runs-per-owner",
            "50000",
        ],
    ).params

    assert params["block_private_targets"] is True
    assert params["allowed_target_networks"] == "10.0.0.0/8,fd12::/16"
    assert params["max_jobs_per_owner"] == 5
    assert (
        params["max_running_backfills_per_job"],
        params["max_running_backfills_per_owner"],
        params["max_queued_runs_per_owner"],
    ) == (7, lim.DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER, 50000)


def test_given_an_allowed_network_that_is_not_one_when_chronoq_local_is_started_then_it_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["local", "--allowed-target-networks", "10.0.0.0/33"])

    assert code == 2
    assert "10.0.0.0/33" in capsys.readouterr().err


def test_given_a_cron_that_never_fires_when_previewed_then_the_field_is_named_and_the_exit_code_is_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["schedule", "preview", "--cron", "0 0 30 2 *"])

    assert code == 2
    assert "never fires" in capsys.readouterr().err
