"""Test builders shared by every suite: job specs, messages, worker batches, and the use cases
wired over any adapters (the in-memory fakes, or the AWS adapters on moto)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from chronoq.domain.jobs import JobSpec
from chronoq.domain.limits import Limits
from chronoq.domain.runs import Run, RunMessage
from chronoq.fakes import (
    FakeArchive,
    FakeArtifacts,
    FakeClock,
    FakeExecutor,
    FakeQueues,
    FakeStore,
)
from chronoq.fakes.audit import FakeAuditTrail
from chronoq.fakes.secrets import FakeSecretValues
from chronoq.usecases.after import Pipelines
from chronoq.usecases.archive import ArchiveLinks, Archiver
from chronoq.usecases.audit import AuditOperations
from chronoq.usecases.backfills import BackfillOperations
from chronoq.usecases.calendars import CalendarOperations
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.dispatch import Dispatcher
from chronoq.usecases.idempotency import Idempotency
from chronoq.usecases.jobs import JobOperations
from chronoq.usecases.pages import PageTokens
from chronoq.usecases.ports import (
    Archive,
    Artifacts,
    AuditTrail,
    Clock,
    Executor,
    Queues,
    SecretValues,
    Sleep,
    Store,
)
from chronoq.usecases.progress import Progress
from chronoq.usecases.reruns import RerunOperations
from chronoq.usecases.runs import RunOperations
from chronoq.usecases.secrets import SecretOperations
from chronoq.usecases.silence import Silence
from chronoq.usecases.start import RunStarter
from chronoq.usecases.timeindex import TimeIndex
from chronoq.usecases.wake import SlotWaker

from tests.support import load_event

OWNER = "alice"
HTTP_TARGET = {"type": "http", "url": "http://127.0.0.1:9/hook"}
#: Job names are unique per owner: each job a builder makes has a name of its own.
_NAMES = itertools.count(1)


def unique_name(prefix: str = "t") -> str:
    """A job name no other job of this test process has."""
    return f"{prefix}-{next(_NAMES)}"


def job_spec(
    schedule: dict[str, Any] | None = None,
    target: dict[str, Any] | None = None,
    **extra: Any,
) -> JobSpec:
    """A valid job: every minute, an http target, no retries unless ``extra`` says; a name
    of its own unless ``extra`` gives one."""
    return JobSpec.model_validate(
        {
            "name": unique_name(),
            "schedule": schedule or {"type": "cron", "expression": "* * * * *"},
            "target": target or HTTP_TARGET,
            "retry": {"max_attempts": 1},
            **extra,
        }
    )


def at(instant: datetime) -> dict[str, str]:
    """A one-time schedule at ``instant``."""
    return {"type": "at", "at": instant.isoformat()}


def seconds_from(now: datetime, seconds: float) -> datetime:
    """``now`` plus ``seconds``, on a whole second."""
    return (now + timedelta(seconds=seconds)).replace(microsecond=0)


def message_for(run: Run, queued_at: datetime | None = None) -> RunMessage:
    """The SQS message that asks a worker to start ``run``."""
    return RunMessage(
        job_id=run.job_id,
        run_id=run.id,
        scheduled_at=run.scheduled_at,
        queued_at=queued_at or datetime.now(UTC),
    )


def worker_event(*messages: RunMessage) -> dict[str, Any]:
    """An SQS batch for the worker with one record per message (events/worker/sqs_batch)."""
    event = load_event("worker/sqs_batch")
    template = event["Records"][0]
    event["Records"] = [
        {**template, "messageId": f"m{i}", "body": m.model_dump_json()}
        for i, m in enumerate(messages)
    ]
    return event


@dataclass
class Wiring:
    """Every use case over one set of adapters (what the functions together do)."""

    store: Store
    queues: Queues
    executor: Executor
    artifacts: Artifacts
    clock: Clock
    sleep: Sleep
    shards: int = 4
    output_buckets: frozenset[str] | None = None
    tasks: set[str] = field(default_factory=lambda: {"chronoq.tasks:echo"})
    master_secret: str = "test-master-secret"
    #: What each owner's backfills and re-runs may hold.
    limits: Limits = field(default_factory=Limits)
    #: Owners' secrets' values.
    secret_values: SecretValues = field(default_factory=FakeSecretValues)
    #: Jobs' audit trails.
    audit: AuditTrail = field(default_factory=FakeAuditTrail)
    #: The archive's bucket.
    archive: Archive = field(default_factory=FakeArchive)

    @property
    def archiver(self) -> Archiver:
        return Archiver(self.archive)

    @property
    def archive_links(self) -> ArchiveLinks:
        return ArchiveLinks(self.archive, self.clock)

    @property
    def secrets(self) -> SecretOperations:
        return SecretOperations(
            self.store, self.secret_values, self.store, self.clock, self.limits.secrets_per_owner
        )

    @property
    def calendars(self) -> CalendarOperations:
        return CalendarOperations(self.store, self.store, self.clock, self.jobs.recalendar)

    @property
    def index(self) -> TimeIndex:
        return TimeIndex(self.store, self.queues, self.shards, self.clock)

    @property
    def pipelines(self) -> Pipelines:
        return Pipelines(self.store, self.index, self.clock)

    @property
    def canceller(self) -> Canceller:
        return Canceller(self.store, self.executor, self.clock, self.waker)

    @property
    def waker(self) -> SlotWaker:
        return SlotWaker(self.store, self.queues, self.clock, self.limits.runs_in_flight)

    @property
    def jobs(self) -> JobOperations:
        return JobOperations(
            self.store,
            self.index,
            self.clock,
            self.output_buckets,
            self.tasks.__contains__,
            self.pages,
            self.audit,
            limits=self.limits,
        )

    @property
    def runs(self) -> RunOperations:
        return RunOperations(self.store, self.artifacts, self.canceller, self.clock, self.pages)

    @property
    def backfills(self) -> BackfillOperations:
        return BackfillOperations(
            self.store, self.index, self.canceller, self.clock, self.pages, self.audit, self.limits
        )

    @property
    def progress(self) -> Progress:
        return Progress(self.store, self.clock)

    @property
    def silence(self) -> Silence:
        """Jobs' expectations of success: what the notifier does as a run of such a job
        succeeds (the API's and the dispatcher's part are theirs)."""
        return Silence(self.store, self.shards, self.clock)

    @property
    def reruns(self) -> RerunOperations:
        return RerunOperations(self.store, self.index, self.clock, self.audit, self.limits)

    @property
    def audit_trails(self) -> AuditOperations:
        """The API's reading of jobs' audit trails."""
        return AuditOperations(self.audit, self.store, self.pages)

    @property
    def pages(self) -> PageTokens:
        return PageTokens(lambda: self.master_secret)

    @property
    def idempotency(self) -> Idempotency:
        return Idempotency(self.store, self.clock)

    @property
    def dispatcher(self) -> Dispatcher:
        return Dispatcher(self.store, self.index, self.shards, self.clock)

    @property
    def starter(self) -> RunStarter:
        return RunStarter(
            self.store,
            self.executor,
            self.canceller,
            self.clock,
            self.sleep,
            self.queues,
            self.limits.asked_runs_in_flight,
            self.limits.runs_in_flight,
        )


@dataclass
class Fakes(Wiring):
    """The use cases over the in-memory fakes and a fake clock (sleeping moves it on)."""

    store: FakeStore = field(default_factory=FakeStore)
    queues: FakeQueues = field(default_factory=FakeQueues)
    executor: FakeExecutor = field(default_factory=FakeExecutor)
    artifacts: FakeArtifacts = field(init=False)
    clock: FakeClock = field(default_factory=FakeClock)
    sleep: Sleep = field(default=time.sleep)

    def __post_init__(self) -> None:
        self.artifacts = FakeArtifacts(self.store)
        self.sleep = self.clock.sleep
        self.archive = FakeArchive(self.clock)  # (its links expire on the fake clock)

    def count_run_ends(self) -> int:
        """What the notifier does with the runs stream: count the ends of backfills' runs
        and re-runs seen so far (see FakeTables.runs); how many were counted."""
        return self.progress.count(self.store.runs.take_ends())
