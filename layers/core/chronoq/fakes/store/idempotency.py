"""The KeyStore port in memory: idempotency keys' records."""

from __future__ import annotations

from datetime import datetime, timedelta

from chronoq import resources as r
from chronoq.fakes.store._tables import FakeTables
from chronoq.usecases.ports import KeyRecord


class FakeKeys(FakeTables):
    def claim_key(
        self, key: str, fingerprint: str, now: datetime, stale: datetime
    ) -> KeyRecord | None:
        with self._lock:
            kept = self.keys.get(key)
            if kept is not None:
                record, expires = kept
                lapsed = record.answer is None and record.claimed_at < stale
                if expires > now and not (lapsed and record.fingerprint == fingerprint):
                    return record
            expires = now + timedelta(seconds=r.IDEMPOTENCY_KEY_SECONDS)
            self.keys[key] = (KeyRecord(fingerprint, None, now), expires)
            return None

    def answer_key(self, key: str, answer: str) -> None:
        with self._lock:
            record, expires = self.keys[key]
            self.keys[key] = (KeyRecord(record.fingerprint, answer, record.claimed_at), expires)

    def release_key(self, key: str) -> None:
        with self._lock:
            self.keys.pop(key, None)
