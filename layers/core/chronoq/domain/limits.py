"""What one owner's backfills and re-runs may hold at once, and what they hold now.

An owner's usage is kept on one item of the jobs table (``usage#<owner>``, see domain.keys),
never counted from what grows with history:

- the ids of its RUNNING backfills, by job (a backfill joins when it is made and leaves when
  it completes or is cancelled, each in one transaction with the backfill's own item);
- how many runs of its re-runs have not ended (added when they are made, counted down as
  each ends: usecases.progress);
- a version, which every request that adds to the usage moves on: two requests of one owner
  at once cannot both take the last of a limit.

The fire times its RUNNING backfills hold that have not ended are read from those backfills
themselves (``total - ended``: one batch read of at most ``running_backfills_per_owner``
items).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from chronoq import resources as r
from chronoq.domain.errors import LimitExceeded


@dataclass(frozen=True)
class Limits:
    """The deployment's limits on each owner (README, "Limits")."""

    running_backfills_per_job: int = r.DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB
    running_backfills_per_owner: int = r.DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER
    queued_runs_per_owner: int = r.DEFAULT_MAX_QUEUED_RUNS_PER_OWNER
    waiting_triggers_per_job: int = r.DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB
    asked_runs_in_flight: int = r.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT
    runs_in_flight: int = r.DEFAULT_MAX_RUNS_IN_FLIGHT
    secrets_per_owner: int = r.DEFAULT_MAX_SECRETS_PER_OWNER

    def environment(self) -> dict[str, str]:
        """The functions' variables giving these limits (see settings.ApiSettings)."""
        return {s.env: str(getattr(self, s.field)) for s in SETTINGS}


@dataclass(frozen=True)
class Setting:
    """One of ``Limits`` as a deployment sets it: its field, its name (the CDK context value,
    ``chronoq local --max-…``), its variable and what it bounds."""

    field: str
    env: str
    help: str

    @property
    def name(self) -> str:
        return f"max_{self.field}"

    @property
    def default(self) -> int:
        value: int = getattr(Limits(), self.field)
        return value


#: Every limit a deployment sets on each owner (README, "Limits").
SETTINGS = (
    Setting(
        "running_backfills_per_job",
        r.ENV_MAX_RUNNING_BACKFILLS_PER_JOB,
        "backfills of one job running at once",
    ),
    Setting(
        "running_backfills_per_owner",
        r.ENV_MAX_RUNNING_BACKFILLS_PER_OWNER,
        "backfills of one owner running at once",
    ),
    Setting(
        "queued_runs_per_owner",
        r.ENV_MAX_QUEUED_RUNS_PER_OWNER,
        "fire times one owner's running backfills and re-runs may hold not ended",
    ),
    Setting(
        "waiting_triggers_per_job",
        r.ENV_MAX_WAITING_TRIGGERS_PER_JOB,
        "manual triggers of one job not started yet",
    ),
    Setting(
        "asked_runs_in_flight",
        r.ENV_MAX_ASKED_RUNS_IN_FLIGHT,
        "runs one owner asked for (manual, re-runs, backfills') under way at once",
    ),
    Setting(
        "runs_in_flight",
        r.ENV_MAX_RUNS_IN_FLIGHT,
        "runs of one owner, whatever started them, under way at once",
    ),
    Setting("secrets_per_owner", r.ENV_MAX_SECRETS_PER_OWNER, "secrets one owner may keep"),
)


@dataclass(frozen=True)
class Usage:
    """What an owner's backfills and re-runs hold now."""

    #: job id -> the ids of its RUNNING backfills
    running: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: runs of re-runs made that have not ended
    reruns: int = 0
    #: fire times of the RUNNING backfills that have not ended (read from the backfills: the
    #: usage item itself does not keep it)
    backfill_runs: int = 0
    #: the version of the usage item (0: none yet)
    version: int = 0

    @property
    def running_backfills(self) -> int:
        return sum(len(ids) for ids in self.running.values())

    @property
    def queued_runs(self) -> int:
        """Fire times of its backfills and re-runs not ended yet."""
        return self.backfill_runs + self.reruns

    def entered(self, job_id: str, backfill_id: str) -> Usage:
        """With a backfill of job ``job_id`` running too."""
        running = {**self.running, job_id: self.running.get(job_id, frozenset()) | {backfill_id}}
        return replace(self, running=running)

    def left(self, job_id: str, backfill_id: str) -> Usage:
        """Without that backfill among those running."""
        running = dict(self.running)
        remaining = running.pop(job_id, frozenset()) - {backfill_id}
        if remaining:
            running[job_id] = remaining
        return replace(self, running=running)

    def keys(self) -> list[tuple[str, str]]:
        """(job id, backfill id) of each RUNNING backfill."""
        return sorted((job, b) for job, ids in self.running.items() for b in ids)

    def view(self, limits: Limits) -> dict[str, Any]:
        """Each limit, and how much of it is used (the JSON of a ``GET /limits``)."""
        return {
            "running_backfills_per_owner": {
                "limit": limits.running_backfills_per_owner,
                "used": self.running_backfills,
            },
            "running_backfills_per_job": {
                "limit": limits.running_backfills_per_job,
                "used": {job: len(ids) for job, ids in sorted(self.running.items())},
            },
            "queued_runs_per_owner": {
                "limit": limits.queued_runs_per_owner,
                "used": self.queued_runs,
            },
        }


def check_backfill(usage: Usage, limits: Limits, job_id: str, fires: int) -> None:
    """Refuse a backfill of ``fires`` fire times of job ``job_id`` past a limit: 422 if it
    could never fit, 429 (after a while, it may) if what the owner holds is in the way."""
    queued = limits.queued_runs_per_owner
    if fires > queued:
        raise LimitExceeded(
            "max_queued_runs_per_owner",
            f"the range holds {fires} fire times, more than the {queued} an owner's backfills"
            " and re-runs may hold at once (max_queued_runs_per_owner): backfill it in parts",
            field="to",
        )
    per_job = limits.running_backfills_per_job
    if len(usage.running.get(job_id, ())) >= per_job:
        raise _wait(
            "max_running_backfills_per_job",
            f"job {job_id} has {per_job} backfills running, the most one job may have at once"
            " (max_running_backfills_per_job): wait for one to end, or cancel one",
        )
    per_owner = limits.running_backfills_per_owner
    if usage.running_backfills >= per_owner:
        raise _wait(
            "max_running_backfills_per_owner",
            f"{per_owner} of your backfills are running, the most an owner may have at once"
            " (max_running_backfills_per_owner): wait for one to end, or cancel one",
        )
    if usage.queued_runs + fires > queued:
        raise _wait(
            "max_queued_runs_per_owner",
            f"your backfills and re-runs hold {usage.queued_runs} fire times not yet ended;"
            f" {fires} more would pass the {queued} allowed (max_queued_runs_per_owner):"
            " wait for them to run, or backfill a shorter range",
        )


def check_reruns(usage: Usage, limits: Limits, runs: int, field: str | None = None) -> None:
    """Refuse a re-run of ``runs`` runs past the owner's queued fire times: 422 if it could
    never fit (``field``: what to change), 429 if what the owner holds is in the way."""
    queued = limits.queued_runs_per_owner
    if runs > queued:
        raise LimitExceeded(
            "max_queued_runs_per_owner",
            f"{runs} runs to re-run, more than the {queued} an owner's backfills and re-runs"
            " may hold at once (max_queued_runs_per_owner): re-run a shorter range at a time",
            field=field,
        )
    if usage.queued_runs + runs > queued:
        raise _wait(
            "max_queued_runs_per_owner",
            f"your backfills and re-runs hold {usage.queued_runs} fire times not yet ended;"
            f" {runs} more would pass the {queued} allowed (max_queued_runs_per_owner):"
            " wait for them to run",
        )


def check_trigger(limits: Limits, job_id: str, waiting: int) -> None:
    """Refuse a trigger of job ``job_id`` while ``waiting`` of its triggers have not started:
    429, they start (or are missed) shortly."""
    most = limits.waiting_triggers_per_job
    if waiting >= most:
        raise LimitExceeded(
            "max_waiting_triggers_per_job",
            f"job {job_id} has {waiting} triggers that have not started yet, the most one job"
            f" may have (max_waiting_triggers_per_job: {most}): wait for them to start",
            retry_after=r.TRIGGER_RETRY_AFTER_SECONDS,
        )


def _wait(limit: str, message: str) -> LimitExceeded:
    return LimitExceeded(limit, message, retry_after=r.LIMIT_RETRY_AFTER_SECONDS)
