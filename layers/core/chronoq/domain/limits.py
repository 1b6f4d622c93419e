"""The domain's limits and defaults; what one owner's backfills and re-runs may hold at once,
and what they hold now.

The constants below bound what a job, a run, a target or an owner may be or hold
(docs/api/limits.md), and give a job's defaults. They are pure values: the deployment's
resources and variables (chronoq.resources, chronoq.settings) take their defaults from here,
never the other way round.

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

from chronoq.domain.errors import LimitExceeded

# --- Jobs: names, size, schedules --------------------------------------------------------------

#: A cron expression's length, a job's name.
MAX_CRON_EXPRESSION_LENGTH = 200
MAX_NAME_LENGTH = 200
#: A whole job as stored (JSON text of its spec): well below DynamoDB's 400 KB item, and
#: small enough to travel in a run's execution input.
MAX_JOB_BYTES = 128 * 1024
#: A cron expression's next fire must come within this many days when a job is created or
#: changed, or its schedule previewed ("0 0 30 2 *", which never fires, is refused too; so is
#: "0 0 29 2 *" when the next February 29th is eight years away, across 2100).
MAX_CRON_GAP_DAYS = 5 * 366
#: Instants a schedule may name (at, start_at, end_at): [EARLIEST_YEAR, LATEST_YEAR).
EARLIEST_YEAR = 1970
LATEST_YEAR = 3000
#: Longest interval of a rate schedule.
MAX_RATE_SECONDS = 365 * 24 * 3600
#: Limited runs: the largest ``max_runs`` (the instant of a job's last run is computed when
#: it is set, fire time by fire time: a bounded amount of work on the API's side).
MAX_RUNS = 1000
#: Labels: at most this many per job (keys and values as Kubernetes takes them).
MAX_LABELS = 20

# --- Runs: timeouts, start deadlines, how far ahead runs are dispatched ------------------------

#: Default execution timeout of a run (the SLA), in seconds: a container's, and every other
#: target's (short enough that a run with the default retry policy fits an Express execution).
DEFAULT_CONTAINER_TIMEOUT_SECONDS = 300
DEFAULT_TIMEOUT_SECONDS = 60
#: Default start deadline: a run that cannot start this long after its time is MISSED.
DEFAULT_START_DEADLINE_SECONDS = 900
#: The start deadline of a requested run (a backfill's, a re-run's), counted from when it was
#: asked for (or, a backfill's, made), unless the request sets one.
DEFAULT_REQUESTED_START_DEADLINE_SECONDS = 3600
MAX_START_DEADLINE_SECONDS = 24 * 3600
#: Longest timeout the Lambda runner can honour (Lambda's own limit).
MAX_TIMEOUT_SECONDS = 900
#: Longest timeout of a container target (a Fargate task has no limit of its own).
MAX_CONTAINER_TIMEOUT_SECONDS = 24 * 3600
#: How far ahead of "now" the dispatcher enqueues (SQS DelaySeconds covers the gap): every
#: minute that starts within this many seconds. The rule ticks at the start of each minute
#: (a cron rule), so each minute is dispatched about a minute before it starts; a tick late
#: in its minute (55 s or more) dispatches the minute after next too, so the first seconds
#: of a minute are dispatched at least 6 s ahead whatever second the tick comes at.
DISPATCH_AHEAD_SECONDS = 65

# --- Targets and webhooks: what they may carry, set and reach ----------------------------------

#: Largest message an sqs/sns/eventbridge/lambda target may carry (JSON text).
MAX_MESSAGE_BYTES = 64 * 1024
#: Free-form fields: a python target's ``args``, an http target's ``body`` (JSON text).
MAX_ARGS_BYTES = 64 * 1024
#: An http target's headers: how many, and the size of each name and value.
MAX_HEADERS = 50
MAX_HEADER_NAME_LENGTH = 256
MAX_HEADER_VALUE_LENGTH = 8 * 1024
#: Headers an http target may not set: chronoq sets them (or HTTP framing depends on them).
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
RESERVED_HEADER_PREFIX = "x-chronoq-"
#: What a webhook's own headers may not name (besides the reserved ones above): chronoq
#: sends a signed JSON document. And how many a webhook may have.
WEBHOOK_OWN_HEADERS = frozenset({"content-type", "user-agent"})
MAX_WEBHOOK_HEADERS = 20
#: Caps on container targets (deployment settings ``max_container_cpu`` in CPU units,
#: ``max_container_memory`` in MiB, ``max_container_seconds``): 1 vCPU, 2 GB, one hour.
DEFAULT_MAX_CONTAINER_CPU = 1024
DEFAULT_MAX_CONTAINER_MEMORY = 2048
DEFAULT_MAX_CONTAINER_SECONDS = 3600
#: Fargate's own largest task (and what chronoq local allows).
MAX_CONTAINER_CPU = 4096
MAX_CONTAINER_MEMORY = 30720
#: The value of an allow-list setting that allows anything (chronoq local's).
ALLOW_ANY = "*"

# --- Secrets, run parameters, business calendars -----------------------------------------------

#: Secrets (docs/api/secrets.md): a name's length; a value's size (SSM Parameter Store's
#: standard tier holds 4 KB) and its least length (a shorter one could not be scrubbed from
#: a run's logs without masking ordinary text); how many one owner may keep.
MAX_SECRET_NAME_LENGTH = 64
MAX_SECRET_VALUE_BYTES = 4096
MIN_SECRET_VALUE_LENGTH = 4
DEFAULT_MAX_SECRETS_PER_OWNER = 50
#: A run's parameters, and a job's defaults: a JSON object of at most this many bytes
#: (compact JSON; the run's record keeps them, its execution input carries them), its names
#: at most this long.
MAX_PARAMETERS_BYTES = 8 * 1024
MAX_PARAMETER_NAME_LENGTH = 64
#: Business calendars (docs/api/calendars.md): a name's length; how many dates and
#: ranges one holds (a job using it carries a copy: this bounds the job's item); a range's
#: length in days; how many one owner may keep; how many jobs one PUT re-plans (the rest
#: with the token it answers).
MAX_CALENDAR_NAME_LENGTH = 64
MAX_CALENDAR_ENTRIES = 500
MAX_CALENDAR_RANGE_DAYS = 366
DEFAULT_MAX_CALENDARS_PER_OWNER = 20
CALENDAR_REPLAN_PAGE = 25
#: How far a calendar schedule looks for a business day (then it fires no more).
CALENDAR_HORIZON_DAYS = 2 * 366

# --- What one owner may hold (deployment settings: see Limits below) ---------------------------

#: Jobs one owner may have (deployment setting ``max_jobs_per_owner``).
DEFAULT_MAX_JOBS_PER_OWNER = 10_000
#: What one owner's backfills and re-runs may hold at once (deployment settings of the same
#: names; see Limits below): backfills RUNNING of one job, and of all the owner's jobs; fire
#: times of the owner's RUNNING backfills and re-runs that have not ended. An owner alone
#: runs 1,000 runs due together (one backfill of 1,000 fire times, ten re-runs of 100) well
#: within them.
DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB = 3
DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER = 10
DEFAULT_MAX_QUEUED_RUNS_PER_OWNER = 10_000
#: Manual triggers of one job that have not started yet (deployment setting of the same name):
#: counted among the job's newest WAITING_TRIGGERS_SCAN runs of the last start deadline.
DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB = 1000
WAITING_TRIGGERS_SCAN = 2 * DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB
#: The Retry-After (seconds) of a trigger refused for the job's triggers waiting.
TRIGGER_RETRY_AFTER_SECONDS = 10
#: The Retry-After (seconds) of a request refused by one of these limits that waiting lifts.
LIMIT_RETRY_AFTER_SECONDS = 60

# --- Time windows, backfills, re-runs and flow control -----------------------------------------

#: (See docs/api/limits.md.) A recurring schedule's ``window_seconds``: at most a day, and at
#: most the schedule's shortest gap between two fire times (a cron expression's among its
#: next WINDOW_GAP_SCAN).
MAX_WINDOW_SECONDS = 24 * 3600
WINDOW_GAP_SCAN = 1000
#: A backfill runs at most this many fire times, from at most this far back; at most
#: BACKFILL_MAX_IN_FLIGHT of its runs are under way at once (1 for a job with concurrency
#: forbid or replace, whose policy allows one active run).
MAX_BACKFILL_RUNS = 1000
MAX_BACKFILL_DAYS = 90
BACKFILL_MAX_IN_FLIGHT = 10
#: ``POST /jobs/{id}/rerun`` re-runs at most this many runs, of a range of at most this many
#: days.
MAX_RERUN_RUNS = 100
MAX_RERUN_DAYS = 90
#: A job's ``flow``: its key's length, and the largest limits. Each run that holds a
#: ``max_running`` slot is an entry of the flow's item in the jobs table (about 50 bytes),
#: written on every start and end: a write unit per KB of it.
MAX_FLOW_KEY_LENGTH = 64
MAX_FLOW_RUNNING = 100
MAX_FLOW_STARTS_PER_SECOND = 1000
#: A run its flow holds back is parked: the end of a run holding a slot of its flow wakes the
#: next one (see chronoq.usecases.wake); the parked run itself looks again only after this
#: many seconds (or at its start deadline, if sooner), in case a wake was lost. A run whose
#: flow reserved a second further ahead than FLOW_START_AHEAD_SECONDS waits for it on its
#: queue.
FLOW_RELOOK_SECONDS = 300
#: A run that lost its flow item's write to other workers' several times looks again after
#: this many seconds.
FLOW_RETRY_SECONDS = 1
FLOW_START_AHEAD_SECONDS = 2
#: The runs one owner asked for (manual triggers, re-runs, backfills' runs) under way at once
#: (deployment setting ``max_asked_runs_in_flight``): one more waits, parked, for one of them
#: to end (see chronoq.domain.flow.owner_item_key). Scheduled runs are not counted here (they
#: are among all the owner's runs in flight, below). Each run under way is an entry of the
#: owner's flow item (about 55 bytes), which every start and end of such a run writes: a
#: write unit per KB of it.
DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT = 200
#: All of one owner's runs under way at once, whatever started them (deployment setting
#: ``max_runs_in_flight``): one more, scheduled or asked for, waits, parked, for one of them to
#: end, under its start deadline (see chronoq.domain.inflight). Twice the 1,000 runs an owner
#: may have due in one second, so that those never wait for it.
DEFAULT_MAX_RUNS_IN_FLIGHT = 2000
#: A slot whose run has not started this long after the second reserved for it (its worker
#: died before starting it, or its message was lost) is taken back when the flow is full.
FLOW_LEASE_SECONDS = 60

# --- Silence and the audit trail ---------------------------------------------------------------

#: Silence (docs/api/notifications.md): a job's ``expect.success_within_seconds``, from a
#: minute (the dispatcher looks at deadlines once a minute) to 366 days (a yearly job, with a
#: day's slack).
MIN_SUCCESS_WITHIN_SECONDS = 60
MAX_SUCCESS_WITHIN_SECONDS = 366 * 24 * 3600
#: A job's audit trail (docs/api/audit.md): the longest value an entry keeps of a field
#: (its JSON text; a longer one is cut), and the most fields one entry lists.
MAX_AUDIT_VALUE_CHARS = 256
MAX_AUDIT_CHANGES = 50

# --- Completion triggers (schedule type ``after``: see chronoq.domain.after) -------------------

#: Most upstream jobs one ``after`` schedule names.
MAX_UPSTREAMS = 10
#: Most ``after`` jobs one owner may have (their edges are kept in one item per owner, the
#: owner's pipeline graph, that every change of an ``after`` job rewrites: see
#: chronoq.domain.after).
MAX_AFTER_JOBS_PER_OWNER = 1000
#: The largest upstream output an after job's target may take (``{{ upstream.NAME.output }}``):
#: ten of them stay well within an execution's input (256 KB).
UPSTREAM_OUTPUT_BYTES = 8 * 1024
#: How long an instant waits for the rest of its upstreams by default, and at most (seconds).
DEFAULT_AFTER_WITHIN_SECONDS = 24 * 3600
MAX_AFTER_WITHIN_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Limits:
    """The deployment's limits on each owner (docs/api/limits.md)."""

    running_backfills_per_job: int = DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB
    running_backfills_per_owner: int = DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER
    queued_runs_per_owner: int = DEFAULT_MAX_QUEUED_RUNS_PER_OWNER
    waiting_triggers_per_job: int = DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB
    asked_runs_in_flight: int = DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT
    runs_in_flight: int = DEFAULT_MAX_RUNS_IN_FLIGHT
    secrets_per_owner: int = DEFAULT_MAX_SECRETS_PER_OWNER


@dataclass(frozen=True)
class Setting:
    """One of ``Limits`` as a deployment sets it: its field, its name (the CDK context value,
    ``chronoq local --max-…``) and what it bounds. The functions' variable giving it is
    chronoq.resources.ENV_OWNER_LIMITS[field]."""

    field: str
    help: str

    @property
    def name(self) -> str:
        return f"max_{self.field}"

    @property
    def default(self) -> int:
        value: int = getattr(Limits(), self.field)
        return value


#: Every limit a deployment sets on each owner (docs/api/limits.md).
SETTINGS = (
    Setting(
        "running_backfills_per_job",
        "backfills of one job running at once",
    ),
    Setting(
        "running_backfills_per_owner",
        "backfills of one owner running at once",
    ),
    Setting(
        "queued_runs_per_owner",
        "fire times one owner's running backfills and re-runs may hold not ended",
    ),
    Setting(
        "waiting_triggers_per_job",
        "manual triggers of one job not started yet",
    ),
    Setting(
        "asked_runs_in_flight",
        "runs one owner asked for (manual, re-runs, backfills') under way at once",
    ),
    Setting(
        "runs_in_flight",
        "runs of one owner, whatever started them, under way at once",
    ),
    Setting("secrets_per_owner", "secrets one owner may keep"),
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
            retry_after=TRIGGER_RETRY_AFTER_SECONDS,
        )


def _wait(limit: str, message: str) -> LimitExceeded:
    return LimitExceeded(limit, message, retry_after=LIMIT_RETRY_AFTER_SECONDS)
