"""chronoq local keeps its state in --data-dir: killed (``kill -9``) while runs are going, or
stopped with Ctrl-C, and started again on the same directory, it has every job, and each run
that fell due ends exactly once: late within its start deadline, or MISSED after it; a run
that was running when it was killed ends FAILED, and is not run again."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq.local import instance, persist, tokens

from tests.e2e.harness import (
    ENDED,
    STOP_TIMEOUT_SECONDS,
    Jobs,
    Local,
    now,
    parse,
    poll,
    sleep_until,
    start_local,
    whole_second_after,
)
from tests.support import Sink, http_sink

#: At-jobs due around the kill, two a second.
BURST = 20
#: How long after the last at-job's time the recurring job first fires: the restart comes
#: 3 s after that time, so its first run is usually due after the restart (or, on a slow
#: start, while it starts: then it runs late).
RECURRING_AFTER_DUE = 8
#: Longest wait for runs to end after a restart (the dispatcher catches up at once).
AFTER_RESTART_SECONDS = 120.0


def _at(name: str, sink: Sink, at: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"type": "at", "at": at.isoformat()},
        "target": {"type": "http", "url": f"{sink.url}/{name}"},
        **extra,
    }


@dataclass
class DueWhileDown:
    """The jobs whose runs fall due while chronoq local is down, at ``due``: ``late`` (runs
    late), ``missed`` (start deadline 1 s) and ``minutely`` (every minute, from
    RECURRING_AFTER_DUE seconds after ``due``); ``paths``: their targets' paths by role."""

    due: datetime
    jobs: dict[str, dict[str, Any]]
    paths: dict[str, str]


def _due_while_down(jobs: Jobs, sink: Sink, kill_at: datetime) -> DueWhileDown:
    """The jobs due a few seconds after the kill, planned ``kill_at`` (or at once, if that
    has passed), created with time to spare before it: should a loaded machine take so long
    that their time comes before the kill can, they are deleted and made again, due twice as
    long after it (under new names: a run of a deleted one may have called its target)."""
    for attempt in range(5):
        kill = max(kill_at, whole_second_after(1))
        due = kill + timedelta(seconds=3 * 2**attempt)
        paths = {role: f"{role}-{attempt}" for role in ("late", "missed", "minutely")}
        bodies = {
            "late": _at(paths["late"], sink, due),
            "minutely": {
                "name": paths["minutely"],
                "schedule": {
                    "type": "rate",
                    "every": "1 minute",
                    "start_at": (due + timedelta(seconds=RECURRING_AFTER_DUE)).isoformat(),
                },
                "target": {"type": "http", "url": f"{sink.url}/{paths['minutely']}"},
            },
            "missed": _at(paths["missed"], sink, due, start_deadline_seconds=1),
        }
        made: dict[str, dict[str, Any]] = {}
        for role, body in bodies.items():
            status, job = jobs.post(body)
            if status != 201:
                assert status == 422, (status, job)
                assert job["error"]["field"] == "schedule.at", job
                break
            made[role] = job
        if len(made) == len(bodies) and max(kill_at, now()) + timedelta(seconds=1) < due:
            return DueWhileDown(due, made, paths)
        for job in made.values():
            assert jobs.local.call("DELETE", f"/jobs/{job['id']}")[0] == 204
            del jobs.created[job["id"]]
    raise AssertionError("the jobs due while chronoq local is down took too long to create")


def _ended_runs(local: Local, job_id: str, count: int) -> list[dict[str, Any]]:
    def ended() -> list[dict[str, Any]] | None:
        runs = [r for r in local.runs(job_id) if r["status"] in ENDED]
        return runs if len(runs) >= count else None

    return poll(
        ended,
        AFTER_RESTART_SECONDS,
        lambda: f"{count} ended runs of {job_id}: {local.runs(job_id)}",
        interval=0.5,
    )


def _run_id(headers: dict[str, str]) -> str:
    return next(v for k, v in headers.items() if k.lower() == "x-chronoq-run-id")


def _assert_each_occurrence_once(local: Local, job_id: str) -> list[dict[str, Any]]:
    runs = local.runs(job_id)
    scheduled = [r["scheduled_at"] for r in runs]
    assert len(scheduled) == len(set(scheduled)), f"an occurrence ran twice: {runs}"
    return runs


def test_given_runs_going_when_chronoq_local_is_killed_and_restarted_then_every_job_is_there_and_each_due_run_ends_once(
    tmp_path: Path,
) -> None:
    with http_sink() as sink:
        sink.delays["/slow"] = 600.0  # still running when the process is killed
        with start_local(tmp_path) as first:
            jobs = Jobs(first)
            # (created below, once the burst's times are known)
            slow, _ = jobs.create_at(
                {
                    "name": "slow",
                    "target": {"type": "http", "url": f"{sink.url}/slow"},
                    "timeout_seconds": 900,
                },
                lead=3,
            )
            poll(lambda: sink.hits_to("/slow"), 90, "the slow run's call")
            assert first.runs(slow["id"])[0]["status"] == "RUNNING"
            # a burst of runs, two a second, that the kill falls into: some ran, some are
            # going, some wait on a queue, some fall due while chronoq local is down; and two
            # runs due while it is down
            base = whole_second_after(8)
            killed = base + timedelta(seconds=BURST // 4)
            # (a loaded machine may take a while to create them: none is due before it is
            # created, and the kill comes once they are, a quarter of the way in at the earliest;
            # the runs due while it is down are made after them, due after the kill)
            burst = [
                jobs.create(
                    _at(
                        f"burst-{i}",
                        sink,
                        max(base + timedelta(seconds=i // 2), whole_second_after(1)),
                    )
                )
                for i in range(BURST)
            ]
            # (and a recurring job whose first fire time comes a few seconds after the restart)
            down = _due_while_down(jobs, sink, killed)
            due = down.due
            late, every_minute, missed = (down.jobs[r] for r in ("late", "minutely", "missed"))
            sleep_until(killed)
            assert first.process is not None
            first.process.kill()  # kill -9, under load
            killed_at = now()
            first.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            assert killed_at < due, "the machine is too slow for this test's timing"
        sleep_until(due + timedelta(seconds=2))

        with start_local(tmp_path) as second:
            status, listing = second.call("GET", "/jobs")
            assert status == 200
            assert {j["id"] for j in listing["jobs"]} == {
                every_minute["id"],
                slow["id"],
                late["id"],
                missed["id"],
                *(j["id"] for j in burst),
            }

            (late_run,) = _ended_runs(second, late["id"], 1)
            assert late_run["status"] == "SUCCEEDED", late_run
            lag = parse(late_run["started_at"]) - due
            assert timedelta(0) < lag <= timedelta(minutes=15), f"started {lag} after its second"
            assert len(sink.hits_to(f"/{down.paths['late']}")) == 1

            (missed_run,) = _ended_runs(second, missed["id"], 1)
            assert missed_run["status"] == "MISSED", missed_run
            assert sink.hits_to(f"/{down.paths['missed']}") == []

            for i, job in enumerate(burst):
                (run,) = _ended_runs(second, job["id"], 1)
                hits = len(sink.hits_to(f"/burst-{i}"))
                if run["status"] == "SUCCEEDED":
                    assert hits == 1, (run, hits)
                else:  # going when killed: not called again
                    assert run["status"] == "FAILED", run
                    assert run["reason"] == persist.INTERRUPTED, run
                    assert hits <= 1, (run, hits)

            (slow_run,) = _ended_runs(second, slow["id"], 1)
            assert slow_run["status"] == "FAILED", slow_run
            assert slow_run["reason"] == persist.INTERRUPTED
            assert len(sink.hits_to("/slow")) == 1  # not run again

            # the recurring job created before the kill goes on: its first fire time, after
            # the kill, runs once, and no occurrence ran twice
            first_time = due + timedelta(seconds=RECURRING_AFTER_DUE)
            (recurring,) = [
                r
                for r in _ended_runs(second, every_minute["id"], 1)
                if parse(r["scheduled_at"]) == first_time
            ]
            assert recurring["status"] == "SUCCEEDED", recurring
            _assert_each_occurrence_once(second, every_minute["id"])
            called_recurring = [
                _run_id(hit.headers) for hit in sink.hits_to(f"/{down.paths['minutely']}")
            ]
            assert called_recurring.count(recurring["id"]) == 1, called_recurring
            called = [_run_id(hit.headers) for hit in sink.hits]
            assert len(called) == len(set(called)), f"a run's target was called twice: {called}"
            for run in (late_run, missed_run, slow_run):  # (and the burst's, above)
                _assert_each_occurrence_once(second, run["job_id"])
            Jobs(second, jobs.created).delete_all()


def test_given_a_job_when_chronoq_local_is_stopped_with_ctrl_c_and_started_again_then_it_stops_and_carries_on(
    tmp_path: Path,
) -> None:
    with http_sink() as sink:
        with start_local(tmp_path) as first:
            jobs = Jobs(first)
            due = whole_second_after(10)
            job = jobs.create(_at("after-restart", sink, due))
            kept = jobs.create(
                {
                    "name": "yearly",
                    "schedule": {"type": "cron", "expression": "0 0 1 1 *"},
                    "target": {"type": "http", "url": f"{sink.url}/yearly"},
                }
            )
            token = first.token("alice")
            secret = (tmp_path / tokens.SIGNING_SECRET_FILE).read_text()
            assert first.process is not None
            assert first.process.stdout is not None
            first.process.send_signal(signal.SIGINT)
            try:
                first.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                raise AssertionError("chronoq local did not stop on Ctrl-C") from None
            said = first.process.stdout.read()
        assert "stopped" in said, said
        assert "data: kept in" in said, said
        assert not (tmp_path / instance.RUNNING_FILE).exists()  # (no chronoq local answers)
        sleep_until(due + timedelta(seconds=2))

        with start_local(tmp_path) as second:
            second.tokens["alice"] = token  # a token minted before the stop still works
            status, got = second.call("GET", f"/jobs/{kept['id']}")
            assert status == 200, got
            assert got["name"] == "yearly"
            (run,) = _ended_runs(second, job["id"], 1)
            assert run["status"] == "SUCCEEDED", run
            assert parse(run["started_at"]) > due
            assert len(sink.hits_to("/after-restart")) == 1
            assert (tmp_path / tokens.SIGNING_SECRET_FILE).read_text() == secret
            Jobs(second, jobs.created).delete_all()
