"""The adapters the use cases are given, as small protocols: one implementation on AWS
(chronoq.aws), one in memory (chronoq.fakes), held to the same contract by
tests/contract.

Why this module is long: it is every port, each a small protocol whose docstrings state the
contract tests/contract holds both implementations to; kept side by side, they are the one list
the per-port modules of chronoq.aws.store and chronoq.fakes.store mirror
(tests/unit/test_house.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, Protocol, TypeVar

from chronoq.domain.after import FanIn, Graph
from chronoq.domain.audit import AuditEntry
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.calendars import CalendarMeta
from chronoq.domain.flow import FlowState
from chronoq.domain.inflight import InFlight
from chronoq.domain.jobs import Job
from chronoq.domain.limits import Usage
from chronoq.domain.runs import Attempt, Occurrence, Priority, Run, RunMessage, RunStatus
from chronoq.domain.secrets import SecretMeta
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent
from chronoq.execution.contract import ExecutionInput

#: What time it is (UTC, milliseconds).
Clock = Callable[[], datetime]
#: Wait this many seconds.
Sleep = Callable[[float], None]

#: How claiming a run went: ``claimed``; ``held`` (another worker's claim still lasts: ask
#: again later); ``taken`` (running or over: a duplicate delivery); ``job_changed`` (the job
#: is no longer as read: read it again and decide afresh).
Claim = Literal["claimed", "held", "taken", "job_changed"]

T = TypeVar("T")
#: Where a listing resumes: the store's own keys of the last item it looked at.
Position = tuple[str, ...]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing. ``after`` is where the next page starts (None: nothing more).
    A page may hold fewer items than asked for, even none, and still have a next one: a
    store looks at a bounded number of items per page (``PAGE_SCAN_LIMIT``)."""

    items: list[T]
    after: Position | None = None


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing keeps: any of ``statuses`` (None: all), scheduled at or after
    ``since`` and before ``until``."""

    statuses: frozenset[RunStatus] | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: Only the runs of this backfill.
    backfill_id: str | None = None

    def matches(self, run: Run) -> bool:
        return (
            (self.statuses is None or run.status in self.statuses)
            and (self.since is None or run.scheduled_at >= self.since)
            and (self.until is None or run.scheduled_at < self.until)
            and (self.backfill_id is None or run.backfill_id == self.backfill_id)
        )


@dataclass(frozen=True)
class RunEnd:
    """A backfill's run, or a re-run, seen ending (as the runs stream shows it: its final
    status) while its end is not counted yet."""

    job_id: str
    run_id: str
    owner: str
    status: RunStatus
    backfill_id: str | None = None

    @classmethod
    def of(cls, run: Run) -> RunEnd:
        return cls(run.job_id, run.id, run.owner, run.status, run.backfill_id)


@dataclass(frozen=True)
class Tally:
    """One step of counting run ends (usecases.progress), written whole or not at all:

    - each of ``ends`` marked counted, if it is not yet and still has the status seen;
    - ``backfill`` (as read: its state and ``ended`` must still be so), their backfill's
      counters moved on by them; COMPLETED at ``completed_at`` if given, and then taken out
      of its owner's usage;
    - the owner's re-runs not ended counted down by ``reruns``."""

    owner: str
    ends: tuple[RunEnd, ...]
    backfill: Backfill | None = None
    completed_at: datetime | None = None
    reruns: int = 0


@dataclass(frozen=True)
class TallyRefused:
    """Why a Tally was not written: the ids of its runs whose end is counted already (or
    which no longer have the status seen); whether its backfill is no longer as read."""

    runs: frozenset[str]
    backfill: bool


@dataclass(frozen=True)
class KeyRecord:
    """An idempotency key as stored: the fingerprint of the request it was first used
    with, and that request's answer once it has one (None: still being served)."""

    fingerprint: str
    answer: str | None
    claimed_at: datetime


class JobStore(Protocol):
    """The jobs table."""

    def put_new_job(self, job: Job) -> None: ...

    def get_job(self, job_id: str) -> Job | None: ...

    def get_jobs(self, job_ids: Iterable[str], consistent: bool = False) -> dict[str, Job]:
        """Many jobs by id (missing ones are absent); eventually consistent reads unless
        ``consistent``."""
        ...

    def list_jobs(self, owner: str) -> list[Job]:
        """The owner's jobs, oldest (``created_at``) first."""
        ...

    def page_jobs(
        self,
        owner: str,
        limit: int,
        after: Position | None = None,
        keep: Callable[[Job], bool] | None = None,
    ) -> Page[Job]:
        """Up to ``limit`` of the owner's jobs that ``keep`` keeps, oldest first, from
        ``after`` (a page's ``after``) on."""
        ...

    def save_job(self, job: Job, expected_version: int) -> bool:
        """Write a changed job unless its version is no longer ``expected_version``; its run
        bookkeeping (``active_runs``) is left as stored."""
        ...

    def delete_job(self, job_id: str) -> bool: ...

    def job_count(self, owner: str) -> int:
        """How many jobs the owner has (the count the quota keeps: one read)."""
        ...

    def count_job(self, owner: str, delta: int, limit: int | None = None) -> bool:
        """Add ``delta`` to the owner's job count, unless that takes it above ``limit``
        (False: refused, nothing changed). One conditional write, no count of the jobs."""
        ...

    def claim_name(self, owner: str, name: str, job_id: str, now: datetime) -> str | None:
        """Take ``name`` among ``owner``'s jobs for ``job_id`` (names are unique per owner):
        None when taken; else the id of the job that holds it. One conditional write, so
        that of two jobs created (or renamed) at once under one name only one gets it."""
        ...

    def release_name(self, owner: str, name: str, job_id: str) -> None:
        """Give ``name`` up, if ``job_id`` holds it."""
        ...

    def all_jobs(self) -> Iterator[Job]:
        """Every job of every owner (for migrations: a scan of the whole table)."""
        ...

    def claim_run(
        self, job: Job, run: Run, queued_at: datetime, now: datetime, exclusive: bool
    ) -> Claim:
        """Enter the run in the job's active runs and mark it QUEUED under a claim lasting
        CLAIM_LEASE_SECONDS (see the DynamoDB adapter for the rules)."""
        ...

    def release_run(self, job_id: str, run_id: str) -> None:
        """Take a run off its job's active runs."""
        ...


class RunStore(Protocol):
    """The runs table (history)."""

    def create_run(self, run: Run, now: datetime) -> bool:
        """Record a new run; False when one with its id exists (left untouched)."""
        ...

    def get_run(self, job_id: str, run_id: str) -> Run | None: ...

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        """The newest ``limit`` runs, newest first."""
        ...

    def page_runs(
        self,
        job_id: str,
        owner: str,
        limit: int,
        after: Position | None = None,
        where: RunFilter | None = None,
    ) -> Page[Run]:
        """Up to ``limit`` runs of the job that belong to ``owner`` and match ``where``,
        newest first, from ``after`` (a page's ``after``) on. Runs outlive their job (until
        they expire): they carry their owner, the same for every run of a job."""
        ...

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        """Give a run that will not (or no longer) execute its final status, if it is still in
        one of ``only_from``; ``attempt``, the attempt it ends, joins its attempts."""
        ...

    def delete_pending_run(self, job_id: str, run_id: str) -> bool:
        """Forget a run that is still only SCHEDULED."""
        ...

    def note_notification(self, job_id: str, run_id: str, channel: str, outcome: str) -> None:
        """Keep how one notification of a run's end went (if the run is still kept)."""
        ...

    def hold_run(self, run: Run, held_at: datetime, reason: str, now: datetime) -> bool:
        """Record that a run not started yet waits for its flow since ``held_at`` (and why,
        ``reason``, shown as its ``waiting_for`` until it starts or ends): creates
        its record (SCHEDULED) if it has none; False when it has one that is no longer
        SCHEDULED or already notes a wait (left untouched)."""
        ...

    def park_run(
        self, run: Run, held_at: datetime, flow_key: str, reason: str, now: datetime
    ) -> bool:
        """Park a run not started yet until a slot of the flow ``flow_key`` is given back:
        creates its record (SCHEDULED) if it has none, notes ``held_at`` unless a wait is
        noted already and why it waits (``reason``, shown as its ``waiting_for`` until it
        starts or ends), and enters it among the flow's parked runs (woken in the order of
        chronoq.domain.flow.wait_order). False when its record is no longer SCHEDULED. A run
        leaves its flow's parked runs when it starts or ends."""
        ...

    def count_waiting_triggers(self, job_id: str, since: datetime, most: int) -> int:
        """How many manual runs of the job triggered since ``since`` have not started
        (SCHEDULED or QUEUED), among its newest ``most`` runs of that time (a key-range query
        of the job's partition, newest first: its reads bounded by ``most``)."""
        ...

    def waiting_runs(self, flow_key: str, limit: int) -> list[Run]:
        """Up to ``limit`` runs parked on ``flow_key`` that have not started, in the order
        they are woken (what the store shows a moment after they were parked)."""
        ...


class FlowStore(Protocol):
    """Flow control's items, in the jobs table (see chronoq.domain.flow)."""

    def get_flow(self, key: str) -> FlowState:
        """The flow's state (strongly consistent; version 0: no item yet)."""
        ...

    def save_flow(self, key: str, before: FlowState, after: FlowState, now: datetime) -> bool:
        """Write ``after`` unless the item is no longer at ``before``'s version (False:
        changed meanwhile, nothing written). Only holders added or removed are written."""
        ...

    def release_flow(self, key: str, run_id: str) -> None:
        """Give the run's slot back (no-op if it holds none): what the state machine does
        at a run's end."""
        ...

    def get_in_flight(self, key: str) -> InFlight:
        """An owner's count of runs in flight (strongly consistent; empty: no item)."""
        ...

    def take_in_flight(
        self, key: str, buckets: Mapping[str, int], limit: int, now: datetime
    ) -> InFlight | None:
        """Count the runs ``buckets`` holds (how many in each) as in flight, if the total
        stays within ``limit``: the item as it is then (None: it would not, nothing
        written)."""
        ...

    def give_in_flight(self, key: str, buckets: Mapping[str, int]) -> InFlight:
        """Take runs that ended out of the count, each from its bucket: the item as it is
        then (empty: there was no item, nothing written)."""
        ...

    def heal_in_flight(self, key: str, expired: Mapping[str, int]) -> None:
        """Take expired buckets out of the item and their counts out of its total, if they
        still hold those counts (else nothing: another writer changed them meanwhile)."""
        ...

    def mark_in_flight_parked(self, key: str, now: datetime) -> None:
        """Note on the count that runs are parked on it (``parked_at``)."""
        ...

    def clear_in_flight_parked(self, key: str, parked_at: int) -> None:
        """Take the note off, unless a run was parked since ``parked_at`` (as read)."""
        ...


class BackfillStore(Protocol):
    """Backfills, kept in their job's partition of the runs table."""

    def put_backfill(self, backfill: Backfill) -> None: ...

    def get_backfill(self, job_id: str, backfill_id: str) -> Backfill | None: ...

    def page_backfills(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[Backfill]:
        """Up to ``limit`` of the owner's backfills of the job, newest first."""
        ...

    def end_backfill(self, backfill: Backfill, state: BackfillState, now: datetime) -> bool:
        """Give a RUNNING backfill its final state, and (one whose ends are counted) take it
        out of its owner's usage, together (False: it was not RUNNING)."""
        ...

    def start_backfill(self, backfill: Backfill, usage: Usage) -> bool:
        """Keep a new backfill and enter it in its owner's usage, in one transaction, unless
        the usage is no longer at ``usage.version`` (False: nothing written; read it again).
        The usage's version moves on."""
        ...

    def get_backfills(self, keys: Iterable[tuple[str, str]]) -> list[Backfill]:
        """Backfills by (job id, backfill id), read consistently (missing ones left out)."""
        ...

    def count_ends(self, tally: Tally) -> TallyRefused | None:
        """Write ``tally`` whole (None), or nothing (why not)."""
        ...


class UsageStore(Protocol):
    """What each owner's backfills and re-runs hold (see domain.limits): an item of the jobs
    table per owner."""

    def get_usage(self, owner: str) -> Usage:
        """The owner's usage as kept (``backfill_runs`` 0: it is read from the backfills),
        read consistently."""
        ...

    def reserve_reruns(self, owner: str, runs: int, usage: Usage) -> bool:
        """Add ``runs`` re-runs not ended to the owner's usage, unless it is no longer at
        ``usage.version`` (False: nothing written). The version moves on."""
        ...

    def release_reruns(self, owner: str, runs: int) -> None:
        """Take ``runs`` re-runs (made, never sent) back out of the owner's usage."""
        ...

    def release_backfill(self, owner: str, job_id: str, backfill_id: str) -> None:
        """Take a backfill out of the owner's usage (one that is gone)."""
        ...


@dataclass(frozen=True)
class SchedulePage:
    """What a page of a minute's bucket of the time index holds: occurrences, and jobs'
    success deadlines; ``after`` is the last item's key when there may be more (None:
    nothing after these)."""

    occurrences: list[Occurrence]
    deadlines: list[Deadline]
    after: str | None


class ScheduleStore(Protocol):
    """The time index: occurrences by minute bucket and shard, jobs' success deadlines, and
    each shard's checkpoint."""

    def put_occurrences(
        self,
        occurrences: Iterable[Occurrence],
        shards: int,
        now: datetime,
        pack: str | None = None,
    ) -> None:
        """Write occurrences to the time index: an item each, or (``pack``: a name unique to
        the writer, say the dispatched minute chaining them on) a few items holding many,
        by bucket; written again under the same name, the same items."""
        ...

    def occurrence_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> tuple[list[Occurrence], str | None]:
        """The occurrences of at most ``limit`` items of ``minute`` on ``shard``, those whose
        key comes after ``after`` (None: from the start), by due time; and the last item's
        key when there may be more (None: nothing after these)."""
        ...

    def schedule_page(
        self, minute: datetime, shard: int, after: str | None, limit: int
    ) -> SchedulePage:
        """As occurrence_page (the same query), with the success deadlines those items hold
        too (the dispatcher's read of a minute)."""
        ...

    def occurrences_in(self, minute: datetime, shard: int) -> list[Occurrence]:
        """Every occurrence due in ``minute`` on ``shard``, by due time."""
        ...

    def checkpoints(self, shards: int) -> dict[int, datetime | None]:
        """The first of dispatch_marks."""
        ...

    def progress(self, shards: int) -> dict[int, tuple[datetime, str]]:
        """The second of dispatch_marks."""
        ...

    def dispatch_marks(
        self, shards: int
    ) -> tuple[dict[int, datetime | None], dict[int, tuple[datetime, str]]]:
        """In one read, per shard: the last minute dispatched completely (None: never); and
        how far into a minute not yet dispatched completely it got, the minute and the key
        of the last item dispatched (shards without any left out)."""
        ...

    def advance_within(self, shard: int, minute: datetime, after: str) -> None:
        """Record the items of ``minute`` on ``shard`` up to key ``after`` as dispatched."""
        ...

    def opened_through(self, shard: int) -> datetime | None:
        """The last minute whose dispatch has begun on ``shard``."""
        ...

    def open_minute(self, shard: int, minute: datetime) -> None: ...

    def close_minute(self, shard: int, minute: datetime) -> None: ...

    def reopen_minute(self, shard: int, minute: datetime) -> None:
        """Have the dispatcher read ``minute`` on ``shard`` again (it did not see all of it:
        an occurrence written there could not be sent)."""
        ...


class AfterStore(Protocol):
    """Completion triggers (see chronoq.domain.after): each owner's pipeline graph (an item of
    the jobs table), the followers kept on upstream jobs, and the fan-in items of the
    instants of ``after`` jobs."""

    def get_graph(self, owner: str) -> Graph:
        """The owner's pipeline graph (version 0, no edges: none yet). A strongly consistent
        read."""
        ...

    def save_graph(self, graph: Graph) -> bool:
        """Write the graph at its version plus one, on condition that the stored one is still
        at ``graph.version`` (0: none stored): False, and nothing written, otherwise."""
        ...

    def follow(self, job_id: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """Add and remove followers of job ``job_id`` (``Job.followed_by``), leaving the rest
        of its item alone (nothing, if the job is gone)."""
        ...

    def arrive(
        self, job_id: str, instant: datetime, upstream_id: str, run_id: str, now: datetime
    ) -> FanIn:
        """Note upstream ``upstream_id``'s run ``run_id`` in the fan-in of (``job_id``,
        ``instant``), made if missing (``first_at``: ``now``); answered with the fan-in as it
        is then. Noted twice, it is noted once."""
        ...

    def get_fanin(self, job_id: str, instant: datetime) -> FanIn | None: ...

    def job_named(self, owner: str, name: str) -> str | None:
        """The id of the job holding ``name`` among ``owner``'s jobs (its name's item), if
        any (the job itself is read to be sure)."""
        ...


class ExpectStore(Protocol):
    """Jobs' expectations of success (an item of the jobs table per job with ``expect``), their
    deadlines (entries of the time index) and their silences' records (the runs table): see
    chronoq.domain.silence. Instants compare to the millisecond."""

    def start_expectation(self, job_id: str, within: int, since: datetime) -> Expectation:
        """Begin a wait at ``since`` (the job made, ``expect`` set, the job resumed): the item
        made, or its ``within`` and ``since`` set and its silence ended without a word; its
        last success kept. The expectation as it is then."""
        ...

    def change_expectation(self, job_id: str, within: int) -> Expectation | None:
        """Set ``within`` (its wait, last success and silence kept): the expectation then
        (None: the job has none)."""
        ...

    def pause_expectation(self, job_id: str, at: datetime) -> Expectation | None:
        """End its wait at ``at`` (``since`` set to it: a deadline written before is let go)
        and a silence with it, without a word (a paused job is never silent): the
        expectation then (None: no item, nothing written)."""
        ...

    def end_expectation(self, job_id: str) -> None:
        """Forget it (``expect`` removed, the job deleted): idempotent."""
        ...

    def get_expectation(self, job_id: str) -> Expectation | None:
        """Read consistently."""
        ...

    def get_expectations(self, job_ids: Iterable[str]) -> dict[str, Expectation]:
        """Many, by job id (eventually consistent; missing ones are absent)."""
        ...

    def record_success(self, job_id: str, at: datetime) -> Expectation | None:
        """A run that SUCCEEDED at ``at`` moves the wait on (``since`` and ``last_success_at``
        set to ``at``), if the job has an expectation, is not silent, and its wait began
        before ``at``: one conditional write. The expectation then; None when refused (read
        it to know why)."""
        ...

    def mark_silent(self, expectation: Expectation, event: SilenceEvent) -> bool:
        """In one transaction: the expectation, if still as read (its ``since`` and
        ``within``, not silent), silent since ``event.silent_since`` (in its owner's silent
        jobs); and ``event`` (SILENT) written. False: it changed meanwhile, nothing
        written."""
        ...

    def end_silence(self, expectation: Expectation, event: SilenceEvent) -> bool:
        """In one transaction: the expectation, if still as read (its ``since``, silent since
        ``event.silent_since``), moved on by the success (``since`` and ``last_success_at``
        set to ``event.recovered_at``, its silence ended); and ``event`` (RECOVERED) written.
        False: it changed meanwhile, nothing written."""
        ...

    def silent_jobs(
        self, owner: str, limit: int, after: Position | None = None
    ) -> Page[Expectation]:
        """Up to ``limit`` of the owner's silent jobs' expectations, longest silent first, from
        ``after`` on (a sparse index: eventually consistent, never a scan)."""
        ...

    def put_deadlines(self, deadlines: Iterable[Deadline], shards: int, now: datetime) -> None:
        """Write each deadline to the time index, in the bucket of the minute the dispatcher
        checks it at (domain.silence.check_minute, as of ``now``); written again into the same
        bucket, the same item."""
        ...

    def get_silence(self, job_id: str, key: str) -> SilenceEvent | None:
        """A silence's record as kept (the notes of its notifications), read consistently;
        RunStore.note_notification notes them (``key`` for the run id)."""
        ...


class KeyStore(Protocol):
    """Idempotency keys, kept in the jobs table until they expire."""

    def claim_key(
        self, key: str, fingerprint: str, now: datetime, stale: datetime
    ) -> KeyRecord | None:
        """Take ``key`` for a request of ``fingerprint``: None when taken (it was unknown,
        expired, or held unanswered since before ``stale`` for the same fingerprint); else
        the record that holds it. It expires IDEMPOTENCY_KEY_SECONDS after ``now``."""
        ...

    def answer_key(self, key: str, answer: str) -> None:
        """Keep the answer of the request that took ``key``."""
        ...

    def release_key(self, key: str) -> None:
        """Forget ``key`` (its request failed: the next one with it runs afresh)."""
        ...


class SecretStore(Protocol):
    """Each owner's secrets as chronoq knows them: names, versions and which jobs use each
    (the values are SecretValues'). One item of the jobs table per owner holds its secrets'
    names and versions (what a run reads), one per secret the ids of the jobs using it."""

    def get_secrets(self, owner: str, consistent: bool = False) -> dict[str, SecretMeta]:
        """The owner's secrets by name (one read)."""
        ...

    def put_secret(self, owner: str, meta: SecretMeta, limit: int) -> bool:
        """Keep ``meta``: a new secret (False, nothing kept, if the owner has ``limit``
        already), or a new version of one (a version older than the one kept is not
        written: two changes at once keep the later value's)."""
        ...

    def remove_secret(self, owner: str, name: str) -> list[str]:
        """Forget the secret unless a job uses it: [] (forgotten, or not there), else the ids
        of the jobs using it (nothing changed). Atomic with use_secrets: no job can come to
        use a secret removed meanwhile."""
        ...

    def use_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> str | None:
        """Note that the job uses ``names``, all of them only if every one exists: None, or
        one that does not (nothing noted)."""
        ...

    def unuse_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> None:
        """The job no longer uses ``names`` (idempotent)."""
        ...

    def secret_users(self, owner: str, name: str) -> list[str]:
        """The ids of the jobs using the secret, sorted."""
        ...


class CalendarStore(Protocol):
    """Each owner's business calendars and which jobs use each: one item of the jobs table per
    owner holds its calendars (names, rules, versions), one per calendar the ids of the jobs
    using it (the index a change re-plans from, and a delete is refused by)."""

    def get_calendars(self, owner: str, consistent: bool = False) -> dict[str, CalendarMeta]:
        """The owner's calendars by name (one read)."""
        ...

    def put_calendar(self, owner: str, meta: CalendarMeta, limit: int) -> bool:
        """Keep ``meta``: a new calendar (version 1; False, nothing kept, if the owner has
        ``limit`` already or one of that name appeared meanwhile), or the next version of a
        kept one (False if the kept one is no longer at ``meta.version - 1``)."""
        ...

    def remove_calendar(self, owner: str, name: str) -> list[str]:
        """Forget the calendar unless a job uses it: [] (forgotten, or not there), else the
        ids of the jobs using it (nothing changed). Atomic with use_calendar."""
        ...

    def use_calendar(self, owner: str, job_id: str, name: str) -> bool:
        """Note that the job uses the calendar, if it exists (False: it does not)."""
        ...

    def unuse_calendar(self, owner: str, job_id: str, name: str) -> None:
        """The job no longer uses the calendar (idempotent)."""
        ...

    def calendar_users(self, owner: str, name: str) -> list[str]:
        """The ids of the jobs using the calendar, sorted."""
        ...


class SecretValues(Protocol):
    """Secrets' values, per owner (on AWS: SSM Parameter Store SecureStrings under the
    deployment's path; locally: the engine's storage). Write-only to the API: only the runner
    and the notifier read them, at run time."""

    def put_value(self, owner: str, name: str, value: str) -> int:
        """Keep ``value`` as the secret's latest; its version (each put moves it on)."""
        ...

    def get_value(self, owner: str, name: str, version: int) -> str:
        """The value the secret had at ``version``; raises SecretUnavailable."""
        ...

    def delete_value(self, owner: str, name: str) -> None:
        """Forget the secret's every version (nothing there: nothing done)."""
        ...


class ErasureStore(Protocol):
    """An owner's data taken out of the tables (see chronoq.usecases.erasure)."""

    def erase_job_partition(self, job_id: str) -> int:
        """Delete every item of the job's partition of the runs table (its runs, its
        backfills): how many there were."""
        ...

    def erase_owner_items(self, owner: str) -> int:
        """Delete the jobs table's items that belong to the owner rather than to a job (its
        job count, usage, secrets' names, runs in flight): how many there were."""
        ...


class EntryExists(Exception):
    """An audit entry with the same key (job, instant and request id) is kept already: it is
    never written over."""


class AuditTrail(Protocol):
    """Jobs' audit trails (the audit table): entries are only ever added, and read."""

    def append(self, entry: AuditEntry) -> None:
        """Keep a new entry; EntryExists (nothing written) if one with its key is kept."""
        ...

    def page(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[AuditEntry]:
        """Up to ``limit`` of the job's entries that belong to ``owner``, newest first, from
        ``after`` (a page's ``after``) on. Entries outlive their job (until they expire): they
        carry its owner, the same for every entry of a job."""
        ...


class JobRunStore(
    JobStore,
    RunStore,
    FlowStore,
    BackfillStore,
    UsageStore,
    SecretStore,
    ExpectStore,
    AfterStore,
    CalendarStore,
    Protocol,
):
    """The jobs and runs tables (what the worker, a cancellation and the notifier use; the
    notifier's moves jobs' success deadlines in the time index too)."""


class Store(
    JobStore,
    RunStore,
    ScheduleStore,
    KeyStore,
    FlowStore,
    BackfillStore,
    UsageStore,
    SecretStore,
    ErasureStore,
    ExpectStore,
    AfterStore,
    CalendarStore,
    Protocol,
):
    """All three tables (what the API and the dispatcher use)."""


class Queues(Protocol):
    def send(self, messages: Iterable[tuple[Priority, RunMessage]], now: datetime) -> int:
        """Send every message to its priority's queue, delayed until shortly before it is
        due. Returns how many were sent."""
        ...


class Executor(Protocol):
    def start(self, run_id: str, execution_input: ExecutionInput) -> bool:
        """Start the run's execution. STANDARD (a run that does not fit EXPRESS): named
        ``run_id``; again with the same input is a no-op; False when an execution of that
        name exists with other input. EXPRESS: as ``start_batch`` of the one run."""
        ...

    def start_batch(self, inputs: list[ExecutionInput]) -> None:
        """Start runs that all fit EXPRESS together, in as few EXPRESS executions as their
        size allows (each run goes through the run states, side by side). Never idempotent:
        each call starts executions anew, whose first state lets one execution of a run
        through."""
        ...

    def stop(self, run_id: str, reason: str) -> bool:
        """Stop the run's execution; no-op if it is not running (an EXPRESS execution cannot
        be stopped). True when a running execution was stopped."""
        ...


class Artifacts(Protocol):
    """Outputs and log lines of runs: in the run record when small, else in S3."""

    def save_output(
        self, job_id: str, run_id: str, attempt: int, output: str, output_location: str | None
    ) -> dict[str, str]:
        """Keep an attempt's output; answers ``{"output": ..., "output_location": ...}``."""
        ...

    def append_logs(
        self, job_id: str, run_id: str, attempt: int, lines: list[str], output_location: str | None
    ) -> None: ...

    def log_object(
        self, job_id: str, run_id: str, attempt: int, lines: list[str], output_location: str | None
    ) -> str | None:
        """Lines too large for the run record go to an S3 object of the attempt: its
        location; None (nothing written) when they fit the record: the state machine writes
        them there with the run's outcome."""
        ...

    def read_output(self, run: Run) -> str | None: ...

    def erase_job_objects(self, job_id: str) -> int:
        """Delete the job's objects in the deployment's own bucket (its runs' outputs and
        logs: a job's ``output_location`` elsewhere is its owner's bucket, not chronoq's):
        how many there were."""
        ...

    def read_logs(self, job_id: str, run_id: str) -> list[str]: ...


@dataclass(frozen=True)
class StoredObject:
    """An object of the archive: its key and size."""

    key: str
    size: int


class Archive(Protocol):
    """The archive's bucket (see chronoq.domain.archive): objects written whole, listed by
    prefix, read through links that expire."""

    def put(self, key: str, body: bytes) -> None:
        """Write ``key`` (again: replaced)."""
        ...

    def list(self, prefix: str, limit: int, after: str | None = None) -> Page[StoredObject]:
        """Up to ``limit`` objects under ``prefix``, in key order, from the first key after
        ``after`` (a key under ``prefix``) on; the page's ``after`` holds the last key when
        more may follow."""
        ...

    def link(self, key: str, expires_in: int) -> str:
        """A URL that downloads ``key``, with no other credentials, for ``expires_in``
        seconds."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Delete ``keys`` (at most 1,000; what is not there: nothing). Only the eraser."""
        ...
