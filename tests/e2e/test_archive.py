"""The archive on chronoq local, over HTTP and the command line: a run that ends reaches the
archive (the archiver's stream poller, a few seconds' window), its owner's day lists it as
links this chronoq local serves, and ``chronoq runs export`` finds it there (from the archive
alone, as once the table has let it go; with the table, once)."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from datetime import date, timedelta
from typing import Any

import pytest
from chronoq.domain import archive

from tests.e2e.harness import CHRONOQ, Jobs, Local, poll


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        data: bytes = answer.read()
    return data


def _archived(local: Local, day: str, user: str) -> dict[str, dict[str, Any]]:
    """The owner's runs of ``day`` in the archive: each run's latest version."""
    status, page = local.call("GET", f"/archive?day={day}", user=user)
    assert status == 200, page
    return archive.latest(
        line for found in page["objects"] for line in archive.decode(_download(found["url"]))
    )


def _export(local: Local, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [CHRONOQ, "runs", "export", *args, "--url", local.url, "--token", local.token("alice")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _ended_and_archived(local: Local, jobs: Jobs, name: str) -> tuple[dict[str, Any], str]:
    """A run of a new job, triggered, ended and archived: the run, and its day."""
    job = jobs.create(
        {
            "name": name,
            "schedule": {"type": "rate", "every": "1 day"},
            "target": {"type": "python", "task": "chronoq.tasks:echo", "args": {"n": 7}},
        }
    )
    status, run = local.call("POST", f"/jobs/{job['id']}/trigger")
    assert status == 202, run
    poll(
        lambda: local.call("GET", f"/runs/{run['id']}")[1]["status"] == "SUCCEEDED",
        60,
        lambda: f"run {run['id']} to succeed",
    )
    day = str(run["scheduled_at"][:10])
    poll(
        lambda: run["id"] in _archived(local, day, "alice"),
        60,
        lambda: f"run {run['id']} in the archive of {day}",
    )
    return run, day


def test_given_a_run_that_ended_when_exported_then_the_archive_has_it_once(
    local: Local, jobs: Jobs
) -> None:
    run, day = _ended_and_archived(local, jobs, "archived")

    kept = _archived(local, day, "alice")[run["id"]]

    assert kept["status"] == "SUCCEEDED"
    assert json.loads(kept["output"])["result"]["args"] == {"n": 7}
    assert len(kept["version"]) == archive.VERSION_DIGITS
    assert run["id"] not in _archived(local, day, "bob")  # (another owner's day)
    following = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    span = ("--from", day, "--to", following, "--job", "archived")
    from_archive = _export(local, *span, "--archive-only")
    with_table = _export(local, *span)
    assert [(r["id"], r["source"], r["status"]) for r in from_archive] == [
        (run["id"], "archive", "SUCCEEDED")
    ]
    assert [(r["id"], r["source"]) for r in with_table] == [(run["id"], "table")]


def test_given_a_link_altered_when_followed_then_it_is_refused(local: Local, jobs: Jobs) -> None:
    _, day = _ended_and_archived(local, jobs, "linked")
    status, page = local.call("GET", f"/archive?day={day}", user="alice")
    assert status == 200
    url = page["objects"][0]["url"]
    assert _download(url)  # (as given: it downloads)

    for altered in (url.replace("owner=alice", "owner=bob"), url[:-4] + "0000"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _download(altered)
        assert refused.value.code == 403, altered
