"""``GET /archive`` through the api function's handler on the fakes: one day of the caller's
own archive, as links that expire; a day that is not one refused with 422 naming ``day``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from chronoq import resources as r
from chronoq.domain import archive
from chronoq.domain.archive import Archived
from chronoq.domain.runs import Priority, Run, RunStatus
from chronoq.fakes import FakeArchive

from tests.unit.api_on_fakes import Api, api_on_fakes

DAY = datetime(2026, 11, 26, 6, tzinfo=UTC)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes() as api:
        yield api


def ended(owner: str, seq: int, at: datetime = DAY) -> Archived:
    run = Run(
        id=f"job_{owner}_{seq}",
        job_id=f"job_{owner}",
        owner=owner,
        status=RunStatus.SUCCEEDED,
        priority=Priority.NORMAL,
        scheduled_at=at,
        finished_at=at + timedelta(seconds=1),
    )
    return Archived(archive.version(str(seq)), run)


def test_given_two_owners_archived_when_one_lists_a_day_then_only_its_own_runs_are_linked(
    api: Api,
) -> None:
    store: FakeArchive = api.fakes.archive  # type: ignore[assignment]
    api.fakes.archiver.archive_batch(
        [ended("alice", 1), ended("bob", 2), ended("alice", 3, DAY + timedelta(days=1))]
    )

    status, page, _ = api.call("GET", "/archive?day=2026-11-26", user="alice")

    assert status == 200, page
    assert page["day"] == "2026-11-26"
    (found,) = page["objects"]
    assert archive.OBJECT_NAME.fullmatch(found["name"])
    key = archive.day_prefix(r.ARCHIVE_PREFIX, "alice", DAY.date()) + found["name"]
    assert found["size"] == len(store.objects[key])
    assert found["expires_at"] == "2026-11-26T12:15:00Z"  # the fake clock's now + 15 minutes
    lines = archive.decode(store.download(found["url"]))
    assert [(line["owner"], line["id"]) for line in lines] == [("alice", "job_alice_1")]
    assert "next_token" not in page


def test_given_a_day_with_nothing_archived_when_listed_then_no_object(api: Api) -> None:
    assert api.call("GET", "/archive?day=2001-01-01")[:2] == (
        200,
        {"day": "2001-01-01", "kind": "runs", "objects": []},
    )


def test_given_more_objects_than_a_page_when_listed_then_next_token_leads_to_the_rest(
    api: Api,
) -> None:
    for n in range(3):
        api.fakes.archiver.archive_batch([ended("alice", 10 + n)])

    status, first, _ = api.call("GET", "/archive?day=2026-11-26&limit=2")
    _, rest, _ = api.call(
        "GET", f"/archive?day=2026-11-26&limit=2&next_token={first['next_token']}"
    )

    assert status == 200
    names = [o["name"] for o in first["objects"] + rest["objects"]]
    assert len(names) == 3 == len(set(names))
    assert "next_token" not in rest


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?day=2026-02-30",
        "?day=yesterday",
        "?day=2026-11-26T00:00:00Z",
        "?day=26-11-2026",
    ],
)
def test_given_no_day_or_one_that_is_not_a_day_when_listed_then_422_names_day(
    api: Api, query: str
) -> None:
    status, body, _ = api.call("GET", f"/archive{query}")

    assert status == 422, body
    assert body["error"]["field"] == "day"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?day=2026-11-26&limit=0", "limit"),
        (f"?day=2026-11-26&limit={r.MAX_ARCHIVE_PAGE_LIMIT + 1}", "limit"),
        ("?day=2026-11-26&next_token=../owner=bob/x", "next_token"),
    ],
)
def test_given_a_bad_limit_or_token_when_listed_then_422_names_it(
    api: Api, query: str, field: str
) -> None:
    status, body, _ = api.call("GET", f"/archive{query}")

    assert (status, body["error"]["field"]) == (422, field)
