"""No owner can slow another on chronoq local's run queues: a Hypothesis state machine sends
bursts of runs of several owners (manual triggers, backfills and re-runs due at once, a flow's
held runs coming back later, windowed runs spread over seconds, the system's heartbeat) to the
three priority queues through the real SQS adapter (chronoq.aws.queues: each run in its
owner's message group), over the real engine queues (chronoq.local.engine.queues, in memory,
set up as chronoq local sets them up, on a fake clock); receives of every size take them, as
do chronoq local's own pollers (chronoq.local.drivers.queue_pollers), and some workers die
without settling what they took. After every receive:

- work-conserving: a receive gets as many runs as it asks for while runs are visible (an owner
  alone gets every one);
- the heartbeat's group (``chronoq:system``) comes first whenever it has a run visible;
- within a receive the owners' shares differ by one at most (an owner short of its share has
  no run left to give);
- starts go round robin: while an owner has a run visible, no other owner starts twice before
  it does, whatever the other's backlog or its priority: so an owner waits at most one start
  of each other owner with runs on that queue;
- each owner's runs come in the order they became visible (the queues serve the longest
  visible first within a group);
- a round of the pollers (every poller polling once, in any order) starts a run of every
  owner that had one visible on any queue: one queue's backlog never holds up another's, so
  priority orders only an owner's own runs.

What the queues count (visible, in flight, delayed) is checked against the model after every
step, so the model the properties read is the queues' own state.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from chronoq import resources as r
from chronoq.aws.queues import SqsQueues, message_group
from chronoq.domain.runs import Priority, RunMessage, Trigger
from chronoq.local.drivers import SQS_MAX_MESSAGES, QueuePoller, queue_pollers
from chronoq.local.engine.queues import SqliteQueues
from chronoq.usecases.delays import message_delay
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

#: Owners of runs: two whose groups sort before the heartbeat's, two after (one of them an
#: owner SQS refuses as a group id: its group is a digest).
OWNERS = ("alice", "bob", "dave", "zoë smith")
SYSTEM = message_group(r.SYSTEM_OWNER)
#: How long a run a worker took and did not settle stays invisible (the queues' setting).
VISIBILITY_MS = r.QUEUES[0].visibility_timeout_seconds * 1000
#: Receives whose worker dies, at most, in one story: a run is then received at most this
#: many times plus once, under the queues' maxReceiveCount (no run reaches the dead letters).
MAX_DEATHS = r.QUEUES[0].max_receive_count - 1
#: Pollers per queue (chronoq local starts several per queue).
PER_QUEUE = 2
#: Kinds of burst: what sends the runs, and when each becomes visible.
KINDS = ("trigger", "backfill", "rerun", "held", "woken", "scheduled")


class FakeClock:
    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at


def millis(instant: datetime) -> int:
    return round(instant.timestamp() * 1000)


@dataclass
class Sent:
    """A run's message as the model knows it."""

    run_id: str
    owner: str
    group: str
    priority: str
    #: Sent in this order (the queues' tie-break between runs visible at the same instant).
    order: int
    visible_at: int
    receives: int = 0


def run_messages(
    owner: str, kind: str, count: int, spread: int, now: datetime, first: int
) -> list[RunMessage]:
    """``count`` runs of ``owner`` as ``kind`` sends them (``spread``: over how many seconds
    those sent for later become visible)."""
    messages = []
    for n in range(count):
        later = timedelta(seconds=n % (spread + 1))
        job, run_id = f"job{owner.split()[0]}{kind}", f"run{first + n}"
        fields: dict[str, Any] = {
            "job_id": job,
            "run_id": f"{job}_{run_id}",
            "scheduled_at": now,
            "queued_at": now,
            "owner": owner,
            "trigger": Trigger.MANUAL,
        }
        if kind in ("backfill", "rerun"):  # past fire times, started when asked for
            fields |= {
                "scheduled_at": now - timedelta(minutes=n + 1),
                "trigger": Trigger.BACKFILL if kind == "backfill" else Trigger.RERUN,
                "start_deadline_seconds": 3600,
            }
        elif kind == "held":  # held back by its flow: looks again later
            fields |= {"held_at": now - timedelta(seconds=1), "not_before": now + later}
        elif kind == "woken":  # a slot of its flow given back: it comes at once
            fields |= {"held_at": now - timedelta(seconds=30), "woken": True}
        elif kind == "scheduled":  # an occurrence of a windowed schedule, planned ahead
            fields |= {
                "run_id": f"{job}_{run_id}-w{later.seconds}",
                "scheduled_at": now + timedelta(seconds=spread),
                "trigger": Trigger.SCHEDULE,
            }
        messages.append(RunMessage(**fields))
    return messages


class FairShare(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.sqs = SqliteQueues(None, self.clock.now, first_groups=frozenset({SYSTEM}))
        # (the queues as chronoq local makes them: chronoq.local.aws)
        dead = self.sqs.create_queue(QueueName="runs-dead-letter")["QueueUrl"]
        dead_arn = self.sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])
        self.urls: dict[str, str] = {}
        for queue in r.QUEUES:
            self.urls[queue.priority] = self.sqs.create_queue(
                QueueName=f"runs-{queue.priority}",
                Attributes={
                    "VisibilityTimeout": str(queue.visibility_timeout_seconds),
                    "RedrivePolicy": json.dumps(
                        {
                            "deadLetterTargetArn": dead_arn["Attributes"]["QueueArn"],
                            "maxReceiveCount": queue.max_receive_count,
                        }
                    ),
                },
            )["QueueUrl"]
        self.priority_of = {
            self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]: priority
            for priority, url in self.urls.items()
        }
        self.adapter = SqsQueues(cast(Any, self.sqs), self.urls)  # (the SQS calls it makes)
        # A poller halted before it polls hands over the batch of its first receive at once
        # instead of waiting for its batching window to fill it.
        halted = threading.Event()
        halted.set()
        self.pollers: list[QueuePoller] = queue_pollers(
            self.sqs, list(self.urls.values()), self._worker, halted, PER_QUEUE
        )
        #: The runs the pollers handed the worker in the current round.
        self.started: list[Sent] = []
        self.worker_dies = False
        #: A promise the worker found broken in a poller's batch.
        self.broken: AssertionError | None = None
        self.sent: dict[str, Sent] = {}
        #: Runs sent so far (each run's id and send order).
        self.count = 0
        self.deaths = 0
        #: Per queue, per owner with a run visible since it last started one: how many times
        #: each other owner started since.
        self.waiting: dict[str, dict[str, Counter[str]]] = {p: {} for p in self.urls}
        #: Per queue: its last receive ended on the heartbeat's group (see
        #: test_given_the_heartbeat_served_last_in_a_receive_...: the turn after it starts
        #: at the group after the heartbeat's by name, so round robin is checked afresh).
        self.after_system: dict[str, bool] = dict.fromkeys(self.urls, False)

    def teardown(self) -> None:
        self.sqs.close()

    # --- the model ---

    def now_ms(self) -> int:
        return millis(self.clock.now())

    def visible(self, priority: str) -> dict[str, list[Sent]]:
        """Each group's visible runs on the priority's queue, in the order it serves them."""
        now = self.now_ms()
        ready: dict[str, list[Sent]] = {}
        for sent in sorted(self.sent.values(), key=lambda s: (s.visible_at, s.order)):
            if sent.priority == priority and sent.visible_at <= now:
                ready.setdefault(sent.group, []).append(sent)
        return ready

    def check_batch(self, priority: str, limit: int, messages: list[dict[str, Any]]) -> list[Sent]:
        """The promises of one receive of up to ``limit`` runs from the priority's queue,
        checked against what was visible just before it; the runs it took."""
        ready = self.visible(priority)
        taken = []
        for message in messages:
            run_id = json.loads(message["Body"])["run_id"]
            sent = self.sent[run_id]
            assert message["Attributes"]["MessageGroupId"] == sent.group
            assert sent in ready.get(sent.group, []), f"{run_id} was not visible"
            taken.append(sent)
        visible_runs = sum(len(runs) for runs in ready.values())
        # Work-conserving: as many as asked for while there are runs.
        assert len(taken) == min(limit, visible_runs), (len(taken), limit, visible_runs)
        # The heartbeat first.
        if SYSTEM in ready:
            assert taken[0].group == SYSTEM, [s.group for s in taken]
        # Shares within the receive differ by one at most, but for a group with none left.
        share = Counter(s.group for s in taken)
        for group, runs in ready.items():
            for other in ready:
                assert share[other] <= share[group] + 1 or share[group] == len(runs), (
                    f"{other} took {share[other]}, {group} {share[group]} of {len(runs)}"
                )
        # Each group's runs in the order they became visible.
        for group, runs in ready.items():
            assert [s for s in taken if s.group == group] == runs[: share[group]]
        self.check_turns(priority, ready, taken)
        return taken

    def check_turns(self, priority: str, ready: dict[str, list[Sent]], taken: list[Sent]) -> None:
        """Round robin: no owner starts twice while another waits with a run visible."""
        waiting = self.waiting[priority]
        if self.after_system[priority]:
            waiting.clear()
        for group in list(waiting):
            if group not in ready:
                del waiting[group]
        for group in ready:
            if group != SYSTEM:
                waiting.setdefault(group, Counter())
        left = Counter({g: len(runs) for g, runs in ready.items()})
        for sent in taken:
            left[sent.group] -= 1
            if sent.group == SYSTEM:
                continue
            for group, passed in waiting.items():
                if group != sent.group:
                    passed[sent.group] += 1
                    assert passed[sent.group] <= 1, (
                        f"{sent.group} started twice on {priority} while {group} waited"
                    )
            waiting.pop(sent.group, None)
            if left[sent.group]:
                waiting[sent.group] = Counter()
        if taken:
            self.after_system[priority] = taken[-1].group == SYSTEM

    def settle(self, taken: list[Sent], settled: bool) -> None:
        """The worker settled the runs (deleted) or died (they come back after the queue's
        visibility timeout)."""
        for sent in taken:
            if settled:
                del self.sent[sent.run_id]
            else:
                sent.receives += 1
                sent.visible_at = self.now_ms() + VISIBILITY_MS

    def _worker(self, event: dict[str, Any]) -> dict[str, Any]:
        """The worker a poller hands a batch to: its promises checked; it dies (reports every
        run failed) if the story says so."""
        records = event["Records"]
        (arn,) = {record["eventSourceARN"] for record in records}
        messages = [{"Body": rec["body"], "Attributes": rec["attributes"]} for rec in records]
        try:  # (the poller takes a worker's exception for a failed batch: kept for the rule)
            # (a poller halted hands over its first receive: the most one receive takes)
            taken = self.check_batch(self.priority_of[arn], SQS_MAX_MESSAGES, messages)
        except AssertionError as broken:
            self.broken = broken
            raise
        self.settle(taken, not self.worker_dies)
        self.started.extend(taken)
        if self.worker_dies:
            return {"batchItemFailures": [{"itemIdentifier": rec["messageId"]} for rec in records]}
        return {}

    # --- the story ---

    @rule(
        owner=st.sampled_from(OWNERS),
        priority=st.sampled_from(r.PRIORITIES),
        kind=st.sampled_from(KINDS),
        count=st.one_of(st.integers(1, 3), st.integers(20, 150)),
        spread=st.integers(0, 90),
    )
    def burst(self, owner: str, priority: str, kind: str, count: int, spread: int) -> None:
        now = self.clock.now()
        self._send(priority, run_messages(owner, kind, count, spread, now, self.count))

    @rule(
        owner=st.sampled_from(OWNERS),
        priority=st.sampled_from(r.PRIORITIES),
        kind=st.sampled_from(KINDS),
        backlog=st.integers(50, 300),
        others=st.lists(
            st.tuples(
                st.sampled_from(OWNERS), st.sampled_from(r.PRIORITIES), st.sampled_from(KINDS)
            ),
            min_size=1,
            max_size=4,
        ),
    )
    def flood(
        self,
        owner: str,
        priority: str,
        kind: str,
        backlog: int,
        others: list[tuple[str, str, str]],
    ) -> None:
        """One owner's backlog on a queue; then a run or two of others, on that queue or
        another (sent last: the worst case for a queue serving the oldest first)."""
        now = self.clock.now()
        self._send(priority, run_messages(owner, kind, backlog, 0, now, self.count))
        for other, other_priority, other_kind in others:
            due = run_messages(other, other_kind, 2, 1, now, self.count)
            self._send(other_priority, due)

    @rule(delay=st.integers(0, 3))
    def heartbeat(self, delay: int) -> None:
        """The system's heartbeat (one run a minute, normal priority)."""
        now = self.clock.now()
        at = now + timedelta(seconds=delay)
        message = RunMessage(
            job_id="heartbeat",
            run_id=f"heartbeat_run{self.count}",
            scheduled_at=at,
            queued_at=now,
            owner=r.SYSTEM_OWNER,
        )
        self._send(Priority.NORMAL.value, [message])

    def _send(self, priority: str, messages: list[RunMessage]) -> None:
        now = self.clock.now()
        self.adapter.send([(Priority(priority), m) for m in messages], now)
        for message in messages:
            delay = message_delay(message, now, Priority(priority))
            self.sent[message.run_id] = Sent(
                message.run_id,
                message.owner,
                message_group(message.owner),
                priority,
                self.count,
                millis(now) + delay * 1000,
            )
            self.count += 1

    @rule(seconds=st.one_of(st.integers(1, 5), st.integers(30, 200)))
    def time_passes(self, seconds: int) -> None:
        self.clock.at += timedelta(seconds=seconds)

    @rule(
        priority=st.sampled_from(r.PRIORITIES),
        limit=st.integers(1, 10),
        dies=st.booleans(),
    )
    def receive(self, priority: str, limit: int, dies: bool) -> None:
        """A consumer's receive; its worker settles what it took, or dies."""
        dies = dies and self.deaths < MAX_DEATHS
        answer = self.sqs.receive_message(
            QueueUrl=self.urls[priority], MaxNumberOfMessages=limit, AttributeNames=["All"]
        )
        messages = answer.get("Messages", [])
        taken = self.check_batch(priority, limit, messages)
        self.settle(taken, not dies)
        if dies and taken:
            self.deaths += 1
        for message in messages if not dies else []:
            self.sqs.delete_message(
                QueueUrl=self.urls[priority], ReceiptHandle=message["ReceiptHandle"]
            )

    @rule(order=st.permutations(range(len(r.PRIORITIES) * PER_QUEUE)), dies=st.booleans())
    def pollers_poll(self, order: list[int], dies: bool) -> None:
        """Every poller of chronoq local polls once, in any order (as its threads would):
        every owner with a run visible on any queue starts one."""
        self.worker_dies = dies and self.deaths < MAX_DEATHS
        waiting = {(p, g) for p in self.urls for g in self.visible(p)}
        self.started = []
        for index in order:
            self.pollers[index].poll_once()
            if self.broken is not None:
                raise self.broken
        started = {(s.priority, s.group) for s in self.started}
        assert waiting <= started, f"not started in a round of the pollers: {waiting - started}"
        if self.worker_dies and self.started:
            self.deaths += 1
        self.worker_dies = False

    # --- what the queues say of themselves ---

    @invariant()
    def queues_agree_with_the_model(self) -> None:
        now = self.now_ms()
        for priority, url in self.urls.items():
            attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])[
                "Attributes"
            ]
            runs = [s for s in self.sent.values() if s.priority == priority]
            visible = sum(1 for s in runs if s.visible_at <= now)
            in_flight = sum(1 for s in runs if s.visible_at > now and s.receives)
            delayed = sum(1 for s in runs if s.visible_at > now and not s.receives)
            assert (
                int(attributes["ApproximateNumberOfMessages"]),
                int(attributes["ApproximateNumberOfMessagesNotVisible"]),
                int(attributes["ApproximateNumberOfMessagesDelayed"]),
            ) == (visible, in_flight, delayed), priority


FairShare.TestCase.settings = settings(
    derandomize=not os.environ.get("CHRONOQ_PROPERTY_EXPLORE"),
    max_examples=int(os.environ.get("CHRONOQ_PROPERTY_EXAMPLES", "60")),
    stateful_step_count=int(os.environ.get("CHRONOQ_PROPERTY_STEPS", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
    phases=[p for p in Phase if p is not Phase.shrink or not os.environ.get("CHRONOQ_NO_SHRINK")],
)
TestFairShare = FairShare.TestCase


# --- where the round robin slips (found by the state machine above) ----------------------------


def _receive_one(sqs: SqliteQueues, url: str) -> list[str]:
    """One receive of one message, settled: its body."""
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return [m["Body"] for m in messages]


def _send(sqs: SqliteQueues, url: str, group: str | None, *bodies: str) -> None:
    for body in bodies:
        sqs.send_message(
            QueueUrl=url, MessageBody=body, **({"MessageGroupId": group} if group else {})
        )


def test_given_the_heartbeat_served_last_in_a_receive_when_owners_wait_then_the_owner_next_in_turn_is_not_skipped() -> (
    None
):
    clock = FakeClock()
    sqs = SqliteQueues(None, clock.now, first_groups=frozenset({SYSTEM}))
    url = sqs.create_queue(QueueName="runs")["QueueUrl"]
    _send(sqs, url, "alice", "a0", "a1")
    _send(sqs, url, "bob", "b0")
    _send(sqs, url, "dave", "d0")
    assert _receive_one(sqs, url) == ["a0"]  # bob is next
    _send(sqs, url, SYSTEM, "heartbeat")

    served = [_receive_one(sqs, url) for _ in range(4)]

    sqs.close()
    # (as it is: heartbeat, d0, a1, b0: alice starts twice while bob waits)
    assert served == [["heartbeat"], ["b0"], ["d0"], ["a1"]]


def test_given_runs_sent_without_a_group_when_received_one_at_a_time_then_an_owner_still_takes_its_turn() -> (
    None
):
    clock = FakeClock()
    sqs = SqliteQueues(None, clock.now)
    url = sqs.create_queue(QueueName="runs")["QueueUrl"]
    _send(sqs, url, None, "n0", "n1", "n2")
    _send(sqs, url, "alice", "a0")

    served = [_receive_one(sqs, url) for _ in range(2)]

    sqs.close()
    # (as it is: n0, n1)
    assert served == [["n0"], ["a0"]]
