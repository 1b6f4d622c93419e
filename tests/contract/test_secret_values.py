"""The SecretValues port: owners' secrets' values, on every backend (the fake, SSM Parameter
Store on moto through SsmSecretValues, and chronoq local's engine answering the same calls).

Each test names owners of its own: moto's and the engine's parameters outlive a test."""

from __future__ import annotations

import uuid

import pytest
from chronoq.domain.secrets import SecretUnavailable

from tests.contract.backends import Backend

VALUE = "first-value-of-the-token"


def owner(prefix: str = "alice") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_given_a_secret_put_twice_when_each_version_is_read_then_each_holds_its_value(
    backend: Backend,
) -> None:
    values, alice = backend.secret_values, owner()

    first = values.put_value(alice, "crm-token", VALUE)
    second = values.put_value(alice, "crm-token", "second-value-of-the-token")

    assert (first, second) == (1, 2)
    assert values.get_value(alice, "crm-token", 1) == VALUE
    assert values.get_value(alice, "crm-token", 2) == "second-value-of-the-token"


@pytest.mark.parametrize(
    "others",
    [("alice", "bob"), ("auth0|123", "auth0|124"), ("a@b.c", "a.b.c"), ("h.x", "h.y")],
    ids=["plain", "pipes", "at-signs", "digest-like"],
)
def test_given_two_owners_with_a_secret_of_the_same_name_when_read_then_each_reads_its_own(
    backend: Backend, others: tuple[str, str]
) -> None:
    """Owners SSM's names refuse ("auth0|123", "a@b.c") are kept apart too (by a digest)."""
    values, tag = backend.secret_values, uuid.uuid4().hex[:8]
    first, second = (f"{o}{tag}" if "|" in o else f"{tag}-{o}" for o in others)

    values.put_value(first, "tok", "the-first-owners-value")
    values.put_value(second, "tok", "the-second-owners-value")
    values.put_value(second, "tok", "the-second-owners-next")

    assert values.get_value(first, "tok", 1) == "the-first-owners-value"
    assert values.get_value(second, "tok", 1) == "the-second-owners-value"
    with pytest.raises(SecretUnavailable):
        values.get_value(first, "tok", 2)  # (the second owner's version 2 is not the first's)
    values.delete_value(second, "tok")
    assert values.get_value(first, "tok", 1) == "the-first-owners-value"


def test_given_a_deleted_secret_when_read_then_it_is_unavailable_for_good_naming_it_not_its_value(
    backend: Backend,
) -> None:
    values, alice = backend.secret_values, owner()
    version = values.put_value(alice, "crm-token", VALUE)

    values.delete_value(alice, "crm-token")

    with pytest.raises(SecretUnavailable) as gone:
        values.get_value(alice, "crm-token", version)
    assert gone.value.name == "crm-token"
    assert not gone.value.retryable
    assert "crm-token" in str(gone.value)
    assert VALUE not in f"{gone.value} {gone.value.reason} {gone.value.args!r}"
    # (no chained error shows in its traceback)
    assert gone.value.__cause__ is None
    assert gone.value.__context__ is None or gone.value.__suppress_context__


def test_given_a_version_never_put_when_read_then_it_is_unavailable(backend: Backend) -> None:
    values, alice = backend.secret_values, owner()
    values.put_value(alice, "tok", VALUE)

    with pytest.raises(SecretUnavailable) as later:
        values.get_value(alice, "tok", 2)
    with pytest.raises(SecretUnavailable) as never:
        values.get_value(alice, "never-put", 1)

    assert (later.value.name, later.value.retryable) == ("tok", False)
    assert (never.value.name, never.value.retryable) == ("never-put", False)


def test_given_a_secret_never_put_when_deleted_then_nothing_happens(backend: Backend) -> None:
    values, alice = backend.secret_values, owner()

    values.delete_value(alice, "never-put")
    values.delete_value(alice, "never-put")

    with pytest.raises(SecretUnavailable):
        values.get_value(alice, "never-put", 1)


def test_given_a_secret_deleted_when_put_again_then_it_reads_the_new_value(
    backend: Backend,
) -> None:
    values, alice = backend.secret_values, owner()
    values.put_value(alice, "tok", VALUE)
    values.delete_value(alice, "tok")

    version = values.put_value(alice, "tok", "the-value-after-deletion")

    assert values.get_value(alice, "tok", version) == "the-value-after-deletion"
