"""The SecretStore port: each owner's secrets' names and versions, and which jobs use each, on
every backend (the fakes, the DynamoDB adapter on moto, and on chronoq local's engine)."""

from __future__ import annotations

from datetime import timedelta

from chronoq.domain.secrets import SecretMeta

from tests.contract.backends import NOW, Backend


def meta(name: str, version: int = 1, minutes: int = 0) -> SecretMeta:
    at = NOW + timedelta(minutes=minutes)
    return SecretMeta(name=name, version=version, created_at=at, updated_at=at)


def test_given_secrets_put_when_read_then_each_owner_sees_its_own_by_name(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.put_secret("alice", meta("crm-token"), limit=5)
    assert store.put_secret("alice", meta("api_key"), limit=5)
    assert store.put_secret("bob", meta("crm-token", version=7), limit=5)

    alice = store.get_secrets("alice", consistent=True)
    assert list(alice) == ["api_key", "crm-token"]
    assert alice["crm-token"] == meta("crm-token")
    assert store.get_secrets("bob")["crm-token"].version == 7
    assert store.get_secrets("carol") == {}


def test_given_a_secret_when_a_new_version_is_put_then_it_is_kept_with_its_first_creation(
    backend: Backend,
) -> None:
    store = backend.store
    store.put_secret("alice", meta("tok", 1), limit=5)

    assert store.put_secret("alice", meta("tok", 3, minutes=2), limit=5)
    assert store.put_secret("alice", meta("tok", 2, minutes=1), limit=5)  # (late: not written)

    kept = store.get_secrets("alice", consistent=True)["tok"]
    assert (kept.version, kept.created_at, kept.updated_at) == (
        3,
        NOW,
        NOW + timedelta(minutes=2),
    )


def test_given_an_owner_at_its_limit_when_a_new_secret_is_put_then_refused_but_a_new_version_is_not(
    backend: Backend,
) -> None:
    store = backend.store
    assert store.put_secret("alice", meta("a"), limit=2)
    assert store.put_secret("alice", meta("b"), limit=2)

    assert not store.put_secret("alice", meta("c"), limit=2)
    assert store.put_secret("alice", meta("b", 2), limit=2)
    assert store.put_secret("bob", meta("c"), limit=2)  # (per owner)

    assert sorted(store.get_secrets("alice", consistent=True)) == ["a", "b"]


def test_given_jobs_using_a_secret_when_it_is_removed_then_refused_naming_them_until_none_does(
    backend: Backend,
) -> None:
    store = backend.store
    store.put_secret("alice", meta("tok"), limit=5)
    assert store.use_secrets("alice", "job_b", ["tok"]) is None
    assert store.use_secrets("alice", "job_a", ["tok"]) is None
    assert store.use_secrets("alice", "job_a", ["tok"]) is None  # (again: idempotent)

    assert store.remove_secret("alice", "tok") == ["job_a", "job_b"]
    assert "tok" in store.get_secrets("alice", consistent=True)
    store.unuse_secrets("alice", "job_a", ["tok"])
    store.unuse_secrets("alice", "job_a", ["tok"])
    assert store.secret_users("alice", "tok") == ["job_b"]
    assert store.remove_secret("alice", "tok") == ["job_b"]
    store.unuse_secrets("alice", "job_b", ["tok"])

    assert store.remove_secret("alice", "tok") == []
    assert store.get_secrets("alice", consistent=True) == {}
    assert store.remove_secret("alice", "tok") == []  # (gone already: nothing to do)


def test_given_a_name_that_does_not_exist_when_used_then_nothing_is_noted_and_it_is_named(
    backend: Backend,
) -> None:
    store = backend.store
    store.put_secret("alice", meta("a"), limit=5)
    store.put_secret("bob", meta("b"), limit=5)

    assert store.use_secrets("alice", "job_x", ["a", "b"]) == "b"  # (bob's is not alice's)

    assert store.secret_users("alice", "a") == []
    assert store.use_secrets("alice", "job_x", []) is None


def test_given_uses_of_one_owner_when_another_owner_has_the_same_name_then_they_are_apart(
    backend: Backend,
) -> None:
    store = backend.store
    store.put_secret("alice", meta("tok"), limit=5)
    store.put_secret("alice#tok", meta("tok"), limit=5)
    store.use_secrets("alice", "job_a", ["tok"])

    assert store.secret_users("alice#tok", "tok") == []
    assert store.remove_secret("alice#tok", "tok") == []
    assert store.secret_users("alice", "tok") == ["job_a"]
