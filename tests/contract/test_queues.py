"""The Queues contract: one queue per priority, each message held back until shortly before
it is due; on the fakes and on SQS."""

from __future__ import annotations

from datetime import timedelta

from chronoq import resources as r
from chronoq.domain.runs import Priority, RunMessage

from tests.contract.backends import NOW, Backend, a_job, a_message


def by_run(messages: list[RunMessage]) -> list[RunMessage]:
    """Messages in a comparable order (a standard SQS queue keeps none)."""
    return sorted(messages, key=lambda m: m.run_id)


def test_given_messages_when_sent_then_the_count_of_them(backend: Backend) -> None:
    normal = [a_message(a_job(), NOW) for _ in range(12)]
    high = [a_message(a_job(), NOW) for _ in range(3)]

    sent = backend.queues.send(
        [*((Priority.NORMAL, m) for m in normal), *((Priority.HIGH, m) for m in high)], NOW
    )

    assert sent == 15
    assert by_run(backend.receivable(Priority.NORMAL)) == by_run(normal)
    assert by_run(backend.receivable(Priority.HIGH)) == by_run(high)


def test_given_no_messages_when_sent_then_none(backend: Backend) -> None:
    assert backend.queues.send([], NOW) == 0

    assert all(backend.receivable(p) == [] for p in Priority)


def test_given_messages_of_each_priority_when_sent_then_each_on_its_priority_queue(
    backend: Backend,
) -> None:
    messages = {p: a_message(a_job(), NOW) for p in Priority}

    backend.queues.send([(p, messages[p]) for p in reversed(Priority)], NOW)

    assert {p: backend.receivable(p) for p in Priority} == {p: [messages[p]] for p in Priority}


def test_given_a_message_when_sent_then_received_as_it_was_sent(backend: Backend) -> None:
    job = a_job()
    message = RunMessage(
        job_id=job.id,
        run_id=f"{job.id}_20261126T115959Z-mabc123",
        scheduled_at=NOW - timedelta(seconds=1),
        queued_at=NOW + timedelta(milliseconds=250),
    )

    backend.queues.send([(Priority.LOW, message)], NOW)

    assert backend.receivable(Priority.LOW) == [message]


def test_given_messages_of_two_owners_when_sent_then_each_is_in_its_owners_group(
    backend: Backend,
) -> None:
    alice = [a_message(a_job(), NOW).model_copy(update={"owner": "alice"}) for _ in range(3)]
    bob = [a_message(a_job(), NOW).model_copy(update={"owner": "bob"}) for _ in range(2)]

    backend.queues.send([(Priority.NORMAL, m) for m in (*alice, *bob)], NOW)

    received = backend.receivable(Priority.NORMAL)
    assert {m.run_id: m.owner for m in received} == {
        **{m.run_id: "alice" for m in alice},
        **{m.run_id: "bob" for m in bob},
    }


def test_given_a_message_due_far_ahead_when_sent_then_held_back_unlike_one_due_now(
    backend: Backend,
) -> None:
    due_now = a_message(a_job(), NOW)
    # (SQS delays are whole seconds: a run due within the lead and the second is sent at once)
    due_within_the_lead = a_message(
        a_job(), NOW + timedelta(seconds=r.DISPATCH_LEAD_SECONDS["normal"], milliseconds=800)
    )
    due_later = a_message(a_job(), NOW + timedelta(minutes=10))
    due_past_the_maximum = a_message(a_job(), NOW + timedelta(seconds=r.MAX_DELAY_SECONDS + 3600))

    sent = backend.queues.send(
        [
            (Priority.NORMAL, m)
            for m in (due_later, due_now, due_past_the_maximum, due_within_the_lead)
        ],
        NOW,
    )

    assert sent == 4
    assert by_run(backend.receivable(Priority.NORMAL)) == by_run([due_now, due_within_the_lead])


def test_given_a_message_due_just_after_the_lead_when_sent_then_held_back(
    backend: Backend,
) -> None:
    lead = r.DISPATCH_LEAD_SECONDS[Priority.HIGH.value]
    held = a_message(a_job(), NOW + timedelta(seconds=lead + 30))

    backend.queues.send([(Priority.HIGH, held)], NOW)

    assert backend.receivable(Priority.HIGH) == []
