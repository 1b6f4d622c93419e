"""Secrets: what the API does with them (put, list, delete; which jobs may name them), and how
the runner and the notifier resolve them at run time (``Resolver``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain import secrets
from chronoq.domain.errors import InvalidRequest, LimitExceeded, NotFound, SecretInUse
from chronoq.domain.jobs import JobSpec
from chronoq.domain.secrets import SecretMeta, SecretUnavailable
from chronoq.usecases.ports import Clock, JobStore, SecretStore, SecretValues


def check_name(name: str) -> None:
    if not secrets.NAME.fullmatch(name) or len(name) > lim.MAX_SECRET_NAME_LENGTH:
        raise InvalidRequest(
            "name",
            f"must be letters, digits, _ and -, starting with a letter or digit, at most"
            f" {lim.MAX_SECRET_NAME_LENGTH} characters",
        )


def check_value(value: str) -> None:
    size = len(value.encode())
    if size > lim.MAX_SECRET_VALUE_BYTES:
        raise InvalidRequest("value", f"must be at most {lim.MAX_SECRET_VALUE_BYTES} bytes")
    if len(value) < lim.MIN_SECRET_VALUE_LENGTH:
        raise InvalidRequest(
            "value",
            f"must be at least {lim.MIN_SECRET_VALUE_LENGTH} characters (a shorter one could not"
            " be scrubbed from a run's logs)",
        )
    if "\x00" in value:
        raise InvalidRequest("value", "must not contain NUL")


def where(spec: JobSpec, name: str) -> str:
    """The field of ``spec`` that names the secret (the API's field path)."""
    places: list[tuple[str, Any]] = [
        (f"target.{f}", getattr(spec.target, f)) for f in type(spec.target).model_fields
    ]
    if spec.notify is not None:
        places.append(("notify.webhook_headers", spec.notify.webhook_headers))
    for path, value in places:
        if isinstance(value, dict):
            for key, item in value.items():
                if name in secrets.names_in(item):
                    return f"{path}.{key}"
        if name in secrets.names_in(value):
            return path
    return "target"


@dataclass
class SecretOperations:
    store: SecretStore
    values: SecretValues
    jobs: JobStore
    clock: Clock
    max_secrets_per_owner: int = lim.DEFAULT_MAX_SECRETS_PER_OWNER

    def put(self, owner: str, name: str, value: str) -> tuple[SecretMeta, bool]:
        """Keep ``value`` as the secret's (a new secret, or a new version of one: the next
        runs of the jobs naming it use it); the secret as kept, and whether it is new."""
        check_name(name)
        check_value(value)
        kept = self.store.get_secrets(owner, consistent=True)
        if name not in kept and len(kept) >= self.max_secrets_per_owner:
            raise self._full()
        version = self.values.put_value(owner, name, value)
        now = self.clock()
        old = kept.get(name)
        meta = SecretMeta(
            name=name,
            version=version,
            created_at=old.created_at if old else now,
            updated_at=now,
        )
        if not self.store.put_secret(owner, meta, self.max_secrets_per_owner):
            raise self._full()  # (another secret was made meanwhile; the value stays unused)
        return meta, old is None

    def _full(self) -> LimitExceeded:
        return LimitExceeded(
            "max_secrets_per_owner",
            f"you have {self.max_secrets_per_owner} secrets, the most this deployment allows"
            " (max_secrets_per_owner): delete one first",
            field="name",
        )

    def list(self, owner: str) -> list[SecretMeta]:
        return list(self.store.get_secrets(owner, consistent=True).values())

    def delete(self, owner: str, name: str) -> None:
        """Forget the secret and its value, unless a job names it (409, naming the jobs)."""
        check_name(name)
        if name not in self.store.get_secrets(owner, consistent=True):
            raise NotFound(f"secret {name} not found")
        users = self.store.remove_secret(owner, name)
        if users:
            # (a job deleted while its uses were being given back is not one)
            jobs = self.jobs.get_jobs(users, consistent=True)
            gone = [u for u in users if u not in jobs or jobs[u].owner != owner]
            for job_id in gone:
                self.store.unuse_secrets(owner, job_id, [name])
            users = [u for u in users if u not in gone] or self.store.remove_secret(owner, name)
        if users:
            names = ", ".join(f"{jobs[u].name} ({u})" if u in jobs else u for u in users[:10])
            more = f" and {len(users) - 10} more" if len(users) > 10 else ""
            raise SecretInUse(
                f"secret {name} is used by {len(users)} job(s): {names}{more}; change them first",
                users,
            )
        self.values.delete_value(owner, name)


def use(store: SecretStore, owner: str, job_id: str, spec: JobSpec, names: Iterable[str]) -> None:
    """Note that the job names ``names`` (from ``spec``: a job's create or change), or
    refuse it (422 naming the field) if one is not a secret of its owner."""
    missing = store.use_secrets(owner, job_id, names)
    if missing is not None:
        raise InvalidRequest(
            where(spec, missing),
            f"names secret {missing!r}, which you do not have: PUT /secrets/{missing} first",
        )


# --- resolving at run time ------------------------------------------------------------------


@dataclass
class Resolver:
    """The secrets' values a run's target or a webhook names, read at run time: the owner's
    versions from the store (one read), each value from its store at most once per
    SECRET_CACHE_SECONDS per (owner, name, version)."""

    store: SecretStore
    values: SecretValues
    clock: Callable[[], float] = time.monotonic
    cache_seconds: float = r.SECRET_CACHE_SECONDS
    _cache: dict[tuple[str, str, int], tuple[float, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def values_of(self, owner: str, names: Iterable[str]) -> dict[str, str]:
        """The value of each secret named; raises SecretUnavailable (naming the secret)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        kept = self.store.get_secrets(owner)
        found = {}
        for name in wanted:
            meta = kept.get(name)
            if meta is None:
                raise SecretUnavailable(name, "it no longer exists")
            found[name] = self._value(owner, name, meta.version)
        return found

    def _value(self, owner: str, name: str, version: int) -> str:
        key = (owner, name, version)
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and now - cached[0] < self.cache_seconds:
                return cached[1]
            for old in [k for k, (at, _) in self._cache.items() if now - at >= self.cache_seconds]:
                del self._cache[old]
        value = self.values.get_value(owner, name, version)
        with self._lock:
            self._cache[key] = (now, value)
        return value
