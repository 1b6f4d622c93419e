"""Time windows: a recurring schedule's ``window_seconds`` spreads its occurrences over the
seconds after each fire time, so that many jobs on one cron do not all start in the same
second.

Each occurrence starts at an offset within the window derived from its job and its fire
time (a hash of both): the same whoever computes it and whenever (the dispatcher, a worker
handed the run again, the preview), so a retry or a replay never moves it, and an
occurrence's run id carries it (see ``ids.run_id``). Different jobs get offsets spread
evenly over the window; one job's offset changes from one fire time to the next.
"""

from __future__ import annotations

import hashlib
import itertools
from datetime import datetime, timedelta

from chronoq.domain import limits as lim
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.ids import run_stamp
from chronoq.domain.schedules import AnySchedule, CronSchedule, first_fire, next_fire
from chronoq.domain.time import format_instant

FIELD = "schedule.window_seconds"


def window_of(schedule: AnySchedule) -> int:
    """The schedule's window in seconds (0: none; a one-time schedule has none)."""
    return int(getattr(schedule, "window_seconds", 0))


def offset(job_id: str, fire: datetime, window_seconds: int) -> int:
    """The whole seconds after ``fire`` that the job's occurrence starts at: from 0 to
    ``window_seconds`` - 1, from a hash of the job and the instant."""
    if window_seconds <= 1:
        return 0
    digest = hashlib.blake2b(f"{job_id}@{run_stamp(fire)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % window_seconds


def planned_start(job_id: str, schedule: AnySchedule, fire: datetime) -> datetime:
    """When the job's occurrence at ``fire`` starts."""
    return fire + timedelta(seconds=offset(job_id, fire, window_of(schedule)))


def shortest_gap(schedule: AnySchedule, now: datetime) -> timedelta | None:
    """The shortest time between two consecutive fire times of a recurring schedule: a rate's
    period; for a cron expression, among its next WINDOW_GAP_SCAN fire times (or a year of
    them). None for a schedule that fires at most once from here."""
    if isinstance(schedule, CronSchedule):
        times: list[datetime] = []
        current: datetime | None = first_fire(schedule, now)
        while current is not None and len(times) < lim.WINDOW_GAP_SCAN:
            times.append(current)
            if current - times[0] > timedelta(days=366):
                break
            current = next_fire(schedule, current)
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        return min(gaps) if gaps else None
    period = getattr(schedule, "period", None)
    return period if isinstance(period, timedelta) else None


def check(schedule: AnySchedule, now: datetime) -> None:
    """Refuse (naming ``schedule.window_seconds``) a window longer than the schedule's
    shortest gap: one occurrence would then be planned to start after the next one."""
    window = window_of(schedule)
    if window <= 60:  # no two fire times of a recurring schedule are closer than a minute
        return
    gap = shortest_gap(schedule, now)
    if gap is not None and window > gap.total_seconds():
        raise InvalidRequest(
            FIELD,
            f"must be at most the schedule's shortest gap between two fire times "
            f"({int(gap.total_seconds())} s)",
        )


def preview(
    schedule: AnySchedule, fires: list[dict[str, str]], job_id: str | None
) -> list[dict[str, str | None]]:
    """Fire times as ``schedules.preview`` lists them, each with ``starts_at``: when the
    job's occurrence starts (its fire time without a window; None for a window previewed
    without a job, whose offsets depend on the job)."""
    window = window_of(schedule)
    out: list[dict[str, str | None]] = []
    for fire in fires:
        at = datetime.fromisoformat(fire["utc"])
        start: str | None = fire["utc"]
        if window > 1:
            start = (
                format_instant(at + timedelta(seconds=offset(job_id, at, window)))
                if job_id
                else None
            )
        out.append({**fire, "starts_at": start})
    return out
