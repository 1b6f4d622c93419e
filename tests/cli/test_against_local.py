"""The command line against one chronoq local (started once for the module, in a
subprocess, as the end-to-end tests start it), run in-process with click's test runner."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli.main import cli
from click.testing import CliRunner, Result

from tests.e2e.harness import CHRONOQ, Local, poll, start_local

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    with start_local(tmp_path_factory.mktemp("chronoq-cli")) as started:
        yield started


@pytest.fixture(scope="module")
def env(local: Local, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The endpoint and token from the environment; no profile."""
    config = tmp_path_factory.mktemp("config") / "profile.json"
    return {
        "CHRONOQ_URL": local.url,
        "CHRONOQ_TOKEN": local.token("alice"),
        "CHRONOQ_CONFIG": str(config),
    }


def chronoq(env: dict[str, str], *args: str, code: int = 0, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, list(args), env=env, input=stdin)
    assert result.exit_code == code, (
        f"chronoq {' '.join(args)}: exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    )
    return result


def as_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(chronoq(env, *args, "-o", "json").stdout)


def test_given_flags_when_a_job_is_created_then_it_is_listed_read_paused_resumed_and_deleted(
    env: dict[str, str],
) -> None:
    created = as_json(
        env,
        "jobs",
        "create",
        "--name",
        "nightly",
        "--cron",
        "0 2 * * *",
        "--timezone",
        "Europe/Berlin",
        "--http",
        "https://example.com/hook",
        "--priority",
        "high",
    )
    job_id = created["id"]
    assert created["schedule"]["expression"] == "0 2 * * *"
    assert (created["priority"], created["target"]["url"]) == ("high", "https://example.com/hook")

    listed = chronoq(env, "jobs", "list").stdout
    row = next(line for line in listed.splitlines() if line.startswith(job_id))
    assert row.split()[1:3] == ["nightly", "ACTIVE"]
    assert "daily at 02:00 (Europe/Berlin)" in row
    assert job_id in [j["id"] for j in as_json(env, "jobs", "list", "--all")["jobs"]]

    shown = chronoq(env, "jobs", "get", job_id).stdout
    assert "target       http POST https://example.com/hook" in shown.splitlines()

    assert as_json(env, "jobs", "pause", job_id)["state"] == "PAUSED"
    assert "state        ACTIVE" in chronoq(env, "jobs", "resume", job_id).stdout
    assert as_json(env, "jobs", "update", job_id, "--every", "2h")["schedule"]["every"] == "2 hours"

    assert chronoq(env, "jobs", "delete", job_id).stdout.strip() == f"deleted {job_id}"
    gone = chronoq(env, "jobs", "get", job_id, code=3)
    assert gone.stderr.startswith("error: HTTP 404")


def test_given_an_invalid_cron_when_created_then_the_apis_error_names_the_field_and_the_exit_code_is_1(
    env: dict[str, str],
) -> None:
    result = chronoq(
        env,
        "jobs",
        "create",
        "--name",
        "bad",
        "--cron",
        "0 2 * *",
        "--http",
        "https://example.com/",
        code=1,
    )

    assert result.stderr.startswith("error: HTTP 422")
    assert "  schedule.expression: must have five fields" in result.stderr
    assert result.stdout == ""


def test_given_flags_that_make_no_job_when_created_then_nothing_is_sent_and_the_exit_code_is_2(
    env: dict[str, str],
) -> None:
    result = chronoq(env, "jobs", "create", "--name", "half", "--every", "5m", code=2)

    assert "a job needs target (--http or --task)" in result.stderr


def test_given_a_job_file_when_triggered_then_the_run_is_followed_to_success_with_its_logs_and_output(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: from-file\nschedule: {type: rate, every: 1 day}\ntarget:\n  type: python\n  task: chronoq.tasks:sleep\n  args: {seconds: 1.5}\n"
    )
    job = as_json(env, "jobs", "create", "-f", str(path))
    assert (job["name"], job["target"]["task"]) == ("from-file", "chronoq.tasks:sleep")

    run = as_json(env, "jobs", "trigger", job["id"])
    followed = chronoq(
        env, "runs", "logs", run["id"], "--follow", "--interval", "0.3", "--exit-status"
    )

    assert "[attempt 1] calling chronoq.tasks:sleep" in followed.stdout
    assert "INFO sleeping 1.5 s" in followed.stdout
    statuses = [line.split()[2] for line in followed.stderr.splitlines() if line.startswith("-- ")]
    assert statuses[-1] == "SUCCEEDED"
    assert len(statuses) == len(set(statuses))  # each change once

    assert json.loads(chronoq(env, "runs", "output", run["id"]).stdout) == {
        "result": {"slept": 1.5}
    }
    assert chronoq(env, "runs", "logs", run["id"]).stdout == followed.stdout
    table = chronoq(env, "runs", "list", job["id"]).stdout.splitlines()
    assert table[0].split() == ["ID", "STATUS", "SCHEDULED", "LAG", "DURATION", "ATTEMPTS"]
    assert table[1].startswith(f"{run['id']}  SUCCEEDED")
    detail = chronoq(env, "runs", "get", run["id"]).stdout
    assert "status     SUCCEEDED" in detail
    assert "ATTEMPT" in detail
    assert as_json(env, "runs", "get", run["id"])["attempts"][0]["outcome"] == "SUCCEEDED"
    chronoq(env, "jobs", "delete", job["id"])


def test_given_a_job_on_stdin_as_json_when_watched_then_a_triggered_run_is_seen_to_its_end(
    env: dict[str, str], local: Local
) -> None:
    document = {
        "name": "watched",
        "schedule": {"type": "rate", "every": "1 day"},
        "target": {"type": "python", "task": "chronoq.tasks:echo"},
    }
    job = json.loads(
        chronoq(env, "jobs", "create", "-f", "-", "-o", "json", stdin=json.dumps(document)).stdout
    )
    watcher = subprocess.Popen(
        [CHRONOQ, "runs", "watch", job["id"], "--count", "1", "--interval", "0.3", "-o", "json"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the watcher has taken its baseline once it polls: trigger only then
        poll(
            lambda: watcher.poll() is None and local.runs(job["id"]) == [],
            30,
            "the watcher to start",
        )
        run = as_json(env, "jobs", "trigger", job["id"])
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert watcher.returncode == 0, err
    seen = [json.loads(line) for line in out.splitlines()]
    assert {r["id"] for r in seen} == {run["id"]}
    assert seen[-1]["status"] == "SUCCEEDED"
    chronoq(env, "jobs", "delete", job["id"])


def test_given_the_version_flag_when_run_then_the_version_is_printed(env: dict[str, str]) -> None:
    assert chronoq(env, "--version").stdout.startswith("chronoq ")


def test_given_chronoq_local_on_a_port_of_its_own_when_logging_in_locally_then_the_profile_names_that_port(
    local: Local, tmp_path: Path
) -> None:
    config = tmp_path / "profile.json"
    env = {"CHRONOQ_CONFIG": str(config), "CHRONOQ_URL": "", "CHRONOQ_TOKEN": ""}

    chronoq(env, "login", "--local", "--data-dir", str(local.data_dir), "--user", "alice")

    assert json.loads(config.read_text())["profiles"]["default"]["url"] == local.url
    chronoq(env, "jobs", "list")  # (the token it saved is good there)
