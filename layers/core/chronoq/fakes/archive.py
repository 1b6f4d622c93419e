"""The Archive port in memory: objects by key, every write counted, writes made to fail on
order, and links that say what they download and until when."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import parse_qs, quote, unquote, urlsplit

from chronoq.fakes.clock import FakeClock
from chronoq.usecases.ports import Page, StoredObject

#: Where the fake's links point (nothing answers there: ``download`` reads them).
LINK_BASE = "https://archive.invalid/"


@dataclass
class FakeArchive:
    clock: FakeClock = field(default_factory=FakeClock)
    objects: dict[str, bytes] = field(default_factory=dict)
    #: Every key written, in order (a key written twice appears twice).
    puts: list[str] = field(default_factory=list)
    #: Writes of keys beginning with any of these fail.
    failing: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def put(self, key: str, body: bytes) -> None:
        if any(key.startswith(prefix) for prefix in self.failing):
            raise OSError(f"writing {key} failed (as ordered)")
        with self._lock:
            self.puts.append(key)
            self.objects[key] = bytes(body)

    def list(self, prefix: str, limit: int, after: str | None = None) -> Page[StoredObject]:
        with self._lock:
            keys = sorted(k for k in self.objects if k.startswith(prefix))
            found = [k for k in keys if after is None or k > after]
            page = [StoredObject(k, len(self.objects[k])) for k in found[:limit]]
        more = len(found) > limit
        return Page(page, (page[-1].key,) if more and page else None)

    def delete(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self.objects.pop(key, None)

    def link(self, key: str, expires_in: int) -> str:
        until = int((self.clock() + timedelta(seconds=expires_in)).timestamp())
        return f"{LINK_BASE}{quote(key)}?expires={until}"

    def download(self, url: str) -> bytes:
        """What following a link gets (PermissionError once it has expired)."""
        parts = urlsplit(url)
        until = int(parse_qs(parts.query)["expires"][0])
        if self.clock() > datetime.fromtimestamp(until, self.clock().tzinfo):
            raise PermissionError("the link has expired")
        return self.objects[unquote(parts.path.lstrip("/"))]
