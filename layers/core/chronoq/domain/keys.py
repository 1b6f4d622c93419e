"""The key layout of chronoq's three tables: every prefix their keys begin with, in one home,
so that no two kinds of item ever share a key.

The jobs table (partition key ``job_id``):

- ``job_<hex>``: a job (see ids.new_job_id);
- ``count#<owner>``: how many jobs an owner has;
- ``name#<length of owner>#<owner>#<name>``: the job holding a name among an owner's jobs;
- ``idem#<key>``: an idempotency key's record;
- ``flow#<digest>``: a flow's holders, or a backfill's pacing (see domain.flow);
- ``usage#<owner>``: what an owner's backfills and re-runs hold (see domain.limits);
- ``secrets#<owner>``: an owner's secrets, names and versions (see domain.secrets);
- ``uses#<length of owner>#<owner>#<name>``: the ids of the jobs using a secret;
- ``calendars#<owner>``: an owner's business calendars (see domain.calendars);
- ``calendar-uses#<length of owner>#<owner>#<name>``: the ids of the jobs using a calendar;
- ``expect#<job id>``: a job's expectation of success, for a job with ``expect`` (see
  domain.silence);
- ``graph#<owner>``: an owner's pipeline graph, the edges of its ``after`` jobs, and
  ``fanin#<job id>#<instant>``: which upstreams of an ``after`` job have arrived for an
  instant (see domain.after).

The runs table (``job_id``, ``run_id``), one partition per job:

- ``<job id>_<second>...``: a run (run ids begin with their job's id: see ids.run_id);
- ``backfill#<id>``: a backfill of the job;
- ``expect#<instant>`` and ``expect#<instant>#recovered``: a job's silence noted (SILENT) and
  ended by a success (RECOVERED), which the notifier hears of (see domain.silence).

The schedule table (``bucket``, ``due``):

- ``<minute>#<shard>``: a minute's occurrences on a shard (see ids.bucket);
- ``checkpoint``: each shard's dispatch checkpoint (``due``: the shard, four digits).

In a minute's bucket, ``due`` is an occurrence's due time and run id, a pack's
(``<due>#pack#...``) or a job's success deadline's (``<deadline>#expect#<job id>``).
"""

from __future__ import annotations

JOB = "job_"
COUNT = "count#"
NAME = "name#"
IDEMPOTENCY_KEY = "idem#"
FLOW = "flow#"
USAGE = "usage#"
SECRETS = "secrets#"
SECRET_USES = "uses#"  # noqa: S105 - a key prefix
EXPECT = "expect#"
GRAPH = "graph#"
FANIN = "fanin#"
CALENDARS = "calendars#"
CALENDAR_USES = "calendar-uses#"

BACKFILL = "backfill#"

CHECKPOINT_BUCKET = "checkpoint"

#: Each table's prefixes (no two of one table begin alike: no kind of item can take
#: another's key).
JOBS_TABLE = (
    JOB,
    COUNT,
    NAME,
    IDEMPOTENCY_KEY,
    FLOW,
    USAGE,
    SECRETS,
    SECRET_USES,
    EXPECT,
    GRAPH,
    FANIN,
    CALENDARS,
    CALENDAR_USES,
)
RUNS_TABLE = (BACKFILL, EXPECT)  # (and the job id, which begins with JOB)
SCHEDULE_TABLE = (CHECKPOINT_BUCKET,)


def name_key(owner: str, name: str) -> str:
    """The key of the item that holds ``name`` among ``owner``'s jobs (the owner's length
    first: no owner and name run into another's)."""
    return f"{NAME}{len(owner)}#{owner}#{name}"


def count_key(owner: str) -> str:
    """The key of the item counting ``owner``'s jobs."""
    return f"{COUNT}{owner}"


def idempotency_key(key: str) -> str:
    """The key of the item holding idempotency key ``key``'s record."""
    return f"{IDEMPOTENCY_KEY}{key}"


def usage_key(owner: str) -> str:
    """The key of the item keeping what ``owner``'s backfills and re-runs hold."""
    return f"{USAGE}{owner}"


def secrets_key(owner: str) -> str:
    """The key of the item holding ``owner``'s secrets' names and versions."""
    return f"{SECRETS}{owner}"


def secret_uses_key(owner: str, name: str) -> str:
    """The key of the item holding the ids of the jobs using ``owner``'s secret ``name``
    (the owner's length first, as in name_key)."""
    return f"{SECRET_USES}{len(owner)}#{owner}#{name}"


def expect_key(job_id: str) -> str:
    """The key of the item holding ``job_id``'s expectation of success (see domain.silence)."""
    return f"{EXPECT}{job_id}"


def graph_key(owner: str) -> str:
    """The key of the item holding ``owner``'s pipeline graph (see domain.after)."""
    return f"{GRAPH}{owner}"


def fanin_key(job_id: str, stamp: str) -> str:
    """The key of the fan-in item of ``after`` job ``job_id`` for the instant ``stamp``."""
    return f"{FANIN}{job_id}#{stamp}"


def calendars_key(owner: str) -> str:
    """The key of the item holding ``owner``'s business calendars."""
    return f"{CALENDARS}{owner}"


def calendar_uses_key(owner: str, name: str) -> str:
    """The key of the item holding the ids of the jobs using ``owner``'s calendar ``name``
    (the owner's length first, as in name_key)."""
    return f"{CALENDAR_USES}{len(owner)}#{owner}#{name}"
