"""Each run's message goes in its owner's message group: the group ids SQS allows."""

from __future__ import annotations

from chronoq.aws.queues import message_group


def test_given_an_owner_sqs_allows_as_a_group_id_when_grouped_then_the_owner_itself() -> None:
    assert message_group("alice") == "alice"
    assert message_group("auth0|5f7c8ec7c33c6c004bbafe82") == "auth0|5f7c8ec7c33c6c004bbafe82"


def test_given_an_owner_sqs_refuses_as_a_group_id_when_grouped_then_a_stable_digest() -> None:
    for owner in ("Alice Smith", "zoë", "x" * 129):
        group = message_group(owner)
        assert group == message_group(owner) != message_group(owner + "!")
        assert len(group) <= 128
        assert group.isascii()
        assert " " not in group
