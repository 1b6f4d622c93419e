"""The SecretValues port in memory: each owner's secrets' values, every version kept (as SSM
Parameter Store keeps the last ones), with what was read counted and failures to order."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from chronoq.domain.secrets import SecretUnavailable


@dataclass
class FakeSecretValues:
    #: (owner, name) -> every value put, in order (version n is values[n - 1])
    values: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: (owner, name, version) of every read
    reads: list[tuple[str, str, int]] = field(default_factory=list)
    #: names whose reads are refused (access denied) or throttled (retryable)
    denied: set[str] = field(default_factory=set)
    throttled: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def put_value(self, owner: str, name: str, value: str) -> int:
        with self._lock:
            versions = self.values.setdefault((owner, name), [])
            versions.append(value)
            return len(versions)

    def get_value(self, owner: str, name: str, version: int) -> str:
        with self._lock:
            self.reads.append((owner, name, version))
            if name in self.throttled:
                raise SecretUnavailable(name, "reads are throttled", retryable=True)
            if name in self.denied:
                raise SecretUnavailable(name, "access denied")
            versions = self.values.get((owner, name), [])
            if not 1 <= version <= len(versions):
                raise SecretUnavailable(name, "it no longer exists")
            return versions[version - 1]

    def delete_value(self, owner: str, name: str) -> None:
        with self._lock:
            self.values.pop((owner, name), None)
