"""Idempotency keys: a request sent again with the same ``Idempotency-Key`` (a retry after a
lost answer) gets the first one's answer instead of doing the work twice.

A key is the owner's own (another owner's same key is another key). The first request with
it takes the key with one conditional write (its item in the jobs table holds a fingerprint
of the request, then its answer) and keeps its answer with a second; a request with the same
key and the same request gets that answer back; with another request, a 409. A key expires
IDEMPOTENCY_KEY_SECONDS after its first use. A request that fails keeps nothing (the key is
let go: a retry runs afresh). A request without a key costs nothing more.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from chronoq import resources as r
from chronoq.domain.errors import Conflict, InvalidRequest
from chronoq.usecases.ports import Clock, KeyStore

HEADER = "Idempotency-Key"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Idempotency:
    store: KeyStore
    clock: Clock

    def once(
        self,
        owner: str,
        key: str | None,
        request: Any,
        act: Callable[[], dict[str, Any]],
    ) -> tuple[dict[str, Any], bool]:
        """``act``'s answer, and whether it is the answer of an earlier request with the same
        ``key`` (``request``, JSON-able, says what was asked: route, ids, body)."""
        if key is None:
            return act(), False
        if not 0 < len(key) <= r.MAX_IDEMPOTENCY_KEY_CHARS or not (
            key.isascii() and key.isprintable()
        ):
            raise InvalidRequest(
                HEADER, f"must be 1 to {r.MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters"
            )
        scoped = _digest([owner, key])  # (no owner nor key in clear in the table)
        fingerprint = _digest(request)
        now = self.clock()
        held = self.store.claim_key(
            scoped, fingerprint, now, now - timedelta(seconds=r.IDEMPOTENCY_STALE_SECONDS)
        )
        if held is not None:
            if held.fingerprint != fingerprint:
                raise Conflict(
                    f"{HEADER} {key!r} was used with another request (another body or "
                    "route) in the last 24 hours: use a new key for a new request"
                )
            if held.answer is None:
                raise Conflict(
                    f"the first request with {HEADER} {key!r} is still being served: retry "
                    "in a few seconds"
                )
            answer: dict[str, Any] = json.loads(held.answer)
            return answer, True
        try:
            answer = act()
        except BaseException:
            self.store.release_key(scoped)
            raise
        self.store.answer_key(scoped, json.dumps(answer, separators=(",", ":")))
        return answer, False
