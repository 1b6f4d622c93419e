"""The Archive contract: objects written whole (a second write of a key replaces it), listed by
prefix a page at a time (never a key of another prefix), downloaded through links; on the
fake, on S3 (moto) and on the engine's own bucket. Every test writes under an owner of its
own (objects of earlier tests are kept)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from chronoq import resources as r
from chronoq.domain import archive
from chronoq.domain.archive import Archived
from chronoq.domain.runs import Priority, Run, RunStatus
from chronoq.usecases.archive import ArchiveLinks, Archiver

from tests.contract.backends import NOW, Backend


def prefix() -> str:
    return f"{r.ARCHIVE_PREFIX}/owner={uuid.uuid4().hex}/"


def test_given_an_object_written_when_listed_then_it_is_there_once_and_its_link_downloads_it(
    backend: Backend,
) -> None:
    under = prefix()
    key = f"{under}day=2026-11-26/{'1'.zfill(40)}-{'2'.zfill(40)}.jsonl.gz"

    backend.archive.put(key, b"first")
    backend.archive.put(key, b"second, longer")  # (the same batch, handed over again)

    page = backend.archive.list(under, 10)
    assert [(o.key, o.size) for o in page.items] == [(key, len(b"second, longer"))]
    assert page.after is None
    assert backend.fetch(backend.archive.link(key, 60)) == b"second, longer"


def test_given_two_prefixes_when_one_is_listed_then_no_key_of_the_other_is(
    backend: Backend,
) -> None:
    owner = uuid.uuid4().hex
    mine = f"{r.ARCHIVE_PREFIX}/owner={owner}/"
    longer = f"{r.ARCHIVE_PREFIX}/owner={owner}x/"  # (begins like mine)
    backend.archive.put(mine + "day=2026-11-26/a", b"a")
    backend.archive.put(longer + "day=2026-11-26/b", b"b")

    listed = [o.key for o in backend.archive.list(mine, 10).items]

    assert listed == [mine + "day=2026-11-26/a"]


def test_given_more_objects_than_a_page_when_listed_from_each_pages_end_then_each_comes_once(
    backend: Backend,
) -> None:
    under = prefix()
    keys = [f"{under}day=2026-11-26/{n:02d}" for n in range(5)]
    for key in reversed(keys):
        backend.archive.put(key, key.encode())

    seen: list[str] = []
    after = None
    while True:
        page = backend.archive.list(under, 2, after)
        seen += [o.key for o in page.items]
        if page.after is None:
            break
        (after,) = page.after

    assert seen == keys


def test_given_a_batch_archived_when_its_owner_lists_the_day_then_the_links_hold_its_runs(
    backend: Backend,
) -> None:
    owner, other = f"o-{uuid.uuid4().hex}", f"o-{uuid.uuid4().hex}"
    day = NOW.replace(hour=0)

    def version(seq: int, who: str) -> Archived:
        run = Run(
            id=f"job_{who}_{seq}",
            job_id=f"job_{who}",
            owner=who,
            status=RunStatus.FAILED,
            priority=Priority.NORMAL,
            scheduled_at=day + timedelta(minutes=seq),
            finished_at=datetime(2026, 11, 26, 12, tzinfo=UTC),
            error="TargetError: HTTP 503",
        )
        return Archived(archive.version(str(seq)), run)

    batch = [version(1, owner), version(2, other), version(3, owner)]
    done = Archiver(backend.archive).archive_batch(batch)
    Archiver(backend.archive).archive_batch(batch)  # handed over again

    links = ArchiveLinks(backend.archive, lambda: NOW).day(owner, day.date())

    assert not done.failed
    (link,) = links.items
    lines = archive.decode(backend.fetch(link.url))
    assert [(line["id"], line["version"]) for line in lines] == [
        (f"job_{owner}_1", archive.version("1")),
        (f"job_{owner}_3", archive.version("3")),
    ]
