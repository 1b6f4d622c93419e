"""The worker: start a batch's runs, each at its second, once, unless it must not start.

Why this module is long: starting a run is one decision over many rules (the claim, duplicate
and stale messages, pause, the overlap policy, the start deadline, flow control, an owner's
runs in flight, a backfill's pacing), taken for a whole batch with batched reads and writes;
the rules share the batch's reads, so they live in one class.
"""

from __future__ import annotations

import contextvars
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Literal, Protocol, TypeVar

from chronoq import resources as r
from chronoq.domain import flow, ids, inflight
from chronoq.domain import limits as lim
from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.errors import Conflict
from chronoq.domain.jobs import Concurrency, Job
from chronoq.domain.retry import worst_case_seconds
from chronoq.domain.runs import Priority, Run, RunMessage, RunStatus, Trigger
from chronoq.domain.secrets import upstream_outputs_named
from chronoq.domain.time import format_instant, utc_second
from chronoq.execution.contract import ExecutionInput
from chronoq.usecases.cancel import Canceller
from chronoq.usecases.flow import SAVE_ATTEMPTS, Answer, Ask, FlowGate, flows_of
from chronoq.usecases.ports import (
    BackfillStore,
    Clock,
    Executor,
    FlowStore,
    JobStore,
    Queues,
    RunStore,
    Sleep,
)
from chronoq.usecases.timeindex import end_unstarted, new_run

#: How often the worker re-reads a job that changed under it before giving the run back.
CLAIM_ATTEMPTS = 3


class ClaimHeld(Conflict):
    """Another worker claimed the run moments ago and is starting it: the message is retried
    later (when the claim has either become a running run or lapsed)."""


#: What became of a message. ``held``: its flow holds the run back (sent again, to look
#: again or to wait for the second its flow reserved); ``parked``: a woken run found no slot
#: free after all and is parked again (its look-again message is on the queue already);
#: ``cancelled``: its backfill was.
Outcome = Literal[
    "started",
    "duplicate",
    "gone",
    "superseded",
    "missed",
    "skipped",
    "taken",
    "held",
    "parked",
    "cancelled",
]


@dataclass(frozen=True)
class Gated:
    """A run that may start once its flows let it (a run of a job with a ``flow``, or of a
    backfill): decided, not yet claimed (a job with concurrency forbid or replace claims it
    once its flows have given it a start)."""

    job: Job
    run: Run
    message: RunMessage
    exclusive: bool
    backfill: Backfill | None


@dataclass(frozen=True)
class Ready:
    """A run that starts now if its owner's runs in flight leave it room: decided, through
    its flows (``holding``: the flow items it holds a slot in), not yet counted nor claimed."""

    job: Job
    run: Run
    message: RunMessage
    exclusive: bool
    starts_at: datetime
    holding: tuple[str, ...] = ()


class _NotClaimed(Exception):
    """A ready run that will not start after all: what became of it."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome)
        self.outcome = outcome


@dataclass(frozen=True)
class Counted:
    """Where a run is counted among its owner's runs in flight: the item and the bucket."""

    key: str
    bucket: str


class RunStarterStore(BackfillStore, FlowStore, JobStore, RunStore, Protocol):
    """What the worker reads and writes to start runs."""


@dataclass
class RunStarter:
    store: RunStarterStore
    executor: Executor
    canceller: Canceller
    clock: Clock
    sleep: Sleep
    #: Where a run its flow holds back is sent again (and a backfill's next run sent).
    queues: Queues
    #: An owner's runs asked for (manual, re-runs, backfills') under way at once.
    asked_in_flight: int = lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT
    #: An owner's runs of every kind under way at once (see chronoq.domain.inflight).
    runs_in_flight: int = lim.DEFAULT_MAX_RUNS_IN_FLIGHT

    @property
    def gate(self) -> FlowGate:
        return FlowGate(self.store, self.clock)

    def start_run(self, message: RunMessage) -> Outcome:
        """Start one run at its second (see ``start_runs``); raises what must send its
        message back to SQS."""
        (result,) = self.start_runs([message])
        if isinstance(result, Exception):
            raise result
        return result

    def start_runs(self, messages: list[RunMessage]) -> list[Outcome | Exception]:
        """Start a batch's runs, each at its scheduled second, unless it must not start.
        Runs reach the worker in the second before they are due. The runs due in the same
        second are decided together (concurrently); those that fit EXPRESS start at once, in
        one execution, which waits for their second (state OnItsSecond: an EXPRESS execution
        waits at half the price of this function); for the others this function waits, then
        starts them. Answers, for each message, what happened, or the error that sends it
        back to SQS (delivered again after the queue's visibility timeout).

        A run already claimed (QUEUED) still starts whatever changed in its job since: the
        claim was the decision."""
        results: list[Outcome | Exception] = ["gone"] * len(messages)
        by_second: dict[datetime, list[int]] = defaultdict(list)
        for i, message in enumerate(messages):
            by_second[utc_second(message.due_at)].append(i)
        for second in sorted(by_second):
            indexes = by_second[second]
            group = [messages[i] for i in indexes]
            # (one consistent read for the jobs of the group; a job that changes under a run
            # is read again on its own)
            try:
                jobs: Mapping[str, Job] | Exception = self.store.get_jobs(
                    {m.job_id for m in group}, consistent=True
                )
                backfills: Mapping[str, Backfill | None] | Exception = self._backfills(group)
            except Exception as error:  # every message of the group goes back to SQS
                jobs = backfills = error
            decide = partial(self._decide, jobs=jobs, backfills=backfills)
            decisions = _concurrently(decide, group)
            admitted = self._through_limit(self._through_flows(decisions))
            together: list[tuple[int, ExecutionInput]] = []
            alone: list[tuple[int, ExecutionInput]] = []
            for i, decision in zip(indexes, admitted, strict=True):
                if not isinstance(decision, ExecutionInput):
                    results[i] = decision
                else:
                    (together if decision.fits_express() else alone).append((i, decision))
            if together:
                try:
                    self.executor.start_batch([d for _, d in together])
                    outcome: Outcome | Exception = "started"
                except Exception as error:  # each message goes back to SQS
                    outcome = error
                    self._give_back([d for _, d in together])
                for i, _ in together:
                    results[i] = outcome
            if alone:
                latest = max(datetime.fromisoformat(d.starts_at) for _, d in alone)
                early = (max(second, latest) - self.clock()).total_seconds()
                if early > 0:
                    self.sleep(min(early, max(r.DISPATCH_LEAD_SECONDS.values()) + 1))
                for i, decision in alone:
                    results[i] = self._start_one(decision)
        return results

    def _start_one(self, execution_input: ExecutionInput) -> Outcome | Exception:
        try:
            started = self.executor.start(execution_input.run_id, execution_input)
        except Exception as error:  # the message goes back to SQS
            self._give_back([execution_input])
            return error
        if not started:  # its execution was started before, and counted then
            self._give_back([execution_input])
        return "started" if started else "duplicate"

    def _backfills(self, group: list[RunMessage]) -> dict[str, Backfill | None]:
        """The backfills of the group's backfill runs, by id (one read each)."""
        wanted = {
            (m.job_id, backfill_id)
            for m in group
            if m.trigger is Trigger.BACKFILL and (backfill_id := ids.backfill_id_of(m.run_id))
        }
        return {b: self.store.get_backfill(job_id, b) for job_id, b in wanted}

    def _decide(
        self,
        message: RunMessage,
        jobs: Mapping[str, Job] | Exception,
        backfills: Mapping[str, Backfill | None] | Exception,
    ) -> Outcome | Ready | Gated | Exception:
        """What to do with one message (``jobs``, ``backfills``: its group's, as read
        together): a run ready to start, a run to take through its flows first, what
        became of it instead, or the error that sends it back."""
        if isinstance(jobs, Exception):
            return jobs
        if isinstance(backfills, Exception):
            return backfills
        backfill_id = ids.backfill_id_of(message.run_id)
        backfill = backfills.get(backfill_id) if backfill_id else None
        try:
            if message.trigger is Trigger.BACKFILL and (
                backfill is None or backfill.state is not BackfillState.RUNNING
            ):
                return self._backfill_over(message)
            for attempt in range(CLAIM_ATTEMPTS):
                job = (
                    jobs.get(message.job_id) if attempt == 0 else self.store.get_job(message.job_id)
                )
                decision = self._try_start(message, job, backfill)
                if decision != "job_changed":
                    return decision
            raise Conflict(
                f"job {message.job_id} kept changing; run {message.run_id} retried later"
            )
        except Exception as error:  # the message goes back to SQS
            return error

    def _try_start(
        self, message: RunMessage, job: Job | None, backfill: Backfill | None = None
    ) -> Outcome | Ready | Gated | Literal["job_changed"]:
        now = self.clock()
        not_started = [RunStatus.SCHEDULED, RunStatus.QUEUED]
        # The run's record is read only where it decides something: for a job that keeps its
        # active runs (the run may be claimed), for a run that goes through flows (a slot is
        # not taken for a run that ran), and for a run that will not start. An `allow` run
        # starts without it: the state machine's first write settles duplicates.
        exclusive = job is not None and job.concurrency is not Concurrency.ALLOW
        gated = job is not None and (
            job.flow is not None or backfill is not None or ids.is_asked(message.run_id)
        )
        kept = (
            self.store.get_run(message.job_id, message.run_id)
            if job is None or exclusive or gated
            else None
        )
        if kept is not None and kept.status not in not_started:
            if backfill is not None and job is not None and kept.started_at is None:
                self._chain(job, backfill, kept.scheduled_at)  # cancelled while it waited
            return "duplicate"
        if job is None:  # deleted: a run that had not started never will
            if kept is not None:
                self.store.end_run(
                    kept, RunStatus.CANCELLED, now, "its job was deleted", not_started
                )
            return "gone"
        # A scheduled run has no record until it starts (the state machine writes it).
        run = kept or new_run(
            job, message.run_id, message.scheduled_at, message.trigger
        ).model_copy(
            update={
                "generation": message.generation,
                "backfill_id": backfill.id if backfill else None,
            }
        )
        claimed = run.status is RunStatus.QUEUED  # by a worker that may have died meanwhile
        if not claimed and not job.is_current(run):
            if kept is not None:
                self.store.delete_pending_run(run.job_id, run.id)
            return "superseded"
        deadline = message.start_deadline_seconds or run.start_deadline_seconds
        if job.is_late(message.starts_at, now, run.trigger, deadline):
            if not exclusive:
                kept = self.store.get_run(message.job_id, message.run_id)
                if kept is not None and kept.status not in not_started:
                    return "duplicate"
            reason = job.missed_reason(run.trigger, deadline)
            self._end(kept, run, RunStatus.MISSED, reason)
            if claimed:
                self.store.release_run(job.id, run.id)
            return "missed"
        if exclusive and not claimed:
            active = self._still_active(job, run)
            if backfill is not None:  # its backfill's own runs: its one slot makes it wait
                active = {a for a in active if ids.backfill_id_of(a) != backfill.id}
            if active and job.concurrency is Concurrency.FORBID:
                reason = f"concurrency forbid: run {sorted(active)[0]} is still active"
                self._end(kept, run, RunStatus.SKIPPED, reason)
                if backfill is not None:
                    self._chain(job, backfill, run.scheduled_at)
                return "skipped"
            if active and job.concurrency is Concurrency.REPLACE:
                reason = f"concurrency replace: replaced by run {run.id}"
                for other in sorted(active):
                    self.canceller.cancel(job.id, other, reason, job)
                return "job_changed"  # read the job again: its active runs are gone now
        if gated:  # its flows first, for all the batch's runs together
            return Gated(job, run, message, exclusive, backfill)
        return Ready(job, run, message, exclusive, message.starts_at)

    def _claim(
        self, job: Job, run: Run, message: RunMessage
    ) -> Outcome | Literal["claimed", "job_changed"]:
        """The job keeps its active runs: claim the run in them first."""
        claim = self.store.claim_run(job, run, message.queued_at, self.clock(), exclusive=True)
        if claim == "held":
            raise ClaimHeld(f"run {run.id} is being started by another worker; ask again later")
        return claim

    def _execution(
        self,
        job: Job,
        run: Run,
        message: RunMessage,
        starts_at: datetime,
        flows: list[str] | None = None,
        counted: Counted | None = None,
    ) -> ExecutionInput:
        return ExecutionInput.of(
            job,
            run.id,
            run.scheduled_at,
            generation=run.generation,
            trigger=run.trigger,
            queued_at=run.queued_at or message.queued_at,
            starts_at=starts_at,
            flows=flows,
            in_flight=(counted.key, counted.bucket) if counted is not None else None,
            parameters=run.parameters,  # (a requested run's, kept on its record; else none:
            # its job's defaults)
            upstream=self._upstream_outputs(job, run) if run.trigger is Trigger.AFTER else None,
        )

    def _upstream_outputs(self, job: Job, run: Run) -> dict[str, str]:
        """For an after job's run whose target names ``{{ upstream.NAME.output }}``: the
        outputs of the upstream runs that made it, by upstream job name: those their records
        keep (not one kept in S3) of at most UPSTREAM_OUTPUT_BYTES; any other is left out, and
        its placeholder fails the run, naming it. Nothing is read for a target that names no
        upstream output (docs/api/secrets.md)."""
        wanted = upstream_outputs_named(job.target)
        if not wanted:
            return {}
        triggered_by = run.triggered_by
        if triggered_by is None:  # (an after run's record is not read to start it otherwise)
            kept = self.store.get_run(job.id, run.id)
            triggered_by = kept.triggered_by if kept is not None else None
        by_job = {ids.job_id_of_run(triggering): triggering for triggering in triggered_by or ()}
        outputs: dict[str, str] = {}
        for job_id, upstream_job in self.store.get_jobs(list(by_job)).items():
            if upstream_job.name not in wanted:
                continue
            upstream_run = self.store.get_run(job_id, by_job[job_id])
            output = upstream_run.output if upstream_run is not None else None
            if output is not None and len(output.encode()) <= lim.UPSTREAM_OUTPUT_BYTES:
                outputs[upstream_job.name] = output
        return outputs

    # --- flows ------------------------------------------------------------------------------

    def _through_flows(
        self, decisions: list[Outcome | Ready | Gated | Exception]
    ) -> list[Outcome | Ready | Exception]:
        """The group's runs that go through flows, asked together: each admitted one's
        execution (claimed first if its job keeps its active runs), or, for one that must
        wait, its message sent again (to look again, or for the second reserved for it)."""
        # Two deliveries of a run in the batch: one is asked, the other is a duplicate. The
        # one asked is not a wake, if either is: parked again, a run keeps its look-again.
        asked: dict[str, tuple[int, Gated]] = {}
        for n, decision in enumerate(decisions):
            if isinstance(decision, Gated):
                first = asked.get(decision.run.id)
                if first is None or (first[1].message.woken and not decision.message.woken):
                    asked[decision.run.id] = (n, decision)
        gated = [g for _, g in sorted(asked.values(), key=lambda pair: pair[0])]
        twice = {
            n
            for n, decision in enumerate(decisions)
            if isinstance(decision, Gated) and asked[decision.run.id][0] != n
        }
        answers = (
            self.gate.admit(
                [
                    Ask(
                        g.run.id,
                        flows_of(g.job, g.backfill, ids.is_asked(g.run.id), self.asked_in_flight),
                        max(g.message.starts_at, self.clock()),
                        g.message.not_before if g.message.reserved else None,
                    )
                    for g in gated
                ]
            )
            if gated
            else {}
        )
        resend: list[tuple[int, Priority, RunMessage]] = []
        out: list[Outcome | Ready | Exception] = []
        for n, decision in enumerate(decisions):
            if not isinstance(decision, Gated):
                out.append(decision)
                continue
            if n in twice:
                out.append("duplicate")
                continue
            answer = answers[decision.run.id]
            try:
                if isinstance(answer, Exception):
                    raise answer
                admitted: Outcome | Ready | RunMessage = self._admitted(decision, answer)
                if isinstance(admitted, RunMessage):
                    resend.append((n, decision.job.priority, admitted))
                    admitted = "held"
                out.append(admitted)
            except Exception as error:  # the message goes back to SQS
                out.append(error)
        unsent = self._send_again(resend)
        if unsent is not None:  # not sent again: the message itself comes back
            for n, _, _ in resend:
                out[n] = unsent
        return out

    def _admitted(self, gated: Gated, answer: Answer) -> Outcome | Ready | RunMessage:
        """What a run's flows answered becomes: a run ready to start (if its owner's runs in
        flight leave it room); for a run that waits, its wait recorded and its message to
        send again (to look again, or at the second reserved for it), or, for a woken run
        parked again, nothing more ("parked": its look-again message is on the queue)."""
        job, run, message = gated.job, gated.run, gated.message
        now = self.clock()
        if gated.backfill is not None and answer.start is not None:
            # it starts: the backfill's run max_in_flight fire times later may be made
            self._chain(job, gated.backfill, run.scheduled_at)
        ahead = timedelta(seconds=lim.FLOW_START_AHEAD_SECONDS)
        held_at = message.held_at or max(message.starts_at, now)
        flow_fields = {"held_at": held_at, "owner": job.owner, "woken": False}
        if answer.start is None and answer.held_by is not None:
            # no slot: parked until a run of the flow gives one back (its end wakes it)
            why = _slot_reason(job, gated.backfill, answer.held_by, self.asked_in_flight)
            if not self.store.park_run(run, held_at, answer.held_by, why, now):
                return "duplicate"  # started or ended meanwhile
            if message.woken:  # woken too early: its look-again message is under way
                return "parked"
            return message.model_copy(
                update={**flow_fields, "not_before": _relook(job, message, now), "reserved": False}
            )
        if answer.start is None or answer.start > utc_second(now) + ahead:
            if message.held_at is None:
                why = (
                    f"its flow's rate: starts at its second, {format_instant(answer.start)}"
                    if answer.start is not None
                    else "its flow's item, busy with other workers: it looks again shortly"
                )
                self.store.hold_run(run, held_at, why, now)
            if answer.start is None:  # lost races on its flow's item: look again shortly
                after = now + timedelta(seconds=lim.FLOW_RETRY_SECONDS)
                return message.model_copy(
                    update={**flow_fields, "not_before": after, "reserved": False}
                )
            return message.model_copy(  # its second is reserved: wait for it on the queue
                update={**flow_fields, "not_before": answer.start, "reserved": True}
            )
        return Ready(job, run, message, gated.exclusive, answer.start, tuple(answer.holding))

    # --- runs in flight ---------------------------------------------------------------------

    def _through_limit(
        self, decisions: list[Outcome | Ready | Exception]
    ) -> list[Outcome | ExecutionInput | Exception]:
        """The group's runs ready to start, counted among their owners' runs in flight
        (one write per owner): each counted one's execution (claimed first if its job keeps
        its active runs); one over its owner's ``runs_in_flight`` gives its flow slots back
        and is parked until one of them ends (its message sent again to look again later)."""
        by_owner: dict[str, list[tuple[int, Ready]]] = defaultdict(list)
        for n, decision in enumerate(decisions):
            if isinstance(decision, Ready):
                by_owner[decision.job.owner].append((n, decision))
        counted: dict[int, Counted | Exception | None] = {}
        for owner, ready in by_owner.items():
            # a claimed run (its worker died before starting it: it was decided already)
            # first, counted whatever the limit; then highest priority first, as they came
            ready.sort(key=_count_order)
            try:
                counted.update(self._count(owner, ready))
            except Exception as error:  # these messages come back later
                counted.update(dict.fromkeys((n for n, _ in ready), error))
        resend: list[tuple[int, Priority, RunMessage]] = []
        out: list[Outcome | ExecutionInput | Exception] = []
        for n, decision in enumerate(decisions):
            if not isinstance(decision, Ready):
                out.append(decision)
                continue
            place = counted[n]
            try:
                if isinstance(place, Exception):
                    raise place
                if place is None:
                    waiting = self._over_limit(decision)
                    if isinstance(waiting, RunMessage):
                        resend.append((n, decision.job.priority, waiting))
                        waiting = "held"
                    out.append(waiting)
                else:
                    out.append(self._ready(decision, place))
            except Exception as error:  # the message goes back to SQS
                out.append(error)
        unsent = self._send_again(resend)
        if unsent is not None:  # not sent again: the message itself comes back
            for n, _, _ in resend:
                out[n] = unsent
        return out

    def _send_again(self, resend: list[tuple[int, Priority, RunMessage]]) -> Exception | None:
        """Send the messages of runs that wait again (the error if they could not be)."""
        if resend:
            try:
                self.queues.send(((p, m) for _, p, m in resend), self.clock())
            except Exception as error:
                return error
        return None

    def _count(self, owner: str, ready: list[tuple[int, Ready]]) -> dict[int, Counted | None]:
        """Count as many of ``ready`` (in order) as the owner's runs in flight leave room
        for: one conditional write; if they do not all fit, one read (expired buckets taken
        out) and a write of those that do. Each one's place (None: it waits)."""
        key = inflight.item_key(owner)
        now = self.clock()
        buckets = [
            inflight.end_bucket(
                now,
                worst_case_seconds(d.job.retry, d.job.timeout_seconds)
                + max(0.0, (d.starts_at - now).total_seconds()),
            )
            for _, d in ready
        ]
        claimed = sum(1 for _, d in ready if d.run.status is RunStatus.QUEUED)
        fit = len(ready)
        for _ in range(SAVE_ATTEMPTS):
            if fit == 0:
                break
            # (runs claimed before are counted whatever the limit: they are first)
            limit = max(self.runs_in_flight, 0) if fit > claimed else 1 << 62
            taken = self.store.take_in_flight(key, inflight.grouped(buckets[:fit]), limit, now)
            if taken is not None:
                self._heal(key, taken)
                break
            kept = self.store.get_in_flight(key)
            self._heal(key, kept)
            fit = max(claimed, inflight.admitted(len(ready), kept.live(now), self.runs_in_flight))
        else:
            fit = 0
        return {
            n: Counted(key, bucket) if i < fit else None
            for i, ((n, _), bucket) in enumerate(zip(ready, buckets, strict=True))
        }

    def _heal(self, key: str, count: inflight.InFlight) -> None:
        expired = count.expired(self.clock())
        if expired:
            self.store.heal_in_flight(key, expired)

    def _over_limit(self, ready: Ready) -> Outcome | RunMessage:
        """A run its owner's runs in flight leave no room for: its flow slots given back,
        parked until one of them ends, and its message to send again to look again later
        (a woken run parked again: "parked", its look-again message is on the queue)."""
        job, run, message = ready.job, ready.run, ready.message
        now = self.clock()
        self.gate.release(ready.holding, run.id)
        held_at = message.held_at or max(message.starts_at, now)
        why = f"one of its owner's {self.runs_in_flight} runs in flight (started, not ended) to end"
        key = inflight.item_key(job.owner)
        if not self.store.park_run(run, held_at, key, why, now):
            return "duplicate"  # started or ended meanwhile
        self.store.mark_in_flight_parked(key, now)  # (the ends look for parked runs)
        if message.woken:
            return "parked"
        return message.model_copy(
            update={
                "held_at": held_at,
                "owner": job.owner,
                "woken": False,
                "not_before": _relook(job, message, now),
                "reserved": False,
            }
        )

    def _ready(self, ready: Ready, counted: Counted) -> Outcome | ExecutionInput:
        """A counted run's execution, claimed first for a job that keeps its active runs
        (a claim refused gives back its count and its flow slots)."""
        try:
            for _ in range(CLAIM_ATTEMPTS):
                if not ready.exclusive:
                    break
                claim = self._claim(ready.job, ready.run, ready.message)
                if claim == "claimed":
                    break
                if claim != "job_changed":
                    raise _NotClaimed(claim)
                if ready.holding:  # (its flows decided on the job as it was)
                    raise Conflict(f"job {ready.job.id} changed while run {ready.run.id} started")
                # decide afresh on the job as it is now (the run keeps its count meanwhile)
                decision = self._decide_again(ready.message)
                if isinstance(decision, Gated):
                    raise Conflict(f"job {ready.job.id} changed: run {ready.run.id} retried")
                if not isinstance(decision, Ready):
                    raise _NotClaimed(decision)
                ready = decision
            else:
                raise Conflict(
                    f"job {ready.job.id} kept changing; run {ready.run.id} retried later"
                )
        except _NotClaimed as not_claimed:
            self._give(counted)
            self.gate.release(ready.holding, ready.run.id)
            return not_claimed.outcome
        except Exception:
            self._give(counted)
            self.gate.release(ready.holding, ready.run.id)
            raise
        return self._execution(
            ready.job,
            ready.run,
            ready.message,
            ready.starts_at,
            list(ready.holding) or None,
            counted,
        )

    def _decide_again(self, message: RunMessage) -> Outcome | Ready | Gated:
        """What to do with a run whose job changed under its claim, on the job as it is."""
        for _ in range(CLAIM_ATTEMPTS):
            decision = self._try_start(message, self.store.get_job(message.job_id))
            if decision != "job_changed":
                return decision
        raise Conflict(f"job {message.job_id} kept changing; run {message.run_id} retried later")

    def _give(self, counted: Counted) -> None:
        self.store.give_in_flight(counted.key, {counted.bucket: 1})

    def _give_back(self, executions: list[ExecutionInput]) -> None:
        """Give back the counts of runs whose executions did not start (best effort: a count
        not given back lasts until its bucket expires)."""
        by_key: dict[str, list[str]] = defaultdict(list)
        for execution in executions:
            if execution.in_flight:
                by_key[execution.in_flight].append(execution.in_flight_bucket)
        for key, buckets in by_key.items():
            try:
                self.store.give_in_flight(key, inflight.grouped(buckets))
            except Exception:  # noqa: S112 - it heals when its bucket expires
                continue

    def _chain(self, job: Job, backfill: Backfill, fire: datetime) -> None:
        """Make the backfill's run ``max_in_flight`` fire times after ``fire``, and send it
        (if made already, nothing: its id is the backfill's and the fire time's)."""
        later = backfill.later(fire, backfill.max_in_flight)
        if later is None:
            return
        now = self.clock()
        run = new_run(job, ids.backfill_run_id(job.id, later, backfill.id), later, Trigger.BACKFILL)
        run = run.model_copy(
            update={
                "queued_at": now,
                "backfill_id": backfill.id,
                "start_deadline_seconds": backfill.start_deadline_seconds,
                "cascade": backfill.cascade,  # (completion triggers)
                "parameters": backfill.parameters,
            }
        )
        if not self.store.create_run(run, now):
            return
        try:
            self.queues.send([(run.priority, RunMessage.of(run, run.scheduled_at))], now)
        except Exception:  # not sent: not made either (the next look makes it again)
            self.store.delete_pending_run(run.job_id, run.id)
            raise

    def _backfill_over(self, message: RunMessage) -> Outcome:
        """A backfill run whose backfill was cancelled (or is gone) never starts."""
        kept = self.store.get_run(message.job_id, message.run_id)
        if kept is None or kept.status not in (RunStatus.SCHEDULED, RunStatus.QUEUED):
            return "duplicate"
        reason = "its backfill was cancelled"
        not_started = [RunStatus.SCHEDULED, RunStatus.QUEUED]
        self.store.end_run(kept, RunStatus.CANCELLED, self.clock(), reason, not_started)
        return "cancelled"

    def _end(self, kept: Run | None, run: Run, status: RunStatus, reason: str) -> None:
        end_unstarted(self.store, kept, run, status, reason, self.clock())

    def _still_active(self, job: Job, run: Run) -> set[str]:
        """The job's other active runs, after forgetting those that have in fact ended, and
        ending those that never will: claimed, never started, and past their start deadline
        (their worker died and SQS gave up on their message)."""
        active = set()
        now = self.clock()
        for other in job.active_runs - {run.id}:
            found = self.store.get_run(job.id, other)
            if (
                found is not None
                and found.status is RunStatus.QUEUED
                and job.is_late(found.starts_at, now, found.trigger, found.start_deadline_seconds)
            ):
                reason = job.missed_reason(found.trigger, found.start_deadline_seconds)
                self.store.end_run(found, RunStatus.MISSED, now, reason, [RunStatus.QUEUED])
                found = self.store.get_run(job.id, other)
            if found is None or found.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
                self.store.release_run(job.id, other)
            else:
                active.add(other)
        return active


_PRIORITY_ORDER = {p: i for i, p in enumerate(Priority)}


def _relook(job: Job, message: RunMessage, now: datetime) -> datetime:
    """When a parked run looks again by itself, in case its wake is lost: after
    FLOW_RELOOK_SECONDS, or at its start deadline if sooner."""
    deadline = message.starts_at + timedelta(
        seconds=job.deadline_of(message.trigger, message.start_deadline_seconds) + 1
    )
    return min(now + timedelta(seconds=lim.FLOW_RELOOK_SECONDS), max(deadline, now))


def _count_order(item: tuple[int, Ready]) -> tuple[bool, int, int]:
    n, ready = item
    return (ready.run.status is not RunStatus.QUEUED, _PRIORITY_ORDER[ready.job.priority], n)


def _slot_reason(job: Job, backfill: Backfill | None, key: str, asked_in_flight: int) -> str:
    """Why a run parked on flow item ``key`` waits (said to its owner)."""
    if key == flow.owner_item_key(job.owner):
        return (
            f"one of its owner's {asked_in_flight} runs asked for (manual, re-runs,"
            " backfills) under way at once to end"
        )
    if backfill is not None and key == flow.backfill_item_key(job.owner, backfill.id):
        return (
            f"a slot of its backfill {backfill.id} "
            f"(max_in_flight {backfill.max_in_flight} runs under way)"
        )
    limit = job.flow.max_running if job.flow is not None else None
    name = job.flow.key if job.flow is not None else key
    return f"a slot of its flow '{name}' (max_running {limit} runs under way)"


T = TypeVar("T")
R = TypeVar("R")


def _concurrently(work: Callable[[T], R], items: list[T]) -> list[R]:
    """``work`` on each item, in threads (each in a copy of this context), in order."""
    if len(items) == 1:
        return [work(items[0])]
    contexts = [contextvars.copy_context() for _ in items]
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(
            pool.map(lambda pair: pair[0].run(work, pair[1]), zip(contexts, items, strict=True))
        )
