"""The archive (chronoq.usecases.archive, chronoq.domain.archive) on the fake bucket: a batch of
ended runs' versions written as one object per owner and day, named by its content, and one
owner's day listed as links that expire."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import archive
from chronoq.domain.archive import Archived
from chronoq.domain.errors import InvalidRequest
from chronoq.domain.runs import Attempt, Priority, Run, RunStatus
from chronoq.fakes import FakeArchive

from tests.builders import Fakes

DAY = datetime(2026, 11, 26, tzinfo=UTC)


def a_version(
    seq: int,
    owner: str = "alice",
    job: str = "job_a",
    at: datetime = DAY,
    status: RunStatus = RunStatus.SUCCEEDED,
    **changes: Any,
) -> Archived:
    """Version ``seq`` of the run of ``job`` due ``at``, ended in ``status``."""
    run = Run(
        id=f"{job}_{at:%Y%m%dT%H%M%SZ}",
        job_id=job,
        owner=owner,
        status=status,
        priority=Priority.NORMAL,
        scheduled_at=at,
        started_at=at + timedelta(milliseconds=12),
        finished_at=at + timedelta(seconds=1),
        attempts=[
            Attempt(
                attempt=1,
                started_at=at + timedelta(milliseconds=12),
                finished_at=at + timedelta(seconds=1),
                outcome="SUCCEEDED",
            )
        ],
        **changes,
    )
    return Archived(archive.version(str(seq)), run, logs=(f"line of {seq}",))


def lines_of(store: FakeArchive) -> list[dict[str, Any]]:
    return [line for body in store.objects.values() for line in archive.decode(body)]


def a_batch() -> list[Archived]:
    """Three owners, two days, two versions of one run, runs of two jobs."""
    return [
        a_version(11, "alice", "job_a", DAY + timedelta(hours=1)),
        a_version(12, "bob", "job_b", DAY + timedelta(hours=1)),
        a_version(13, "alice", "job_a", DAY + timedelta(hours=2), RunStatus.FAILED),
        a_version(14, "alice", "job_c", DAY + timedelta(days=1, hours=3)),
        a_version(15, "carol/../alice", "job_d", DAY + timedelta(hours=4)),
        a_version(16, "alice", "job_a", DAY + timedelta(hours=1), notifications={"sns": "ok"}),
    ]


def test_given_a_batch_when_archived_then_every_version_of_it_is_in_the_archive_once(
    fakes: Fakes,
) -> None:
    batch = a_batch()

    done = fakes.archiver.archive_batch(batch)

    kept = lines_of(fakes.archive)  # type: ignore[arg-type]
    assert Counter((line["id"], line["version"]) for line in kept) == Counter(
        (a.run.id, a.version) for a in batch
    )
    assert not done.failed
    assert set(done.written) == set(fakes.archive.objects)  # type: ignore[attr-defined]


def test_given_a_batch_handed_over_again_when_archived_then_it_writes_the_same_objects(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    batch = a_batch()
    fakes.archiver.archive_batch(batch)
    first = dict(store.objects)

    fakes.archiver.archive_batch(list(reversed(batch)))  # (in any order)

    assert store.objects == first  # the same names, the same bytes
    assert Counter(store.puts) == Counter(dict.fromkeys(first, 2))
    assert len(lines_of(store)) == len(batch)  # no run written twice


def test_given_two_owners_when_archived_then_no_object_holds_runs_of_both(fakes: Fakes) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]

    fakes.archiver.archive_batch(a_batch())

    for key, body in store.objects.items():
        owners = {line["owner"] for line in archive.decode(body)}
        assert len(owners) == 1, key
        (owner,) = owners
        assert key.startswith(archive.owner_prefix(r.ARCHIVE_PREFIX, owner))


def test_given_runs_of_two_days_when_archived_then_each_day_has_objects_of_its_own(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]

    fakes.archiver.archive_batch(a_batch())

    for key, body in store.objects.items():
        days = {line["scheduled_at"][:10] for line in archive.decode(body)}
        assert len(days) == 1, key
        assert f"/day={days.pop()}/" in key
    alices = [k for k in store.objects if k.startswith("archive/owner=alice/")]
    assert sorted(k.split("/")[2] for k in alices) == ["day=2026-11-26", "day=2026-11-27"]


def test_given_an_owner_with_characters_a_key_should_not_hold_when_archived_then_a_digest_names_it(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]

    fakes.archiver.archive_batch([a_version(1, "carol/../alice"), a_version(2, "h.alice")])

    prefixes = {key.split("/")[1] for key in store.objects}
    assert all(p.startswith("owner=h.") and len(p) == len("owner=h.") + 40 for p in prefixes)
    assert len(prefixes) == 2


def test_given_a_run_written_again_after_it_ended_when_read_then_its_latest_version_is_kept(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    ended = a_version(7, status=RunStatus.FAILED)
    noted = a_version(90, status=RunStatus.FAILED, notifications={"sns": "published"})
    fakes.archiver.archive_batch([noted])  # (a later batch may be written first)
    fakes.archiver.archive_batch([ended])

    kept = archive.latest(lines_of(store))

    assert {(line["id"], line["version"]) for line in lines_of(store)} == {
        (ended.run.id, ended.version),
        (ended.run.id, noted.version),
    }
    assert kept[ended.run.id]["version"] == noted.version
    assert kept[ended.run.id]["notifications"] == {"sns": "published"}


def test_given_versions_of_many_digits_when_compared_as_text_then_they_order_as_numbers() -> None:
    numbers = [9, 10, 99, 100, 4100000000000000000001, 10**39]

    assert sorted(archive.version(str(n)) for n in numbers) == [
        archive.version(str(n)) for n in sorted(numbers)
    ]


def test_given_an_archived_line_when_read_then_it_holds_the_record_the_api_shows_and_its_logs(
    fakes: Fakes,
) -> None:
    version = a_version(5, status=RunStatus.FAILED, error="TargetError: HTTP 503")
    version = Archived(version.version, version.run, ("a", "b"), ("s3://b/runs/x/attempt-2.log",))
    fakes.archiver.archive_batch([version])

    (line,) = lines_of(fakes.archive)  # type: ignore[arg-type]

    assert line["status"] == "FAILED"
    assert line["error"] == "TargetError: HTTP 503"
    assert line["lag_ms"] == 12
    assert line["attempts"][0]["outcome"] == "SUCCEEDED"
    assert line["trigger"] == "schedule"
    assert line["logs"] == ["a", "b"]
    assert line["log_objects"] == ["s3://b/runs/x/attempt-2.log"]
    assert "generation" not in line
    assert "notify" not in line


def test_given_a_run_that_has_not_ended_when_archived_then_refused() -> None:
    with pytest.raises(ValueError, match="has not ended"):
        a_version(1, status=RunStatus.RUNNING)


def test_given_one_objects_write_failing_when_archived_then_only_its_versions_are_not(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    store.failing.add("archive/owner=bob/")
    batch = a_batch()

    done = fakes.archiver.archive_batch(batch)

    assert done.failed == tuple(a.version for a in batch if a.run.owner == "bob")
    assert {line["owner"] for line in lines_of(store)} == {a.run.owner for a in batch} - {"bob"}


def test_given_an_empty_batch_when_archived_then_nothing_is_written(fakes: Fakes) -> None:
    assert fakes.archiver.archive_batch([]).written == ()
    assert not fakes.archive.puts  # type: ignore[attr-defined]


# --- links ----------------------------------------------------------------------------------


def test_given_two_owners_archives_when_one_lists_a_day_then_it_gets_links_to_its_own_only(
    fakes: Fakes,
) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    fakes.archiver.archive_batch(a_batch())

    listing = fakes.archive_links.day("bob", date(2026, 11, 26))

    (link,) = listing.items
    lines = archive.decode(store.download(link.url))
    assert {line["owner"] for line in lines} == {"bob"}
    assert listing.next_token is None
    assert fakes.archive_links.day("dave", date(2026, 11, 26)).items == []


def test_given_a_link_when_its_time_has_passed_then_it_downloads_nothing(fakes: Fakes) -> None:
    store: FakeArchive = fakes.archive  # type: ignore[assignment]
    fakes.archiver.archive_batch(a_batch())
    (link,) = fakes.archive_links.day("bob", date(2026, 11, 26)).items

    assert link.expires_at == fakes.clock() + timedelta(seconds=r.ARCHIVE_LINK_SECONDS)
    fakes.clock.advance(r.ARCHIVE_LINK_SECONDS + 1)
    with pytest.raises(PermissionError):
        store.download(link.url)


def test_given_many_objects_when_listed_a_page_at_a_time_then_each_is_listed_once(
    fakes: Fakes,
) -> None:
    for n in range(7):
        fakes.archiver.archive_batch([a_version(100 + n, at=DAY + timedelta(minutes=n))])

    names: list[str] = []
    token = None
    while True:
        page = fakes.archive_links.day("alice", DAY.date(), limit=3, next_token=token)
        names += [link.name for link in page.items]
        token = page.next_token
        if token is None:
            break

    assert len(names) == 7 == len(set(names))
    assert names == sorted(names)


def test_given_a_token_naming_another_owners_object_when_listed_then_only_the_callers_are(
    fakes: Fakes,
) -> None:
    fakes.archiver.archive_batch(a_batch())
    (bobs,) = fakes.archive_links.day("bob", DAY.date()).items

    listing = fakes.archive_links.day("alice", DAY.date(), next_token=bobs.name)

    assert all("/owner=alice/" in link.url for link in listing.items)
    for hostile in ("../owner=bob/day=2026-11-26/x", "owner=bob", "a" * 81):
        with pytest.raises(InvalidRequest) as refused:
            fakes.archive_links.day("alice", DAY.date(), next_token=hostile)
        assert refused.value.field == "next_token"


@pytest.mark.parametrize("text", ["2026-02-30", "26-11-2026", "2026-1-01", "yesterday", ""])
def test_given_a_text_that_is_no_day_when_parsed_then_refused(text: str) -> None:
    with pytest.raises(ValueError, match="day"):
        archive.parse_day(text)
