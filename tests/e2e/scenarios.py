"""Long end-to-end scenarios, each played in the background on a chronoq local of its own
(see ``Background`` and the fixtures in conftest.py) while the other tests go on. Each keeps
what its test asserts on, so that its chronoq local can stop as soon as it has ended."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq.domain.ids import first_unopened

from tests.e2e.harness import (
    ENDED,
    Jobs,
    Local,
    minute_of,
    now,
    parse,
    pause,
    poll,
    seconds_until,
    sleep_until,
    whole_second_after,
)
from tests.support import Hit, Sink

NEVER = datetime.min.replace(tzinfo=UTC)
#: The start deadline of the outage scenario's ``strict`` job: longer than a loaded machine may
#: delay a run that is on time (ON_TIME), shorter than the outage's older minutes are late.
STRICT_DEADLINE_SECONDS = 60
PRIORITIES = ("high", "normal", "low")


@dataclass
class BurstScenario:
    """``size`` http runs due in the same second, a third each of high, normal and low
    priority.

    The due second is chosen once the jobs exist, not before: they are created due a day
    ahead, which takes however long it takes on this machine (D), then each is moved to the
    start of a minute that the dispatcher opens (DISPATCH_AHEAD_SECONDS ahead) only after
    2 D from then. A move into a minute not yet opened costs about what a creation did, so the
    moves are normally done by then, and the dispatcher queues the 300 runs in one tick, a
    minute ahead, as it does any minute's. Should the machine slow down meanwhile, the later
    moves queue their runs themselves, with another minute to spare. A move that comes too
    late all the same fails with its answer and the times taken."""

    size: int = 300
    priorities: dict[str, str] = field(default_factory=dict)  # job id -> priority
    burst_at: datetime = NEVER
    created_in: float = 0.0  # seconds creating the jobs took
    moved_in: float = 0.0  # seconds moving them to burst_at took
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # job id -> its runs
    hits: list[Hit] = field(default_factory=list)  # what the target received

    def run(self, local: Local, sink: Sink, halt: threading.Event) -> None:
        # (Its 300 jobs end with its chronoq local, as soon as it ends: no clean-up calls.)
        self._create(Jobs(local), sink, halt)
        self._move(local, halt)
        self._collect(local, sink, halt)

    def _create(self, jobs: Jobs, sink: Sink, halt: threading.Event) -> None:
        placeholder = whole_second_after(24 * 3600)
        started = time.monotonic()
        for i in range(self.size):
            pause(0, halt)
            priority = PRIORITIES[i % 3]
            job = jobs.create(
                {
                    "name": f"burst-{i}",
                    "priority": priority,
                    "schedule": {"type": "at", "at": placeholder.isoformat()},
                    "target": {"type": "http", "url": f"{sink.url}/burst"},
                }
            )
            self.priorities[job["id"]] = priority
        self.created_in = time.monotonic() - started

    def _move(self, local: Local, halt: threading.Event) -> None:
        moved_by = now() + timedelta(seconds=2 * self.created_in)
        self.burst_at = first_unopened(moved_by)
        started = time.monotonic()
        schedule = {"schedule": {"type": "at", "at": self.burst_at.isoformat()}}
        for i, job_id in enumerate(self.priorities):
            pause(0, halt)
            status, answer = local.call("PATCH", f"/jobs/{job_id}", body=schedule)
            assert status == 200, (
                f"moving burst job {i + 1} of {self.size} to {self.burst_at} answered {status}: "
                f"{answer}; creating the jobs took {self.created_in:.1f} s, moving "
                f"{i} of them {time.monotonic() - started:.1f} s so far"
            )
        self.moved_in = time.monotonic() - started

    def _collect(self, local: Local, sink: Sink, halt: threading.Event) -> None:
        poll(
            lambda: len(sink.hits_to("/burst")) >= self.size,
            seconds_until(self.burst_at) + 300,
            lambda: (
                f"{self.size} burst runs due at {self.burst_at} reaching their target "
                f"(got {len(sink.hits_to('/burst'))})"
            ),
            interval=1,
            halt=halt,
        )
        for job_id in self.priorities:

            def ended(job_id: str = job_id) -> list[dict[str, Any]] | None:
                runs = local.runs(job_id)
                return runs if runs and all(r["status"] in ENDED for r in runs) else None

            self.runs[job_id] = poll(
                ended, 60, f"the run of burst job {job_id} ending", interval=0.5, halt=halt
            )
        self.hits = list(sink.hits_to("/burst"))


@dataclass
class OutageScenario:
    """A three-minute dispatcher outage, and the catch-up after it, seen by two every-minute
    jobs: ``strict`` (start deadline STRICT_DEADLINE_SECONDS) and ``lenient`` (the default,
    900 s).

    The ticker is stopped between the 10th and 45th second of a minute M (the dispatcher has
    opened M+1: that runs on time) and started again three minutes later, in M+3: the run of
    M+2 is then over a minute late (strict: missed; lenient: runs late), that of M+3 10 to
    45 s late (lenient: runs late; strict: runs late too, unless it has to wait past its
    deadline), and M+4 is dispatched ahead again."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> job as created
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> runs at the end
    #: Just before the ticker was stopped: the dispatcher had opened the following minute.
    stopped_at: datetime = NEVER
    #: Just before the ticker was started again: nothing dispatched meanwhile ran before this.
    restarted_at: datetime = NEVER
    outage: timedelta = timedelta(minutes=3)

    def run(self, local: Local, sink: Sink, halt: threading.Event) -> None:
        jobs = Jobs(local)
        try:
            every_minute = {"type": "cron", "expression": "* * * * *"}
            for name, deadline in (
                ("strict", {"start_deadline_seconds": STRICT_DEADLINE_SECONDS}),
                ("lenient", {}),
            ):
                self.jobs[name] = jobs.create(
                    {
                        "name": name,
                        "schedule": every_minute,
                        **deadline,
                        "target": {"type": "http", "url": f"{sink.url}/{name}"},
                    }
                )
            self._stop_inside_a_minute(local, halt)
            sleep_until(self.stopped_at + self.outage, halt)
            self.restarted_at = now()
            assert local.control("ticker/start") == {"ticker": "running"}
            # Caught up once the run of the minute after the restart has succeeded.
            after = minute_of(self.restarted_at) + timedelta(minutes=1)
            for job in self.jobs.values():
                job_id: str = job["id"]

                def succeeded(job_id: str = job_id) -> bool:
                    return any(
                        parse(r["scheduled_at"]) == after and r["status"] == "SUCCEEDED"
                        for r in local.runs(job_id)
                    )

                poll(
                    succeeded,
                    seconds_until(after) + 120,
                    f"the run of {job['name']} due at {after}, after the restart, succeeding",
                    interval=1,
                    halt=halt,
                )
            self.runs = {name: local.runs(job["id"]) for name, job in self.jobs.items()}
        finally:
            if not halt.is_set():  # (else its chronoq local is stopping anyway)
                jobs.delete_all()

    def _stop_inside_a_minute(self, local: Local, halt: threading.Event) -> None:
        """Stop the ticker between the 10th and 45th second of a minute, the request answered
        within that minute: the dispatcher (ticking every second) has then opened the next
        minute, and no later one. Tried again in the next minute otherwise."""
        for _ in range(5):
            poll(
                lambda: 10 <= now().second < 45,
                61,
                "the 10th second of a minute",
                interval=0.2,
                halt=halt,
            )
            before = now()
            assert local.control("ticker/stop") == {"ticker": "stopped"}
            if minute_of(now()) == minute_of(before):
                self.stopped_at = before
                return
            local.control("ticker/start")
        raise AssertionError("stopping the ticker was answered in the next minute, five times")
