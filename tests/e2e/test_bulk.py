"""chronoq local end to end, over HTTP and through the command line: many jobs paused by a
label, a page at a time, and resumed by it; another owner's jobs with the same label left
alone; the bulk paths asked with another method answered in JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chronoq.cli.main import cli
from click.testing import CliRunner, Result

from tests.e2e.harness import Jobs, Local, parse
from tests.support import Sink

NEVER = {"type": "cron", "expression": "0 0 1 1 *"}
LABEL = "e2e-bulk=maintenance"


@pytest.fixture
def env(local: Local, tmp_path: Path) -> dict[str, str]:
    return {
        "CHRONOQ_URL": local.url,
        "CHRONOQ_TOKEN": local.token("alice"),
        "CHRONOQ_CONFIG": str(tmp_path / "profile.json"),
    }


def chronoq(env: dict[str, str], *args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == 0, f"chronoq {' '.join(args)}: {result.stdout}\n{result.stderr}"
    return result


def states(local: Local, made: list[dict[str, Any]], user: str = "alice") -> list[str]:
    found = []
    for job in made:
        status, now = local.call("GET", f"/jobs/{job['id']}", user=user)
        assert status == 200, now
        found.append(now["state"])
    return found


def test_given_labelled_jobs_when_paused_by_label_a_page_at_a_time_then_resumed_by_the_cli_then_only_they_change(
    local: Local, sink: Sink, jobs: Jobs, env: dict[str, str]
) -> None:
    def job(name: str, labels: dict[str, str], user: str = "alice") -> dict[str, Any]:
        target = {"type": "http", "url": f"{sink.url}/bulk", "method": "POST"}
        body = {"name": name, "schedule": NEVER, "target": target, "labels": labels}
        return jobs.create(body, user)

    key, value = LABEL.split("=")
    mine = [job(f"e2e-bulk-{n}", {key: value}) for n in range(3)]
    elsewhere = job("e2e-bulk-other", {key: "other"})
    bobs = job("e2e-bulk-bob", {key: value}, user="bob")

    paused: list[str] = []
    token = ""
    pages = 0
    while True:
        status, page = local.call("POST", f"/jobs/pause?label={LABEL}&limit=2{token}")
        assert status == 200, page
        paused += [j["id"] for j in page["paused"]]
        assert page["skipped"] == []
        pages += 1
        if "next_token" not in page:
            break
        token = f"&next_token={page['next_token']}"

    assert sorted(paused) == sorted(j["id"] for j in mine)
    assert pages >= 2
    assert states(local, mine) == ["PAUSED"] * 3
    assert states(local, [elsewhere]) == ["ACTIVE"]
    assert states(local, [bobs], user="bob") == ["ACTIVE"]
    status, trail = local.call("GET", f"/jobs/{mine[0]['id']}/audit")
    assert (status, trail["entries"][0]["action"]) == (200, "pause")

    again = chronoq(env, "jobs", "pause", "-l", LABEL)
    assert "0 paused, 3 skipped" in again.stderr

    resumed = chronoq(env, "jobs", "resume", "-l", LABEL)

    assert sorted(line.split()[1] for line in resumed.stdout.splitlines()) == sorted(
        j["id"] for j in mine
    )
    assert all(line.startswith("resumed") for line in resumed.stdout.splitlines())
    assert states(local, mine) == ["ACTIVE"] * 3
    for made in mine:
        _, now = local.call("GET", f"/jobs/{made['id']}")
        assert parse(now["next_run_at"]) > datetime.now(UTC)
    assert states(local, [bobs], user="bob") == ["ACTIVE"]


@pytest.mark.parametrize(("method", "path"), [("GET", "/jobs/pause"), ("POST", "/jobs/pause")])
def test_given_the_bulk_path_when_asked_wrongly_then_a_json_refusal(
    local: Local, method: str, path: str
) -> None:
    status, answer = local.call(method, path)

    expected = {"GET": (405, "method_not_allowed"), "POST": (422, "invalid_field")}[method]
    assert (status, answer["error"]["code"]) == expected, answer
