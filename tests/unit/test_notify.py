from __future__ import annotations

import pytest
from chronoq.domain.notifications import has_just_finished, sign, signing_secret, verify

BODY = b'{"run_id":"r1","status":"FAILED"}'


def test_given_a_signed_body_when_verified_with_the_same_secret_then_it_passes() -> None:
    secret = signing_secret("master", "alice")

    assert verify(secret, sign(secret, 1_000, BODY), BODY, now=1_010)


@pytest.mark.parametrize(
    ("secret", "body", "now"),
    [
        (signing_secret("master", "bob"), BODY, 1_010),  # another owner's secret
        (signing_secret("master", "alice"), BODY + b" ", 1_010),  # body changed
        (signing_secret("master", "alice"), BODY, 1_000 + 301),  # too old: a replay
    ],
)
def test_given_a_wrong_secret_body_or_age_when_verified_then_it_fails(
    secret: str, body: bytes, now: int
) -> None:
    header = sign(signing_secret("master", "alice"), 1_000, BODY)

    assert not verify(secret, header, body, now=now)


@pytest.mark.parametrize("header", ["", "t=abc,v1=00", "v1=00", "t=1000"])
def test_given_a_malformed_header_when_verified_then_it_fails(header: str) -> None:
    assert not verify("s", header, BODY, now=1_000)


def test_given_two_owners_when_their_secrets_are_derived_then_they_differ_and_are_stable() -> None:
    assert signing_secret("m", "alice") == signing_secret("m", "alice")
    assert signing_secret("m", "alice") != signing_secret("m", "bob")
    assert signing_secret("m", "alice") != signing_secret("n", "alice")


@pytest.mark.parametrize(
    ("old", "new", "finished"),
    [
        ("RUNNING", "SUCCEEDED", True),
        ("QUEUED", "CANCELLED", True),
        (None, "MISSED", True),  # written ended (dispatcher)
        ("SCHEDULED", "SKIPPED", True),
        ("RUNNING", "RUNNING", False),
        ("QUEUED", "RUNNING", False),
        ("FAILED", "FAILED", False),  # a later note on an ended run
        ("CANCELLED", "FAILED", False),  # the state machine catching up on a cancelled run
    ],
)
def test_given_a_change_of_a_run_when_asked_if_it_just_ended_then_only_the_ending_counts(
    old: str | None, new: str, finished: bool
) -> None:
    assert has_just_finished(old, new) is finished
