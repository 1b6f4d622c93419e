"""The archive's two sides: the archiver writes each batch of ended runs' versions (from the
runs stream), or of audit entries (from the audit stream), as one object per owner and day;
the API lists one owner's day (its runs, or its audit entries) as links that expire
(docs/api/archive.md; the layout is chronoq.domain.archive's)."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from chronoq import resources as r
from chronoq.domain import archive
from chronoq.domain.archive import Archived, ArchivedEntry, ArchiveObject
from chronoq.domain.errors import InvalidRequest
from chronoq.usecases.pages import Listing
from chronoq.usecases.ports import Archive, Clock

logger = logging.getLogger(__name__)

#: What an owner's day of the archive holds: its runs' objects, or its audit entries'.
RUNS = "runs"
AUDIT = "audit"
KINDS = (RUNS, AUDIT)


@dataclass(frozen=True)
class Archiving:
    """What archiving a batch did: the objects written, and the versions not archived
    (their object's write failed: the batch is to be handed over again from the first)."""

    written: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


@dataclass
class Archiver:
    archive: Archive
    prefix: str = r.ARCHIVE_PREFIX
    #: Objects written side by side.
    threads: int = r.ARCHIVE_PUT_THREADS

    def archive_batch(self, batch: Iterable[Archived | ArchivedEntry]) -> Archiving:
        """Write a batch's versions: one object per owner and day of the batch (of runs, or
        of audit entries), named by its first and last version
        (chronoq.domain.archive.objects)."""
        planned = archive.objects(self.prefix, batch)
        if not planned:
            return Archiving()
        written: list[str] = []
        failed: list[str] = []
        # (each in a copy of this context: what is measured of this invocation, and who
        # makes the requests, goes with them)
        contexts = [contextvars.copy_context() for _ in planned]
        with ThreadPoolExecutor(max_workers=min(self.threads, len(planned))) as pool:
            errors = pool.map(
                lambda pair: pair[0].run(self._put, pair[1]), zip(contexts, planned, strict=True)
            )
            for planned_object, error in zip(planned, errors, strict=True):
                if error is None:
                    written.append(planned_object.key)
                else:
                    logger.error("archiving %s failed: %s", planned_object.key, error)
                    failed.extend(planned_object.versions)
        return Archiving(tuple(written), tuple(sorted(failed)))

    def _put(self, planned: ArchiveObject) -> Exception | None:
        try:
            self.archive.put(planned.key, planned.body())
        except Exception as error:  # (each object on its own: the others are written)
            return error
        return None


@dataclass(frozen=True)
class ArchiveLink:
    """One object of an owner's day: its name, size, and a link that downloads it."""

    name: str
    size: int
    url: str
    expires_at: datetime


@dataclass
class ArchiveLinks:
    """The API's side: one owner's objects of one day, as links."""

    archive: Archive
    clock: Clock
    prefix: str = r.ARCHIVE_PREFIX
    link_seconds: int = r.ARCHIVE_LINK_SECONDS

    def day(
        self,
        owner: str,
        day: date,
        limit: int = r.DEFAULT_ARCHIVE_PAGE_LIMIT,
        next_token: str | None = None,
        kind: str = RUNS,
    ) -> Listing[ArchiveLink]:
        """Up to ``limit`` of ``owner``'s objects of ``day`` (``kind``: its runs', or its
        audit entries'), in name order, from the one after ``next_token`` (an object's name)
        on. Only the owner's own prefix is listed or signed, whatever the token says."""
        if kind not in KINDS:
            raise InvalidRequest("kind", f"must be one of {', '.join(KINDS)}")
        at = archive.audit_day_prefix if kind == AUDIT else archive.day_prefix
        where = at(self.prefix, owner, day)
        after = None
        if next_token is not None:
            if not archive.OBJECT_NAME.fullmatch(next_token):
                raise InvalidRequest("next_token", "is not the name of an object of the archive")
            after = where + next_token
        page = self.archive.list(where, limit, after)
        expires_at = self.clock() + timedelta(seconds=self.link_seconds)
        links = [
            ArchiveLink(
                name=found.key.removeprefix(where),
                size=found.size,
                url=self.archive.link(found.key, self.link_seconds),
                expires_at=expires_at,
            )
            for found in page.items
            if found.key.startswith(where)  # (never another's, whatever the store answers)
        ]
        more = links[-1].name if page.after is not None and links else None
        return Listing(links, more)
