"""chronoq local runs the heartbeat as a deployment does, and chronoq status shows it; chronoq
cost prices the dispatcher as the stack runs it, not as chronoq local ticks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronoq import compose
from chronoq import resources as r
from chronoq.cli.main import main
from chronoq.domain import limits as lim
from chronoq.local import tokens
from chronoq.local.system import LocalSystem
from chronoq.settings import ApiSettings

from tests.support import wait_for


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalSystem, list[str]]]:
    data = tmp_path_factory.mktemp("local")
    started = LocalSystem(port=0, data_dir=Path(data), in_memory=True, aws_port=None).start()
    try:
        token = tokens.mint(Path(data), "alice", admin=True)
        yield started, ["--url", started.url, "--token", token]
    finally:
        started.stop()


def _printed(args: list[str], key: str, capsys: pytest.CaptureFixture[str]) -> Any:
    """What ``chronoq ARGS`` printed under ``key``: of the JSON documents in the captured
    output (the in-process functions' log lines, a JSON object each, may share it), the one
    that has it."""
    capsys.readouterr()
    assert main(args) == 0
    out, at, decoder = capsys.readouterr().out, 0, json.JSONDecoder()
    while (at := out.find("{", at)) >= 0:
        try:
            document, at = decoder.raw_decode(out, at)
        except json.JSONDecodeError:  # (a brace inside a string)
            at += 1
            continue
        if isinstance(document, dict) and key in document:
            return document[key]
    raise AssertionError(f"no {key} in {out!r}")


def _status(api: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    beat: dict[str, object] = _printed(["status", *api, "-o", "json"], "heartbeat", capsys)
    return beat


def test_given_chronoq_local_when_started_then_its_heartbeat_runs_and_status_shows_it(
    system: tuple[LocalSystem, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    local, api = system
    assert _status(api, capsys)["job_id"] == r.HEARTBEAT_JOB_ID  # created at start

    # its next run is up to a minute away: one now, the way a trigger sends it
    jobs = compose.api(local.aws.settings(ApiSettings)).jobs
    run = jobs.trigger_job(r.SYSTEM_OWNER, r.HEARTBEAT_JOB_ID)
    wait_for(lambda: _status(api, capsys)["state"] == "ok", timeout=60, interval=0.5)

    capsys.readouterr()
    assert main(["status", *api, "--exit-status"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("heartbeat     ok") for line in printed), printed
    assert any(line.startswith("  jobs  ") for line in printed), printed  # the caller's limits
    limits = _printed(["status", *api, "-o", "json"], "limits", capsys)
    assert isinstance(limits, dict)
    assert limits["jobs"] == {"limit": lim.DEFAULT_MAX_JOBS_PER_OWNER, "used": 0}
    last = _status(api, capsys)["last_success"]
    assert isinstance(last, dict)
    assert last["id"] == run.id


def test_given_chronoq_local_ticking_every_second_when_priced_then_the_dispatcher_is_once_a_minute(
    system: tuple[LocalSystem, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, api = system
    assert main(["cost", *api, "--reset"]) == 0
    capsys.readouterr()
    began = time.time()

    def usage() -> dict[str, Any]:
        document: dict[str, Any] = _printed(["cost", *api, "--json"], "usage", capsys)
        return document

    # a few of chronoq local's one-second ticks
    counted = wait_for(lambda: (u := usage())["dispatcher_ticks"]["local"] >= 3 and u)
    minutes = int(time.time() // 60) - int(began // 60) + 1

    ticks = counted["dispatcher_ticks"]
    assert ticks["priced"] <= minutes  # one group: once a minute at most
    assert counted["lambda"]["dispatcher"]["invocations"] == ticks["priced"]
