"""Silence: a job that says how often it must succeed (``expect.success_within_seconds``) is
*silent* once no run of it has SUCCEEDED within that time of the last success, or of its start
(its creation, ``expect`` set, its resume). Pure: the models and the rules, no I/O.

What chronoq keeps (see usecases.silence for who writes what):

- the job's *expectation*: one small item of the jobs table per job with ``expect``
  (``expect#<job id>``), never the job item (a job item write is billed at its full size).
  ``since`` is when the current wait began (the last success, or the job's start); its
  *deadline* is ``since`` plus ``within``. ``silent_since`` is set, once, when the deadline
  passed with no success since, and cleared by the next success, a pause, or ``expect``
  removed;
- the deadline, as an entry of the time index (the schedule table the dispatcher reads each
  minute), in the bucket of the first minute the dispatcher opens after the deadline: found
  by the key-range query the dispatcher makes anyway, never by a scan. Each success writes the
  next deadline; an entry the job has moved on from (its expectation no longer ends there) is
  let go when it comes due;
- each silence's notifications, as records of the runs table (``expect#<instant>``: SILENT,
  ``expect#<instant>#recovered``: RECOVERED), each written once, in the same transaction as
  the change of the expectation: the notifier hears of them through the runs table's stream,
  and sends them as it sends a run's end (SNS, the job's webhook and e-mail), each channel
  once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from chronoq.domain import ids, keys
from chronoq.domain import limits as lim
from chronoq.domain.base import Model
from chronoq.domain.time import Instant


class Expect(Model):
    """How often a job must succeed: a run of it SUCCEEDED within ``success_within_seconds``
    of the last success (or of its start), or it is silent (and its owner told)."""

    success_within_seconds: int = Field(
        ge=lim.MIN_SUCCESS_WITHIN_SECONDS, le=lim.MAX_SUCCESS_WITHIN_SECONDS, strict=True
    )


class Expectation(BaseModel):
    """A job's expectation of success as kept (its item in the jobs table)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    #: ``expect.success_within_seconds`` as the item holds it.
    within: int
    #: When the current wait began: the last success, or the job's start (its creation,
    #: ``expect`` set, its resume).
    since: datetime
    last_success_at: datetime | None = None
    #: When it went silent (None: it is not); its owner's, while it is (the silent index).
    silent_since: datetime | None = None
    owner: str = ""

    @property
    def deadline(self) -> datetime:
        """When the job goes silent unless a run of it succeeds first."""
        return self.since + timedelta(seconds=self.within)

    def waits_for(self, deadline: datetime) -> bool:
        """Is ``deadline`` the one this expectation waits for, not silent yet? (An entry of the
        time index the job has moved on from, by a success or a change, is let go.)"""
        return self.silent_since is None and _millis(self.deadline) == _millis(deadline)


def _millis(value: datetime) -> int:
    """An instant to the millisecond (the precision the store keeps instants with)."""
    return int(value.timestamp() * 1000)


class Deadline(BaseModel):
    """A job's success deadline, as an entry of the time index."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    at: datetime
    #: Completion triggers: an ``after`` job's fan-in wait for this instant (see domain.after)
    #: rather than a success deadline; None: a success deadline.
    instant: datetime | None = None


def check_minute(deadline: datetime, now: datetime) -> datetime:
    """The minute in whose bucket of the time index a deadline is kept: the first the
    dispatcher opens (DISPATCH_AHEAD_SECONDS before it starts) at or after the deadline, so
    that the dispatcher finds it only once it has passed; and one it has not opened yet
    (a minute of margin), so that it is not passed by (a deadline written late, or near)."""
    after = ids.minute_of(deadline + timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS))
    if after < deadline + timedelta(seconds=lim.DISPATCH_AHEAD_SECONDS):
        after += timedelta(minutes=1)
    return max(after, ids.first_unopened(now) + timedelta(minutes=1))


def slot(job_id: str) -> str:
    """What a run of a job with ``expect`` notes among its ``slots`` (the items its end
    reaches): the job's expectation item. The notifier, hearing of its success, moves the
    expectation on; a run without it costs the notifier nothing more."""
    return keys.expect_key(job_id)


def expects(slots: str) -> bool:
    """Does a run's ``slots`` (as its record holds them) name its job's expectation?"""
    return any(token.startswith(keys.EXPECT) for token in slots.split())


class SilenceStatus(StrEnum):
    """What the notifier tells of a silence: it began, or a success ended it."""

    SILENT = "SILENT"
    RECOVERED = "RECOVERED"


class SilenceEvent(BaseModel):
    """A silence noted (SILENT) or ended (RECOVERED): a record of the runs table, in its
    job's partition, written once; the notifier hears of it and tells the job's owner."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    owner: str
    status: SilenceStatus
    #: ``expect.success_within_seconds`` when it went silent.
    within: int
    silent_since: Instant
    #: The last success before the silence (None: none since the job's start).
    last_success_at: Instant | None = None
    #: RECOVERED: the success that ended it, and its run.
    recovered_at: Instant | None = None
    run_id: str | None = None
    #: How each notification of it went, per channel (as a run's).
    notifications: dict[str, str] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        """Its sort key in its job's partition of the runs table."""
        return event_key(self.silent_since, self.status)


def event_key(silent_since: datetime, status: SilenceStatus) -> str:
    """The runs table's key of a silence's record (its job's partition): one per silence and
    status, so that each is written once."""
    key = f"{keys.EXPECT}{ids.run_stamp(silent_since)}"
    return key if status is SilenceStatus.SILENT else f"{key}#recovered"


def is_event_key(run_id: str) -> bool:
    """Is this key of the runs table a silence's record (rather than a run's)?"""
    return run_id.startswith(keys.EXPECT)
