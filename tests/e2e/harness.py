"""chronoq local in a subprocess (or, for the tests of what happens over minutes, in this
process on a clock the test moves: ClockedLocal), spoken to over HTTP like a user would, and
what the end-to-end tests share: clean-up of the jobs they create, and waits that poll a
condition with a generous timeout.

The machine may be shared and small (two cores, another test suite beside this one): a run
due at a second may start seconds late, and an API call may take a second or more. The tests
therefore assert behaviour (a run started, once, not before its second); how soon after its
second (start lag p50/p99) is measured by ``python -m bench.lag``, not asserted here."""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from chronoq.domain import limits as lim
from chronoq.local import tokens
from chronoq.local.clock import LocalClock, Waits
from chronoq.local.system import LocalSystem

CHRONOQ = str(Path(sys.executable).with_name("chronoq"))

#: Longest wait for one API answer (chronoq local answers in milliseconds when idle).
API_TIMEOUT_SECONDS = 60.0
#: Longest wait for chronoq local to start, and to stop.
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 30.0

#: Statuses a run ends with after running; and all those it may end with.
FINISHED = ("SUCCEEDED", "FAILED", "TIMED_OUT")
ENDED = (*FINISHED, "SKIPPED", "MISSED", "CANCELLED")

T = TypeVar("T")


# --- time -------------------------------------------------------------------------------------


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


def now() -> datetime:
    return datetime.now(UTC)


def whole_second_after(seconds: float) -> datetime:
    """The first whole second at least ``seconds`` from now."""
    return (now() + timedelta(seconds=seconds)).replace(microsecond=0) + timedelta(seconds=1)


def minute_of(instant: datetime) -> datetime:
    return instant.replace(second=0, microsecond=0)


def seconds_until(instant: datetime) -> float:
    return max(0.0, (instant - now()).total_seconds())


# --- waiting ----------------------------------------------------------------------------------


class Halted(Exception):
    """The session ended while a background scenario was still waiting."""


def poll(
    condition: Callable[[], T | None],
    timeout: float,
    what: str | Callable[[], str],
    *,
    interval: float = 0.25,
    halt: threading.Event | None = None,
) -> T:
    """Poll ``condition`` until it returns something truthy, and return that; fail, saying
    ``what`` was awaited, after ``timeout`` seconds. ``halt`` set: give up at once."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            raise AssertionError(f"not within {timeout:.0f} s: {described}")
        pause(interval, halt)


def pause(seconds: float, halt: threading.Event | None = None) -> None:
    """Sleep ``seconds`` (e.g. while a scheduled time passes); raise Halted if ``halt`` is set
    meanwhile."""
    if halt is None:
        time.sleep(seconds)
    elif halt.wait(seconds):
        raise Halted()


def sleep_until(instant: datetime, halt: threading.Event | None = None) -> None:
    """Wait for the clock to reach ``instant``: for tests whose condition is that a time has
    passed (and nothing happened)."""
    while now() < instant:
        pause(min(1.0, max(0.05, seconds_until(instant))), halt)


# --- chronoq local ----------------------------------------------------------------------------

#: The user whose token may use chronoq local's controls (``chronoq token --admin``).
ADMIN = "local-admin"


@dataclass
class Local:
    """``chronoq local`` running in a subprocess, spoken to over HTTP like a user would."""

    url: str
    data_dir: Path
    process: subprocess.Popen[str] | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def token(self, user: str) -> str:
        with self._lock:
            if user not in self.tokens:
                self.tokens[user] = self._mint(user)
            return self.tokens[user]

    def _mint(self, user: str) -> str:
        """A token for ``user``; for ADMIN, one that may use chronoq local's controls."""
        admin = ["--admin"] if user == ADMIN else []
        out = subprocess.run(
            [CHRONOQ, "token", user, *admin, "--data-dir", str(self.data_dir)],
            check=True,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_SECONDS,
        )
        return out.stdout.strip()

    def control(self, name: str) -> Any:
        """A control of chronoq local itself, e.g. ``ticker/stop``."""
        status, answer = self.call("POST", f"/_local/{name}", user=ADMIN)
        assert status == 200, (
            f"POST /_local/{name} answered {status}: {answer}\n{log_tail(self.data_dir)}"
        )
        return answer

    def call(
        self, method: str, path: str, user: str | None = "alice", body: Any = None
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if user is not None:
            headers["Authorization"] = f"Bearer {self.token(user)}"
        request = urllib.request.Request(
            self.url + path,
            method=method,
            headers=headers,
            data=json.dumps(body).encode() if body is not None else None,
        )
        try:
            with urllib.request.urlopen(request, timeout=API_TIMEOUT_SECONDS) as answer:
                return answer.status, _decode(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, _decode(error.read())

    def runs(self, job_id: str, user: str = "alice") -> list[dict[str, Any]]:
        """All runs of a job (the latest 100), oldest first."""
        status, answer = self.call("GET", f"/jobs/{job_id}/runs?limit=100", user=user)
        assert status == 200, f"GET /jobs/{job_id}/runs answered {status}: {answer}"
        return list(reversed(answer["runs"]))


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def log_tail(data_dir: Path, lines: int = 40) -> str:
    path = data_dir / "local.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


@contextmanager
def start_local(data_dir: Path, *args: str) -> Iterator[Local]:
    """``chronoq local`` (with ``args``) in a subprocess, until the block ends. Fails (with
    the end of its log) if it is not up within START_TIMEOUT_SECONDS."""
    with (data_dir / "local.log").open("w") as log:
        process = subprocess.Popen(  # on a port of its own choosing: none taken meanwhile
            [CHRONOQ, "local", "--port", "0", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            lines: queue.Queue[str] = queue.Queue()
            threading.Thread(
                target=lambda: lines.put(process.stdout.readline() if process.stdout else ""),
                name="chronoq-local-start",
                daemon=True,
            ).start()
            try:
                first_line = lines.get(timeout=START_TIMEOUT_SECONDS)  # printed once it is up
            except queue.Empty:
                first_line = f"(nothing within {START_TIMEOUT_SECONDS:.0f} s)"
            # "chronoq local listening on http://127.0.0.1:PORT"
            assert "listening on" in first_line, (
                f"chronoq local did not start: {first_line}\n{log_tail(data_dir)}"
            )
            yield Local(first_line.split()[-1], data_dir, process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            if process.stdout is not None:
                process.stdout.close()


@dataclass
class ClockedLocal(Local):
    """chronoq local in this process, on a clock that stands still unless the test moves it
    (chronoq.local.clock, HELD): spoken to over HTTP like the other, but minutes pass in
    seconds. ``jump_to`` moves the clock at once; ``run_until`` lets time pass as on a wall
    clock while chronoq local is at work, and moves it straight on to the next instant
    something is due while it only waits for time to pass. For the tests whose subject is
    what happens over minutes."""

    clock: LocalClock = field(default_factory=lambda: LocalClock(Waits.HELD))
    system: LocalSystem | None = None
    #: Held by the dispatcher's ticks and by the test's moves of the clock: a tick reads the
    #: time once, at its start, and must not see it jump before its messages are sent (their
    #: delays would then count from the jump).
    _moving: threading.RLock = field(default_factory=threading.RLock)
    #: The time the last whole tick of the dispatcher began at (None: none yet).
    _ticked: datetime | None = None
    #: The ticker's own tick (it calls ``_tick`` instead).
    _dispatch: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if self.system is not None:
            self._dispatch = self.system.ticker.tick
            self.system.ticker.tick = self._tick  # type: ignore[method-assign]

    def _tick(self) -> None:
        """A tick of the dispatcher (the ticker's, or the test's own when one is owed), the
        clock held meanwhile."""
        assert self._dispatch is not None
        with self._moving:
            began = self.clock.now()
            self._dispatch()
            self._ticked = began

    def aws_client(self, service: str) -> Any:
        """A client of its embedded AWS (as ``--aws-port`` serves it)."""
        assert self.system is not None
        return self.system.aws.client(service)

    def queue_url(self, priority: str) -> str:
        assert self.system is not None
        return self.system.aws.queue_urls[priority]

    def _mint(self, user: str) -> str:
        return tokens.mint(self.data_dir, user, admin=user == ADMIN)

    def now(self) -> datetime:
        """chronoq local's now."""
        return self.clock.now()

    def jump_to(self, instant: datetime) -> None:
        """Time passes at once up to ``instant`` (nothing may fall due in between that the
        test means to see run on time: the dispatcher finds it late), between two ticks of
        the dispatcher; it ticks there at once if its window has reached a new minute."""
        with self._moving:
            self.clock.advance_to(instant)
            self._tick_if_owed()

    def run_until(
        self,
        condition: Callable[[], T | None],
        timeout: float,
        what: str | Callable[[], str],
        *,
        halt: threading.Event | None = None,
    ) -> T:
        """Time passes until ``condition`` holds (``poll``): as on a wall clock while chronoq
        local is at work, at once up to the next instant something is due while it only
        waits (see ``_due``)."""
        return self._run(condition, timeout, what, halt, None)

    def run_for(self, seconds: float, halt: threading.Event | None = None) -> None:
        """Time passes for ``seconds`` (as in ``run_until``)."""
        until = self.now() + timedelta(seconds=seconds)
        self._run(lambda: self.now() >= until or None, seconds + 60, "time passing", halt, until)

    def _run(
        self,
        condition: Callable[[], T | None],
        timeout: float,
        what: str | Callable[[], str],
        halt: threading.Event | None,
        until: datetime | None,
    ) -> T:
        last = time.monotonic()

        def moved() -> T | None:
            nonlocal last
            held = condition()  # (before time moves on: at the instant it came to hold)
            if held:
                return held
            now = time.monotonic()
            with self._moving:
                self.clock.advance(now - last)
                self._tick_if_owed()
                due = self._due()
                if due is not None:
                    self.clock.advance_to(due if until is None else min(due, until))
            last = now
            return None

        return poll(moved, timeout, what, interval=0.1, halt=halt)

    def _due(self) -> datetime | None:
        """The next instant something is due in chronoq local (a tick opening a minute, a
        delayed message becoming visible, a held wait ending), if all it does until then is
        wait for it; None if it is at work (a tick owed or under way, a message visible or
        taken by a worker, an execution between its waits) or nothing is due."""
        assert self.system is not None
        due: list[datetime] = []
        if not self.system.ticker.paused.is_set():
            if self._tick_owed():
                return None
            due.append(self._opened() + timedelta(minutes=1))
        for delayed_until in self.system.aws.delayed_until():
            if delayed_until is None:
                return None
            due.append(delayed_until)
        waits = self.clock.waiting()
        # An execution not waiting on the clock is at work. (Counted, not told apart: one
        # waiting in several Map iterations at once may hide another at work, which then
        # sees time jump as far as the next wait's end.)
        if self.system.aws.running_executions() > len(waits):
            return None
        due += waits
        if not due:
            return None
        # (a millisecond on: the clock reads whole milliseconds)
        return _from_millis(math.ceil(min(due).timestamp() * 1000) + 1)

    def _opened(self) -> datetime:
        """The last instant the dispatcher's window reached a new minute (the next is a
        minute on)."""
        return minute_of(self.clock.now() + DISPATCH_AHEAD) - DISPATCH_AHEAD

    def _tick_owed(self) -> bool:
        """The ticker runs, and has not ticked since the dispatcher's window last reached a
        new minute."""
        assert self.system is not None
        if self.system.ticker.paused.is_set():
            return False
        return self._ticked is None or self._ticked < self._opened()

    def _tick_if_owed(self) -> None:
        """The tick the ticker would make within a second, made now if it is owed."""
        if self._tick_owed():
            self._tick()

    def whole_second_after(self, seconds: float) -> datetime:
        """The first whole second at least ``seconds`` from chronoq local's now."""
        at = self.now() + timedelta(seconds=seconds)
        return at.replace(microsecond=0) + timedelta(seconds=1)


#: How far ahead of now the dispatcher opens minutes.
DISPATCH_AHEAD = timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS)


def _from_millis(millis: float) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)


@contextmanager
def start_clocked_local(data_dir: Path) -> Iterator[ClockedLocal]:
    """chronoq local (LocalSystem, as ``chronoq local`` starts it) in this process, on a
    clock of its own (ClockedLocal), until the block ends."""
    clock = LocalClock(Waits.HELD)
    system = LocalSystem(  # (no heartbeat: a test's minutes hold only its own runs)
        port=0, data_dir=data_dir, in_memory=True, aws_port=None, clock=clock, heartbeat=False
    ).start()
    try:
        yield ClockedLocal(system.url, data_dir, clock=clock, system=system)
    finally:
        system.stop()


def wait_for_runs(local: Local, job_id: str, count: int, timeout: float) -> list[dict[str, Any]]:
    """Wait until ``count`` runs of the job have finished; return them, oldest first."""
    runs: list[dict[str, Any]] = []

    def finished() -> list[dict[str, Any]] | None:
        nonlocal runs
        runs = local.runs(job_id)
        done = [r for r in runs if r["status"] in FINISHED]
        return done if len(done) >= count else None

    return poll(
        finished,
        timeout,
        lambda: f"{count} finished runs of job {job_id}; its runs: {runs}",
        interval=0.5,
    )


# --- jobs that are deleted when their test ends -----------------------------------------------


@dataclass
class Jobs:
    """Creates jobs for one test (or scenario) and deletes them all when it ends, passed or
    failed, so that none fires on for the rest of the session (e.g. against a closed sink)."""

    local: Local
    created: dict[str, str] = field(default_factory=dict)  # job id -> owner

    def post(self, body: dict[str, Any], user: str = "alice") -> tuple[int, Any]:
        """``POST /jobs`` as it is; a job it creates is deleted at the end all the same."""
        status, answer = self.local.call("POST", "/jobs", user=user, body=body)
        if status == 201:
            self.created[answer["id"]] = user
        return status, answer

    def create(self, body: dict[str, Any], user: str = "alice") -> dict[str, Any]:
        status, job = self.post(body, user)
        assert status == 201, f"creating job {body.get('name')!r} answered {status}: {job}"
        created: dict[str, Any] = job
        return created

    def create_at(
        self, body: dict[str, Any], lead: float = 5.0, user: str = "alice"
    ) -> tuple[dict[str, Any], datetime]:
        """An ``at`` job due at the first whole second ``lead`` seconds from now; and that
        second. Should the request take so long that the second has passed when it is handled
        (422 on ``schedule.at``), asked again with twice the lead."""
        for _ in range(4):
            at = whole_second_after(lead)
            status, job = self.post(
                {**body, "schedule": {"type": "at", "at": at.isoformat()}}, user
            )
            if status == 201:
                return job, at
            fields = [job.get("error", {}).get("field")] if status == 422 else []
            assert fields == ["schedule.at"], (
                f"creating at-job {body.get('name')!r}: {status} {job}"
            )
            lead *= 2
        raise AssertionError(f"at-job {body.get('name')!r}: the API took longer than {lead:.0f} s")

    def delete_all(self) -> None:
        failures = []
        for job_id, user in reversed(list(self.created.items())):
            try:
                status, answer = self.local.call("DELETE", f"/jobs/{job_id}", user=user)
            except OSError as error:
                status, answer = 0, repr(error)
            if status not in (204, 404):
                failures.append(f"DELETE /jobs/{job_id}: {status} {answer}")
        self.created.clear()
        assert not failures, "jobs left behind: " + "; ".join(failures)
