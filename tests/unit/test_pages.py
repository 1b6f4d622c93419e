"""Page tokens: sealed for one owner and one listing, opaque, refused when altered."""

from __future__ import annotations

import base64

import pytest
from chronoq.domain.pages import BadToken, open_token, seal

SECRET = "master-secret"
POSITION = ("2030-01-01T08:00:00Z", "job_0123456789abcdef")


def test_given_a_token_when_opened_by_its_owner_for_its_listing_then_its_position() -> None:
    token = seal(SECRET, "alice", "jobs", POSITION)

    assert open_token(SECRET, "alice", "jobs", token) == POSITION


def test_given_a_token_when_read_then_it_shows_neither_keys_nor_owner() -> None:
    token = seal(SECRET, "alice", "jobs", POSITION)
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))

    for secret in (b"job_0123456789abcdef", b"2030", b"alice", b"0123456789abcdef"):
        assert secret not in raw
        assert secret.decode() not in token
    assert seal(SECRET, "alice", "jobs", POSITION) != token  # a fresh nonce each time


@pytest.mark.parametrize(
    ("owner", "listing", "secret"),
    [
        ("bob", "jobs", SECRET),  # another owner
        ("alice", "runs:job_0123456789abcdef", SECRET),  # another listing
        ("alice", "jobs?state=PAUSED", SECRET),  # the same list, other filters
        ("alice", "jobs", "another deployment's secret"),
    ],
)
def test_given_a_token_when_opened_for_another_owner_listing_or_deployment_then_refused(
    owner: str, listing: str, secret: str
) -> None:
    token = seal(SECRET, "alice", "jobs", POSITION)

    with pytest.raises(BadToken):
        open_token(secret, owner, listing, token)


def test_given_an_altered_or_made_up_token_when_opened_then_refused() -> None:
    token = seal(SECRET, "alice", "jobs", POSITION)
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    for index in (0, 5, 20, len(raw) - 1):
        altered = bytearray(raw)
        altered[index] ^= 1
        forged = base64.urlsafe_b64encode(bytes(altered)).rstrip(b"=").decode()
        with pytest.raises(BadToken):
            open_token(SECRET, "alice", "jobs", forged)
    made_up = base64.urlsafe_b64encode(b'["2030","job_x"]').decode()
    for bad in ("", "!!!", "a", made_up, token[:-4], "A" * 5000, "é" * 10):
        with pytest.raises(BadToken):
            open_token(SECRET, "alice", "jobs", bad)
