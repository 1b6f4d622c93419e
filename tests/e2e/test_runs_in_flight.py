"""An owner's runs in flight on chronoq local, over HTTP: with ``--max-runs-in-flight 2``,
three of alice's runs due together start two at once; the third waits, recorded, until one of
them ends (its end reaches the notifier through the runs table's stream, which gives the
count back and wakes it), and bob, due at the same second, never waits for alice."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from tests.e2e.harness import Local, now, parse, start_local
from tests.support import Sink, wait_for

#: How long each of alice's runs lasts (the sink answers after it).
RUN_SECONDS = 3.0


def _create(local: Local, user: str, body: dict[str, Any]) -> str:
    status, job = local.call("POST", "/jobs", user=user, body=body)
    assert status == 201, f"{user} creating {body['name']!r}: {status} {job}"
    return str(job["id"])


def _ended(local: Local, job_id: str, user: str) -> dict[str, Any] | None:
    runs = local.runs(job_id, user=user)
    return runs[0] if runs and runs[0]["status"] == "SUCCEEDED" else None


def test_given_an_owner_limited_to_two_runs_in_flight_when_three_are_due_together_then_the_third_waits_for_an_end_and_another_owner_never_waits(
    tmp_path: Path, sink: Sink
) -> None:
    sink.delays["/slow"] = RUN_SECONDS
    with start_local(tmp_path, "--max-runs-in-flight", "2") as local:
        for user in ("alice", "bob"):
            local.token(user)
        at = (now() + timedelta(seconds=4)).replace(microsecond=0)

        def job(user: str, name: str, path: str) -> str:
            body = {
                "name": name,
                "schedule": {"type": "at", "at": at.isoformat()},
                "target": {"type": "http", "url": f"{sink.url}{path}"},
            }
            return _create(local, user, body)

        alice = [job("alice", f"slow-{n}", "/slow") for n in range(3)]
        bob = job("bob", "quick", "/bob")

        runs = [wait_for(partial(_ended, local, j, "alice"), timeout=90) for j in alice]
        bobs = wait_for(lambda: _ended(local, bob, "bob"), timeout=90)

        first_two, third = _split(runs)
        # two started at their second; the third only once one of them had ended
        assert all(r["lag_ms"] < 2000 for r in first_two), first_two
        earliest_end = min(parse(r["finished_at"]) for r in first_two)
        assert parse(third["started_at"]) >= earliest_end - timedelta(milliseconds=100), runs
        assert third["held_at"] is not None  # it waited, recorded, from its time
        assert third["flow_wait_ms"] >= (RUN_SECONDS - 1) * 1000
        # bob was never held up by alice's limit
        assert bobs["lag_ms"] < 2000, bobs
        assert bobs["held_at"] is None, bobs
        # every count was given back as the runs ended
        wait_for(lambda: _used(local) == 0, timeout=30)
        status, limits = local.call("GET", "/limits")
        assert status == 200
        assert limits["runs_in_flight"]["limit"] == 2


def _split(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The two runs that started first, and the one that started last."""
    ordered = sorted(runs, key=lambda r: parse(r["started_at"]))
    return ordered[:2], ordered[2]


def _used(local: Local) -> int:
    status, limits = local.call("GET", "/limits")
    assert status == 200, limits
    return int(limits["runs_in_flight"]["used"])
