"""The SecretStore port in memory: each owner's secrets and the jobs using each."""

from __future__ import annotations

from collections.abc import Iterable

from chronoq.domain.secrets import SecretMeta
from chronoq.fakes.store._tables import FakeTables


class FakeSecrets(FakeTables):
    def get_secrets(self, owner: str, consistent: bool = False) -> dict[str, SecretMeta]:
        with self._lock:
            return dict(sorted(self.secrets.get(owner, {}).items()))

    def put_secret(self, owner: str, meta: SecretMeta, limit: int) -> bool:
        with self._lock:
            kept = self.secrets.setdefault(owner, {})
            old = kept.get(meta.name)
            if old is None and len(kept) >= limit:
                return False
            if old is None:
                kept[meta.name] = meta
            elif old.version < meta.version:
                kept[meta.name] = old.model_copy(
                    update={"version": meta.version, "updated_at": meta.updated_at}
                )
            return True

    def remove_secret(self, owner: str, name: str) -> list[str]:
        with self._lock:
            users = sorted(self.secret_uses.get((owner, name), set()))
            if users:
                return users
            self.secrets.get(owner, {}).pop(name, None)
            return []

    def use_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> str | None:
        wanted = sorted(set(names))
        with self._lock:
            kept = self.secrets.get(owner, {})
            missing = [n for n in wanted if n not in kept]
            if missing:
                return missing[0]
            for name in wanted:
                self.secret_uses.setdefault((owner, name), set()).add(job_id)
            return None

    def unuse_secrets(self, owner: str, job_id: str, names: Iterable[str]) -> None:
        with self._lock:
            for name in set(names):
                users = self.secret_uses.get((owner, name), set())
                users.discard(job_id)
                if not users:
                    self.secret_uses.pop((owner, name), None)

    def secret_users(self, owner: str, name: str) -> list[str]:
        with self._lock:
            return sorted(self.secret_uses.get((owner, name), set()))
