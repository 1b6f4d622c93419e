"""Every resource name, key schema and infrastructure default of a chronoq deployment, in one
place.

The CDK stack and the local runtime both build their resources from these definitions, and
the handlers find them through the environment variables named here. Nothing in this module
performs I/O. The domain's own limits and defaults (what a job, a run or an owner may be or
hold) are in chronoq.domain.limits; the run state machines' definitions in
chronoq.execution.machines.

Why this module is long: it is every resource definition of a deployment, in one place by
design (variables, tables, queues, functions with their variables, the state machines' names,
the archive, operations' defaults), so that the CDK stack and the local runtime cannot
disagree; each definition is a few lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from chronoq.domain.limits import MAX_TIMEOUT_SECONDS, Limits
from chronoq.domain.runs import Priority

# --- Deployment defaults ------------------------------------------------------------------

#: Number of shards the schedule table is spread over (deployment setting ``SHARDS``).
DEFAULT_SHARDS = 4
#: The runner gives up on an attempt this much (at most a tenth of the timeout) before the
#: state machine's timeout, so that it answers, and keeps the attempt's log, in time.
RUNNER_DEADLINE_MARGIN_SECONDS = 2.0
#: How long dispatched schedule items and finished runs are kept (TTL), in seconds.
SCHEDULE_RETENTION_SECONDS = 2 * 24 * 3600
RUN_RETENTION_SECONDS = 90 * 24 * 3600
#: Listings (GET /jobs, GET /jobs/{id}/runs, GET /runs): items per page by default and at
#: most, and the most items a store looks at for one page (a filter that keeps few of them
#: answers a short page, with a next_token, rather than reading on without bound).
DEFAULT_PAGE_LIMIT = 50
MAX_PAGE_LIMIT = 100
PAGE_SCAN_LIMIT = 1000
#: How long an Idempotency-Key is remembered (TTL of its item in the jobs table), and after
#: how long a key whose request never answered (its function died) may be taken again.
IDEMPOTENCY_KEY_SECONDS = 24 * 3600
IDEMPOTENCY_STALE_SECONDS = 60
#: Longest Idempotency-Key accepted.
MAX_IDEMPOTENCY_KEY_CHARS = 255
#: Dispatcher invocations per tick, each for its own group of shards, in parallel: a late or
#: failed group holds up no other, and throughput grows with them (``-c dispatch_groups=N``).
DEFAULT_DISPATCH_GROUPS = 1
#: Targets one EventBridge rule may have: more groups take more rules.
RULE_TARGETS = 5


def shard_groups(shards: int, groups: int) -> list[list[int]]:
    """The shards split into ``groups`` groups as even as can be (shard s in group s % n)."""
    count = max(1, min(groups, shards))
    return [list(range(g, shards, count)) for g in range(count)]


#: Items of the time index the dispatcher reads at a time (a pack item holds up to
#: PACK_SIZE occurrences; one query answers at most 1 MB); after each page it records how
#: far into the minute it got.
DISPATCH_PAGE_ITEMS = 1000
#: With less time left than this, a dispatcher invocation takes no new page: it stops
#: cleanly, and the next one resumes where it stopped.
DISPATCH_STOP_SECONDS = 10.0
#: Most minutes one dispatcher invocation catches up per shard after an outage.
MAX_CATCH_UP_MINUTES = 60
#: When runs become visible on their queue, per priority, in whole seconds (SQS delays are
#: whole seconds) before the second before they are due. The worker's event source holds a
#: batch for up to WORKER_BATCHING_WINDOW_SECONDS (less when it fills), so a normal run
#: reaches a worker at the latest when it is due (its EXPRESS execution, or the worker, waits
#: for the exact second); high-priority runs a second earlier; low ones in the second after
#: (a batch of them up to a second later still). So a burst due in one second starts in
#: priority order, and only high-priority runs pay for more than a second or two of waiting.
#: (Each priority has its own queue too.)
DISPATCH_LEAD_SECONDS = {"high": 2, "normal": 1, "low": -1}
#: How long a worker's claim on a run lasts: a second delivery of the run meanwhile is asked
#: to come back later (the run is being started); after it, the run may be claimed again (its
#: worker died before starting it). Shorter than the queues' visibility timeout.
CLAIM_LEASE_SECONDS = 60
#: SQS's own maximum message delay.
MAX_DELAY_SECONDS = 900
#: Largest response excerpt the runner keeps, in bytes.
OUTPUT_EXCERPT_BYTES = 4096
#: Outputs, and each attempt's logs, up to this size live in the run record; larger ones in S3.
INLINE_BYTES = 32 * 1024
#: How often, and after how long a first pause (doubling), a webhook is retried.
WEBHOOK_ATTEMPTS = 4
WEBHOOK_FIRST_BACKOFF_SECONDS = 1.0
WEBHOOK_TIMEOUT_SECONDS = 5.0
#: The final statuses of the runs published to the deployment's SNS topic (deployment setting
#: ``topic_statuses``; it may be widened up to every final status). A job's own webhook and
#: e-mail follow its ``notify.on`` instead, whatever the topic hears of.
DEFAULT_TOPIC_STATUSES = ("FAILED", "TIMED_OUT", "MISSED")
#: Header carrying a webhook's signature, and the one carrying its delivery id.
SIGNATURE_HEADER = "X-Chronoq-Signature"
DELIVERY_HEADER = "X-Chronoq-Delivery"
#: The container of a container target's task definition, and its log stream prefix.
CONTAINER_NAME = "job"
CONTAINER_LOG_PREFIX = "chronoq"
#: The HTTP API's own limits on a request, checked before anything is written (see
#: docs/api/limits.md; what a job, a run or an owner may hold is in domain.limits). A request body:
MAX_REQUEST_BYTES = 256 * 1024
#: JSON nesting anywhere in a body (free-form ``args``, ``body``, ``payload`` included).
MAX_JSON_DEPTH = 32
#: How long the runner and the notifier keep a resolved value (by owner, name and version):
#: a value is read from its store at most once per this per container, and a deleted secret
#: is forgotten within it.
SECRET_CACHE_SECONDS = 300


def secrets_path(deployment: str) -> str:
    """The SSM Parameter Store path under which the owners' secrets of a deployment live
    (ENV_SECRETS_PATH): ``deployment`` is the stack's name (locally ``local``)."""
    return f"/chronoq/{deployment}/secrets"


#: How long a flow's item is kept after its last start (TTL).
FLOW_RETENTION_SECONDS = 7 * 24 * 3600
#: API Gateway throttling of the HTTP API's stage (deployment settings ``api_burst_limit``
#: and ``api_rate_limit``): requests at once and requests per second, for all callers.
DEFAULT_API_BURST_LIMIT = 200
DEFAULT_API_RATE_LIMIT = 100
#: Shortest password of a user of the deployment's user pool (upper and lower case letters,
#: digits and symbols required too).
MIN_PASSWORD_LENGTH = 12
#: Issuer and audience of tokens minted by the local runtime.
LOCAL_TOKEN_ISSUER = "chronoq-local"  # noqa: S105 - not a secret
TOKEN_AUDIENCE = "chronoq"  # noqa: S105 - not a secret
#: The label ``chronoq apply`` puts on every job it applies, naming the set of files (what
#: ``--prune`` deletes the jobs of).
MANAGED_BY_LABEL = "managed-by"
#: A job name's item (names are unique per owner) held this long by a job that does not
#: have the name (a create or a delete that died halfway) may be taken by another.
NAME_STALE_SECONDS = 60
DEFAULT_MANAGED_BY = "chronoq-apply"

# --- Environment variables read by the handlers (through chronoq.settings) ---------------

ENV_JOBS_TABLE = "CHRONOQ_JOBS_TABLE"
ENV_SCHEDULE_TABLE = "CHRONOQ_SCHEDULE_TABLE"
ENV_RUNS_TABLE = "CHRONOQ_RUNS_TABLE"
ENV_AUDIT_TABLE = "CHRONOQ_AUDIT_TABLE"
#: Run priorities, highest first; one SQS queue each.
PRIORITIES = tuple(p.value for p in Priority)
ENV_QUEUE_URLS = {p: f"CHRONOQ_QUEUE_URL_{p.upper()}" for p in PRIORITIES}
#: The run state machines: STANDARD (containers, long retry chains) and EXPRESS (the rest).
ENV_STATE_MACHINE_ARN = "CHRONOQ_STATE_MACHINE_ARN"
ENV_EXPRESS_STATE_MACHINE_ARN = "CHRONOQ_EXPRESS_STATE_MACHINE_ARN"
ENV_SHARDS = "CHRONOQ_SHARDS"
#: Comma-separated modules holding a deployment's own Python tasks (see chronoq.tasks).
ENV_TASK_MODULES = "CHRONOQ_TASK_MODULES"
#: The bucket for outputs and logs too large for the run record.
ENV_OUTPUT_BUCKET = "CHRONOQ_OUTPUT_BUCKET"
#: Other buckets a job's output_location may name (comma-separated; "*": any).
ENV_OUTPUT_BUCKETS = "CHRONOQ_OUTPUT_BUCKETS"
#: The bucket of the archive: every ended run's record, under ARCHIVE_PREFIX (see
#: chronoq.domain.archive).
ENV_ARCHIVE_BUCKET = "CHRONOQ_ARCHIVE_BUCKET"
#: The SNS topic finished runs are published to.
ENV_TOPIC_ARN = "CHRONOQ_TOPIC_ARN"
#: The final statuses of the runs published to it (comma-separated; default
#: DEFAULT_TOPIC_STATUSES; an unknown or not final status stops the notifier at cold start).
ENV_TOPIC_STATUSES = "CHRONOQ_TOPIC_STATUSES"
#: The Secrets Manager secret from which each owner's webhook signing secret is derived.
ENV_SIGNING_SECRET_ARN = "CHRONOQ_SIGNING_SECRET_ARN"  # noqa: S105 - a variable name
#: The SSM Parameter Store path under which owners' secrets live (``<path>/<owner>/<name>``,
#: see chronoq.aws.secrets): the stack's own, ``/chronoq/<stack name>/secrets``
#: (``secrets_path``).
ENV_SECRETS_PATH = "CHRONOQ_SECRETS_PATH"
#: The SES identity notification e-mails are sent from (empty: no e-mail).
ENV_EMAIL_SENDER = "CHRONOQ_EMAIL_SENDER"
#: Container targets: the log group of their tasks and the roles their task definitions use.
ENV_CONTAINER_LOG_GROUP = "CHRONOQ_CONTAINER_LOG_GROUP"
ENV_CONTAINER_EXECUTION_ROLE_ARN = "CHRONOQ_CONTAINER_EXECUTION_ROLE_ARN"
ENV_CONTAINER_TASK_ROLE_ARN = "CHRONOQ_CONTAINER_TASK_ROLE_ARN"
#: The SSRF guard of http targets and webhooks: "true" (the default: private, loopback,
#: link-local and metadata addresses refused) or "false" (chronoq local's default).
ENV_BLOCK_PRIVATE_TARGETS = "CHRONOQ_BLOCK_PRIVATE_TARGETS"
#: Networks (comma-separated CIDRs) the guard lets targets and webhooks call all the same.
ENV_ALLOWED_TARGET_NETWORKS = "CHRONOQ_ALLOWED_TARGET_NETWORKS"
#: Variables only chronoq local gives the functions that call out (no stack sets them): the
#: ports of its own API and embedded AWS on this machine (comma-separated) and the machine's
#: addresses they answer on besides loopback, which no target or webhook may call.
LOCAL_OWN_PORTS = "CHRONOQ_LOCAL_OWN_PORTS"
LOCAL_OWN_ADDRESSES = "CHRONOQ_LOCAL_OWN_ADDRESSES"
LOCAL_ONLY_ENV = (LOCAL_OWN_PORTS, LOCAL_OWN_ADDRESSES)
#: Jobs one owner may have (default domain.limits.DEFAULT_MAX_JOBS_PER_OWNER).
ENV_MAX_JOBS_PER_OWNER = "CHRONOQ_MAX_JOBS_PER_OWNER"
#: An owner's backfills, re-runs, runs in flight and secrets (defaults in domain.limits:
#: DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB, ...).
ENV_MAX_RUNNING_BACKFILLS_PER_JOB = "CHRONOQ_MAX_RUNNING_BACKFILLS_PER_JOB"
ENV_MAX_RUNNING_BACKFILLS_PER_OWNER = "CHRONOQ_MAX_RUNNING_BACKFILLS_PER_OWNER"
ENV_MAX_QUEUED_RUNS_PER_OWNER = "CHRONOQ_MAX_QUEUED_RUNS_PER_OWNER"
ENV_MAX_WAITING_TRIGGERS_PER_JOB = "CHRONOQ_MAX_WAITING_TRIGGERS_PER_JOB"
ENV_MAX_ASKED_RUNS_IN_FLIGHT = "CHRONOQ_MAX_ASKED_RUNS_IN_FLIGHT"
ENV_MAX_RUNS_IN_FLIGHT = "CHRONOQ_MAX_RUNS_IN_FLIGHT"
ENV_MAX_SECRETS_PER_OWNER = "CHRONOQ_MAX_SECRETS_PER_OWNER"
#: The variable giving each of domain.limits.Limits, by its field.
ENV_OWNER_LIMITS = {
    "running_backfills_per_job": ENV_MAX_RUNNING_BACKFILLS_PER_JOB,
    "running_backfills_per_owner": ENV_MAX_RUNNING_BACKFILLS_PER_OWNER,
    "queued_runs_per_owner": ENV_MAX_QUEUED_RUNS_PER_OWNER,
    "waiting_triggers_per_job": ENV_MAX_WAITING_TRIGGERS_PER_JOB,
    "asked_runs_in_flight": ENV_MAX_ASKED_RUNS_IN_FLIGHT,
    "runs_in_flight": ENV_MAX_RUNS_IN_FLIGHT,
    "secrets_per_owner": ENV_MAX_SECRETS_PER_OWNER,
}


def owner_limits_environment(limits: Limits) -> dict[str, str]:
    """The functions' variables giving ``limits`` (see settings.ApiSettings)."""
    return {env: str(getattr(limits, name)) for name, env in ENV_OWNER_LIMITS.items()}


#: What service targets may reach and which images containers may run: comma-separated ARN
#: (or image) patterns, ``*`` matching any characters; unset or empty: none; ALLOW_ANY: any.
#: The API refuses a job naming anything else (the runner's and state machine's IAM rights
#: follow the same lists in AWS).
ENV_LAMBDA_TARGETS = "CHRONOQ_LAMBDA_TARGETS"
ENV_QUEUE_TARGETS = "CHRONOQ_QUEUE_TARGETS"
ENV_TOPIC_TARGETS = "CHRONOQ_TOPIC_TARGETS"
ENV_EVENT_BUS_TARGETS = "CHRONOQ_EVENT_BUS_TARGETS"
ENV_CONTAINER_IMAGES = "CHRONOQ_CONTAINER_IMAGES"
#: Caps on container targets (defaults domain.limits.DEFAULT_MAX_CONTAINER_CPU, _MEMORY and
#: _SECONDS).
ENV_MAX_CONTAINER_CPU = "CHRONOQ_MAX_CONTAINER_CPU"
ENV_MAX_CONTAINER_MEMORY = "CHRONOQ_MAX_CONTAINER_MEMORY"
ENV_MAX_CONTAINER_SECONDS = "CHRONOQ_MAX_CONTAINER_SECONDS"
#: Every variable of the targets' allow-lists and caps, in that order.
ENV_TARGET_ACCESS = (
    ENV_LAMBDA_TARGETS,
    ENV_QUEUE_TARGETS,
    ENV_TOPIC_TARGETS,
    ENV_EVENT_BUS_TARGETS,
    ENV_CONTAINER_IMAGES,
    ENV_MAX_CONTAINER_CPU,
    ENV_MAX_CONTAINER_MEMORY,
    ENV_MAX_CONTAINER_SECONDS,
)


# --- Tables -------------------------------------------------------------------------------


class Projection(StrEnum):
    """What a global secondary index copies of each item (DynamoDB's ProjectionType)."""

    #: Every attribute: any change of the item rewrites its index entry too (billed).
    ALL = "ALL"
    #: The table's and the index's keys only: the entry is written only when the item enters
    #: or leaves the index or its index keys change; readers fetch the items themselves.
    KEYS_ONLY = "KEYS_ONLY"


@dataclass(frozen=True)
class Index:
    name: str
    partition_key: str
    sort_key: str | None = None
    projection: Projection = Projection.KEYS_ONLY


@dataclass(frozen=True)
class Table:
    """A DynamoDB table: on-demand, string keys."""

    id: str  # CDK construct id and local table name
    env: str
    partition_key: str
    sort_key: str | None = None
    ttl_attribute: str | None = None
    indexes: tuple[Index, ...] = ()
    #: Publish a change stream (new and old images).
    stream: bool = False


JOBS_BY_OWNER_INDEX = "by_owner"
#: The owners' silent jobs, longest silent first (sparse: only the expectation item of a silent
#: job carries its keys, ``silent_owner`` and ``silent_since``; see chronoq.domain.silence).
JOBS_SILENT_INDEX = "silent"

JOBS_TABLE = Table(
    id="Jobs",
    env=ENV_JOBS_TABLE,
    partition_key="job_id",
    # Idempotency keys live here too (``idem#...`` items, no owner: outside the index) and
    # expire; jobs never carry the attribute.
    ttl_attribute="expires_at",
    # Keys only: a job is written on every run (claimed, released, moved on), and an index
    # projecting all would be written each time too; listing fetches the jobs by key instead.
    indexes=(
        Index(
            JOBS_BY_OWNER_INDEX,
            partition_key="owner",
            sort_key="created_at",
            projection=Projection.KEYS_ONLY,
        ),
        # All attributes (an expectation item is small): GET /jobs?silent=true reads the
        # silences from the index, then the jobs by key.
        Index(
            JOBS_SILENT_INDEX,
            partition_key="silent_owner",
            sort_key="silent_since",
            projection=Projection.ALL,
        ),
    ),
)
#: The time index: partition = minute bucket + shard, sort = due time + run id.
SCHEDULE_TABLE = Table(
    id="Schedule",
    env=ENV_SCHEDULE_TABLE,
    partition_key="bucket",
    sort_key="due",
    ttl_attribute="expires_at",
)
#: The runs a flow holds back, by flow and in the order they are woken (sparse: only parked
#: runs carry its keys, ``waits_on`` and ``wait_order``, see chronoq.domain.flow.wait_order).
RUNS_WAITING_INDEX = "waiting"

RUNS_TABLE = Table(
    id="Runs",
    env=ENV_RUNS_TABLE,
    partition_key="job_id",
    sort_key="run_id",
    ttl_attribute="expires_at",
    # All attributes: a wake sends the runs it finds (few: only runs held back are in it).
    indexes=(
        Index(
            RUNS_WAITING_INDEX,
            partition_key="waits_on",
            sort_key="wait_order",
            projection=Projection.ALL,
        ),
    ),
    stream=True,  # read by the notifier and the archiver, filtered (see aws.fanout)
)
#: A job's audit trail (docs/api/audit.md): one item per change a caller made, by job and
#: ``<instant, to the millisecond>#<request id>`` (time order); kept as long as runs are,
#: after the job too. Only ever added to (PartiQL INSERT, which fails on an existing key).
#: An owner's entries, keys only: what an erasure of the owner finds (and the jobs they name,
#: deleted ones too). Its entry is written once, with the entry (a write unit more a change).
AUDIT_BY_OWNER_INDEX = "by_owner"

AUDIT_TABLE = Table(
    id="Audit",
    env=ENV_AUDIT_TABLE,
    partition_key="job_id",
    sort_key="entry",
    ttl_attribute="expires_at",
    stream=True,  # read by the archiver: every entry added (see aws.fanout)
    indexes=(
        Index(
            AUDIT_BY_OWNER_INDEX,
            partition_key="owner",
            sort_key="entry",
            projection=Projection.KEYS_ONLY,
        ),
    ),
)
TABLES = (JOBS_TABLE, SCHEDULE_TABLE, RUNS_TABLE, AUDIT_TABLE)


# --- Queues -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Queue:
    id: str
    priority: str
    env: str
    visibility_timeout_seconds: int = 180  # six times the worker's timeout, as AWS advises
    max_receive_count: int = 5


QUEUES = tuple(
    Queue(id=f"Runs{p.capitalize()}", priority=p, env=ENV_QUEUE_URLS[p]) for p in PRIORITIES
)
DEAD_LETTER_QUEUE_ID = "RunsDeadLetter"


# --- Functions ----------------------------------------------------------------------------

#: The folder holding one sub-folder per Lambda function (in a checkout; used to synthesize
#: and by the local runtime, never inside Lambda).
FUNCTIONS_DIR = Path(__file__).resolve().parents[3] / "functions"


@dataclass(frozen=True)
class Function:
    name: str
    memory_mb: int
    timeout_seconds: int
    env: tuple[str, ...]
    handler: str = "handler.handler"
    description: str = ""

    @property
    def source_dir(self) -> Path:
        return FUNCTIONS_DIR / self.name

    @property
    def handler_file(self) -> Path:
        module, _ = self.handler.rsplit(".", 1)
        return self.source_dir / f"{module}.py"


API_FUNCTION = Function(
    name="api",
    memory_mb=512,
    timeout_seconds=10,
    env=(
        ENV_JOBS_TABLE,
        ENV_SCHEDULE_TABLE,
        ENV_RUNS_TABLE,
        ENV_AUDIT_TABLE,  # to add to jobs' audit trails, and read them
        ENV_SHARDS,
        ENV_STATE_MACHINE_ARN,  # to stop the execution of a cancelled run
        ENV_TASK_MODULES,  # to refuse python targets naming unregistered tasks
        ENV_OUTPUT_BUCKET,  # to read outputs and logs kept in S3
        ENV_OUTPUT_BUCKETS,  # to refuse an output_location the runner may not write to
        ENV_ARCHIVE_BUCKET,  # to list and sign links to the owner's archived runs
        ENV_SIGNING_SECRET_ARN,  # to tell an owner their webhook signing secret
        ENV_BLOCK_PRIVATE_TARGETS,  # to refuse target and webhook URLs naming such addresses
        ENV_ALLOWED_TARGET_NETWORKS,
        ENV_MAX_JOBS_PER_OWNER,
        # to refuse backfills, re-runs and triggers past the owner's limits
        *ENV_OWNER_LIMITS.values(),
        *ENV_TARGET_ACCESS,  # to refuse targets and images the deployment does not allow
        ENV_SECRETS_PATH,  # to keep and delete owners' secrets' values
        *ENV_QUEUE_URLS.values(),
    ),
    description="HTTP API: stores jobs and answers queries",
)
DISPATCHER_FUNCTION = Function(
    name="dispatcher",
    memory_mb=512,  # its work per run is a few batched requests (bench/dispatch.py)
    timeout_seconds=55,
    env=(ENV_JOBS_TABLE, ENV_SCHEDULE_TABLE, ENV_RUNS_TABLE, ENV_SHARDS, *ENV_QUEUE_URLS.values()),
    description="Once a minute: enqueues the runs due in the coming minute",
)
WORKER_FUNCTION = Function(
    name="worker",
    memory_mb=128,  # it waits and makes three small requests per run
    timeout_seconds=30,
    env=(
        ENV_JOBS_TABLE,
        ENV_RUNS_TABLE,
        ENV_STATE_MACHINE_ARN,
        ENV_EXPRESS_STATE_MACHINE_ARN,
        # to send again a run its flow holds back, and a backfill's next run
        *ENV_QUEUE_URLS.values(),
        ENV_MAX_ASKED_RUNS_IN_FLIGHT,  # an owner's runs asked for under way at once
        ENV_MAX_RUNS_IN_FLIGHT,  # and all its runs
    ),
    description="Claims queued runs and starts their executions",
)
RUNNER_FUNCTION = Function(
    name="runner",
    memory_mb=256,
    timeout_seconds=MAX_TIMEOUT_SECONDS,
    env=(
        ENV_TASK_MODULES,
        ENV_RUNS_TABLE,  # to keep each attempt's logs and the output
        ENV_JOBS_TABLE,  # to read the versions of the secrets a target names
        ENV_SECRETS_PATH,  # and their values
        ENV_OUTPUT_BUCKET,
        ENV_CONTAINER_LOG_GROUP,
        ENV_CONTAINER_EXECUTION_ROLE_ARN,
        ENV_CONTAINER_TASK_ROLE_ARN,
        ENV_BLOCK_PRIVATE_TARGETS,  # http targets: the SSRF guard, at call time
        ENV_ALLOWED_TARGET_NETWORKS,
    ),
    description="Runs one attempt of a job's target",
)
NOTIFIER_FUNCTION = Function(
    name="notifier",
    memory_mb=256,
    timeout_seconds=180,  # a batch whose webhooks all time out and are retried still fits
    env=(
        ENV_JOBS_TABLE,
        ENV_RUNS_TABLE,  # which notifications a retried record already sent
        ENV_SCHEDULE_TABLE,  # a success of a job with ``expect`` moves its deadline on
        ENV_SHARDS,
        ENV_TOPIC_ARN,
        ENV_TOPIC_STATUSES,
        ENV_SIGNING_SECRET_ARN,
        ENV_SECRETS_PATH,  # the secrets a webhook's headers name
        ENV_EMAIL_SENDER,
        ENV_BLOCK_PRIVATE_TARGETS,  # webhooks: the SSRF guard, at call time
        ENV_ALLOWED_TARGET_NETWORKS,
        *ENV_QUEUE_URLS.values(),  # to wake the runs a flow parked when a slot is given back
        ENV_MAX_RUNS_IN_FLIGHT,  # and those an owner's runs in flight parked
    ),
    description="Tells owners about finished runs and silent jobs (SNS, signed webhooks, "
    "e-mail); wakes the runs a flow parked when runs holding its slots end",
)
ARCHIVER_FUNCTION = Function(
    name="archiver",
    memory_mb=512,  # a batch of up to 6 MB of stream records, decoded and compressed
    timeout_seconds=300,  # one object per owner and day of the batch, written side by side
    env=(ENV_ARCHIVE_BUCKET,),
    description="Keeps every ended run's record in the archive (S3, by owner and day)",
)
#: Stream records the notifier reads at a time, and how often a failing batch is retried.
#: Messages per worker invocation (the SQS event source mappings' batch size): as many runs
#: as one EXPRESS execution runs side by side (an inline Map runs 40 iterations at once).
#: Over 10, SQS event sources need a batching window: a batch is handed over when it is
#: full or when the window has passed since its first message, whichever comes first. Fewer,
#: fuller batches: fewer worker invocations and EXPRESS executions per run.
WORKER_BATCH_SIZE = 40
WORKER_BATCHING_WINDOW_SECONDS = 1
NOTIFIER_BATCH_SIZE = 5
NOTIFIER_MAX_RETRIES = 3
ERASER_FUNCTION = Function(
    name="eraser",
    memory_mb=256,
    timeout_seconds=900,  # an owner with many jobs and runs: pages of deletes
    env=(
        ENV_JOBS_TABLE,
        ENV_RUNS_TABLE,
        ENV_AUDIT_TABLE,  # the owner's entries, and the erasure's own
        ENV_OUTPUT_BUCKET,  # the owner's jobs' outputs and logs
        ENV_ARCHIVE_BUCKET,  # the owner's archive
        ENV_SECRETS_PATH,  # the owner's secrets' values
        ENV_STATE_MACHINE_ARN,  # to stop the executions of runs under way
        ENV_EXPRESS_STATE_MACHINE_ARN,
    ),
    description="Erases one owner's data everywhere, when an operator invokes it",
)
#: The archiver's reading of the runs stream (see chronoq.aws.fanout): batches as long as
#: the archive's latency allows (an ended run reaches it within ARCHIVE_LATENCY_SECONDS),
#: so that each object holds many runs; Lambda's largest batch of stream records (a batch
#: is also handed over when its records reach 6 MB). Locally the window is a few seconds.
ARCHIVER_BATCH_SIZE = 10_000
ARCHIVER_BATCHING_WINDOW_SECONDS = 240
LOCAL_ARCHIVER_BATCHING_WINDOW_SECONDS = 5.0
ARCHIVER_MAX_RETRIES = 10
ARCHIVE_LATENCY_SECONDS = 300
FUNCTIONS = (
    API_FUNCTION,
    DISPATCHER_FUNCTION,
    WORKER_FUNCTION,
    RUNNER_FUNCTION,
    NOTIFIER_FUNCTION,
    ERASER_FUNCTION,
    ARCHIVER_FUNCTION,
)
LAMBDA_RUNTIME = "python3.12"

# --- State machine ------------------------------------------------------------------------

STATE_MACHINE_ID = "RunStateMachine"
EXPRESS_STATE_MACHINE_ID = "RunExpressStateMachine"
#: The longest an Express execution may last (AWS's limit), and how much of it a run's
#: attempts, timeouts and retry waits may take at worst to be given one (the rest is for the
#: state machine's own steps and their retries).
EXPRESS_MAX_SECONDS = 300
EXPRESS_BUDGET_SECONDS = 240
#: What AWS bills an Express execution for: its duration in 100 ms steps, at 64 MB.
EXPRESS_BILLING_STEP_MS = 100
EXPRESS_MEMORY_MB = 64
#: The ASL file both run state machines are built from (chronoq.execution.machines).
STATE_MACHINE_FILE = "execution/statemachine/run.asl.json"
#: Placeholders in the ASL file, filled by CDK (DefinitionSubstitutions) and the local runtime
#: (see chronoq.execution.machines).
ASL_RUNS_TABLE = "RunsTable"
ASL_JOBS_TABLE = "JobsTable"
ASL_RUNNER_FUNCTION = "RunnerFunctionArn"
ASL_CONTAINER_CLUSTER = "ContainerCluster"
ASL_CONTAINER_SUBNETS = "ContainerSubnets"  # comma-separated
ASL_CONTAINER_SECURITY_GROUP = "ContainerSecurityGroup"


# --- Notifications, outputs, containers -------------------------------------------------------

OUTPUT_BUCKET_ID = "Outputs"
TOPIC_ID = "RunNotifications"
SIGNING_SECRET_ID = "WebhookSigningSecret"  # noqa: S105 - a construct id, not a secret
CONTAINER_CLUSTER_ID = "Containers"
CONTAINER_LOG_GROUP_ID = "ContainerLogs"

# --- The archive (docs/api/archive.md) -------------------------------------------------

ARCHIVE_BUCKET_ID = "Archive"
#: Where in the archive bucket the runs' records are (``<prefix>/owner=<owner segment>/
#: day=YYYY-MM-DD/<first>-<last>.jsonl.gz``), and Athena's query results.
ARCHIVE_PREFIX = "archive"
ATHENA_RESULTS_PREFIX = "athena-results"
#: The Glue tables over the archive (its database is the stack's own): the runs', and the
#: audit entries'.
ARCHIVE_TABLE = "runs"
ARCHIVE_AUDIT_TABLE = "audit"
#: Deployment settings ``archive_infrequent_access_days`` (0: never moved) and
#: ``archive_expiry_days`` (0: kept for ever): when archived objects move to S3 Standard-IA,
#: and when they are deleted; Athena's results are deleted after ATHENA_RESULTS_DAYS.
DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS = 30
DEFAULT_ARCHIVE_EXPIRY_DAYS = 730
ATHENA_RESULTS_DAYS = 7
#: How long a link ``GET /archive`` answers with may be used, and how many one page holds.
ARCHIVE_LINK_SECONDS = 900
DEFAULT_ARCHIVE_PAGE_LIMIT = 1000
MAX_ARCHIVE_PAGE_LIMIT = 1000
#: The archiver's PUTs of one batch made side by side.
ARCHIVE_PUT_THREADS = 8

# --- Operations: metrics, alarms, the heartbeat, concurrency --------------------------------

#: The CloudWatch namespace of chronoq's own metrics (chronoq.metrics; EMF log lines).
METRICS_NAMESPACE = "chronoq"
#: Most batches the worker runs at once per priority queue (the event source mappings'
#: maximum concurrency; deployment setting ``worker_max_concurrency``): a batch of up to 40
#: runs takes about 100 ms, so 30 at once start some 10,000 runs a second of one priority
#: (the Scale section's target), and the three queues together hold at most 90 of the
#: account's concurrent executions.
DEFAULT_WORKER_MAX_CONCURRENCY = 30
#: Concurrent executions reserved for the runner (deployment setting
#: ``runner_reserved_concurrency``; 0: none): it may use up to these and no more, so a burst
#: of runs never takes the API's, the dispatcher's or the worker's. With the default account
#: quota of 1,000 that leaves 200 for the other functions (the worker takes at most 90).
DEFAULT_RUNNER_RESERVED_CONCURRENCY = 800
#: The heartbeat: a job the deployment runs on itself every minute (chronoq.heartbeat), owned
#: by SYSTEM_OWNER, an owner no token can have (the API refuses it as a caller).
SYSTEM_OWNER = "chronoq:system"
HEARTBEAT_JOB_ID = "job_chronoq_heartbeat"
#: The heartbeat is late when its start lag passes this, and missing when none succeeded for
#: this long (its alarms, chronoq status and the console say so).
HEARTBEAT_MAX_LAG_SECONDS = 10
HEARTBEAT_MAX_SILENCE_SECONDS = 300

#: How long a fan-in item (which upstreams of an instant have arrived) is kept after its
#: first arrival, beyond its ``within_seconds`` (TTL of its item in the jobs table).
FANIN_RETENTION_SECONDS = 7 * 24 * 3600
