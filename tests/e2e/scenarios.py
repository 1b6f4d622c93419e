"""Long end-to-end scenarios that run in the background while other tests go on."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from tests.support import Sink, wait_for

if TYPE_CHECKING:
    from tests.e2e.conftest import Local


NEVER = datetime.min.replace(tzinfo=UTC)


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


def runs_of(local: Local, job_id: str) -> list[dict[str, Any]]:
    """All runs of a job, oldest first."""
    return list(reversed(local.call("GET", f"/jobs/{job_id}/runs?limit=100")[1]["runs"]))


@dataclass
class OutageScenario:
    """Runs in the background from the start of the session: a burst of 300 runs due in one
    second, and a three-minute dispatcher outage with catch-up."""

    local: Local
    sink: Sink
    burst_at: datetime = NEVER
    burst_jobs: dict[str, str] = field(default_factory=dict)  # job id -> priority
    strict: dict[str, Any] = field(default_factory=dict)
    lenient: dict[str, Any] = field(default_factory=dict)
    stopped_at: datetime = NEVER
    restarted_at: datetime = NEVER
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as error:
            self.error = error
        finally:
            self.done.set()

    def _run(self) -> None:
        every_minute = {"type": "cron", "expression": "* * * * *"}
        _, self.strict = self.local.call(
            "POST",
            "/jobs",
            body={
                "name": "strict",
                "schedule": every_minute,
                "start_deadline_seconds": 30,
                "target": {"type": "http", "url": f"{self.sink.url}/strict"},
            },
        )
        _, self.lenient = self.local.call(
            "POST",
            "/jobs",
            body={
                "name": "lenient",
                "schedule": every_minute,
                "target": {"type": "http", "url": f"{self.sink.url}/lenient"},
            },
        )
        while datetime.now(UTC).second < 3:  # stop well inside a minute (see below)
            time.sleep(0.2)
        now = datetime.now(UTC)
        assert self.local.control("ticker/stop") == {"ticker": "stopped"}
        self.stopped_at = now
        # Runs in minutes the dispatcher had already opened go straight to SQS, outage or not:
        # the burst is due in the last second of the minute after the one the last tick saw.
        last_tick = (now - timedelta(seconds=1)).replace(second=0, microsecond=0)
        self.burst_at = last_tick + timedelta(minutes=1, seconds=59)
        for i in range(300):
            priority = ("low", "normal", "high")[i % 3]
            _, job = self.local.call(
                "POST",
                "/jobs",
                body={
                    "name": f"burst-{i}",
                    "priority": priority,
                    "schedule": {"type": "at", "at": self.burst_at.isoformat()},
                    "target": {"type": "http", "url": f"{self.sink.url}/burst"},
                },
            )
            self.burst_jobs[job["id"]] = priority
        time.sleep(
            max(0.0, (self.stopped_at + timedelta(minutes=3) - datetime.now(UTC)).total_seconds())
        )
        assert self.local.control("ticker/start") == {"ticker": "running"}
        self.restarted_at = datetime.now(UTC)
        # Catch-up done once the run of the minute after the restart has finished.
        after = self.restarted_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
        for job in (self.strict, self.lenient):
            job_id: str = job["id"]
            wait_for(partial(self._succeeded, job_id, after), timeout=150, interval=1)

    def _succeeded(self, job_id: str, scheduled_at: datetime) -> bool:
        return any(
            parse(r["scheduled_at"]) == scheduled_at and r["status"] == "SUCCEEDED"
            for r in runs_of(self.local, job_id)
        )
