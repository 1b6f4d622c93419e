"""Audit entries archived with the runs (docs/api/audit.md, "Audit trail"; docs/api/archive.md): the
archiver's handler on the audit stream's records (events/archiver/audit_batch), the audit objects'
layout (each owner's own, named by the versions they hold), and ``GET /archive?kind=audit`` through
the api function's handler on the fakes."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import date
from typing import Any, cast

import pytest
from chronoq import resources as r
from chronoq.aws import codecs, fanout
from chronoq.domain import archive
from chronoq.domain.owners import owner_segment
from chronoq.fakes import FakeArchive
from chronoq.fakes.audit import FakeAuditTrail
from chronoq.local.drivers import stream_filter
from chronoq.local.lambdas import _import
from chronoq.settings import environment
from chronoq.usecases.archive import Archiver
from chronoq.usecases.erasure import erase_archive

from tests.builders import Fakes, job_spec
from tests.support import load_event
from tests.unit.api_on_fakes import Api, api_on_fakes
from tests.unit.test_archiver import ENVIRONMENT, context

DAY = date(2030, 1, 1)


@pytest.fixture
def handler() -> Iterator[tuple[Any, FakeArchive]]:
    """The archiver's handler, its use case over a fake bucket."""
    with environment(ENVIRONMENT):
        module = _import("archiver_audit_on_fakes_handler", r.ARCHIVER_FUNCTION.handler_file)
    store = FakeArchive()
    cast(Any, module).archiver = Archiver(store)
    with environment(ENVIRONMENT):
        yield module, store


def owners_of(store: FakeArchive) -> dict[str, set[str]]:
    """Each object's key, and the owners of its lines."""
    return {
        key: {line["owner"] for line in archive.decode(body)} for key, body in store.objects.items()
    }


def test_given_an_audit_batch_when_handled_then_each_entry_lands_in_its_owners_audit_object_of_its_day(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/audit_batch")

    assert module.handler(event, context()) == {"batchItemFailures": []}

    versions = [archive.version(rec["dynamodb"]["SequenceNumber"]) for rec in event["Records"]]
    alice = archive.audit_day_prefix(r.ARCHIVE_PREFIX, "alice", DAY)
    bob = archive.audit_day_prefix(r.ARCHIVE_PREFIX, "h/../bob", DAY)
    assert alice == f"archive/owner=alice/audit/day={DAY}/"
    assert bob.startswith(f"archive/owner={owner_segment('h/../bob')}/audit/")
    assert sorted(store.objects) == sorted(
        [
            f"{alice}{versions[0]}-{versions[2]}.jsonl.gz",
            f"{bob}{versions[1]}-{versions[1]}.jsonl.gz",
        ]
    )
    lines = archive.decode(store.objects[f"{alice}{versions[0]}-{versions[2]}.jsonl.gz"])
    assert [(line["action"], line["version"]) for line in lines] == [
        ("pause", versions[0]),
        ("backfill", versions[2]),
    ]
    assert lines[0]["changes"] == [{"field": "state", "before": "ACTIVE", "after": "PAUSED"}]
    assert lines[1]["detail"]["runs"] == 24
    # nothing of the runs' days: their table and listings never read an audit object
    assert not [k for k in store.objects if k.startswith("archive/owner=alice/day=")]


def test_given_an_audit_batch_handed_over_again_when_handled_then_the_same_objects_are_written_again(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/audit_batch")
    module.handler(event, context())
    first = dict(store.objects)

    again = copy.deepcopy(event)
    again["Records"].reverse()  # (in any order)
    module.handler(again, context())

    assert store.objects == first  # the same names, the same bytes: no more objects
    assert len(store.puts) == 2 * len(first)


def test_given_two_owners_entries_of_one_day_when_archived_then_they_never_share_an_object(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/audit_batch")
    for record in event["Records"]:  # (all of one day)
        image = record["dynamodb"]["NewImage"]
        image["at"]["S"] = "2030-01-01T12:00:00.000Z"
        image["entry"]["S"] = "2030-01-01T12:00:00.000Z#" + image["request_id"]["S"]

    module.handler(event, context())

    found = owners_of(store)
    assert len(found) == 2
    for key, owners in found.items():
        (owner,) = owners
        assert key.startswith(archive.owner_prefix(r.ARCHIVE_PREFIX, owner))


def test_given_records_other_than_an_entry_added_then_none_reaches_the_archiver_nor_is_archived(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    (added, *_) = load_event("archiver/audit_batch")["Records"]
    removed = {**copy.deepcopy(added), "eventName": "REMOVE"}  # (its expiry, or an erasure)
    removed["dynamodb"]["OldImage"] = removed["dynamodb"].pop("NewImage")
    keep = stream_filter(fanout.AUDIT_ARCHIVER.filters(()))

    assert keep(added)
    assert not keep(removed)
    assert not keep({**added, "eventName": "MODIFY"})
    assert module.handler({"Records": [removed]}, context()) == {"batchItemFailures": []}
    assert not store.puts


def test_given_the_audit_stream_when_read_then_the_archiver_alone_reads_it_in_bulk() -> None:
    (reader,) = fanout.AUDIT_STREAM_READERS

    assert reader.function is r.ARCHIVER_FUNCTION
    assert reader.table is r.AUDIT_TABLE
    assert r.AUDIT_TABLE.stream
    assert reader.name != fanout.ARCHIVER.name  # (its own position in a stream)
    assert fanout.reader(reader.name) is reader
    assert reader.batch_size == fanout.ARCHIVER.batch_size
    assert reader.batching_window_seconds == fanout.ARCHIVER.batching_window_seconds
    for readers in fanout.STREAM_READERS.values():
        assert 1 <= len(readers) <= fanout.MAX_READERS


def test_given_an_owners_audit_objects_when_erased_then_they_are_gone_with_its_runs(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    module.handler(load_event("archiver/audit_batch"), context())

    assert erase_archive(store, "alice") == 1

    assert {owner for owners in owners_of(store).values() for owner in owners} == {"h/../bob"}


# --- GET /archive?kind=audit ---------------------------------------------------------------


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the handler builds its clients)
    with api_on_fakes(Fakes()) as api:
        yield api


def test_given_jobs_changed_by_two_owners_when_one_lists_its_audit_day_then_its_own_entries_as_the_api_shows_them(
    api: Api, handler: tuple[Any, FakeArchive]
) -> None:
    module, _ = handler
    cast(Any, module).archiver = Archiver(api.fakes.archive)
    body = job_spec().model_dump(mode="json", exclude_defaults=True)
    job = api.call("POST", "/jobs", "alice", body)[1]
    api.fakes.clock.advance(1)
    assert api.call("POST", f"/jobs/{job['id']}/pause", "alice")[0] == 200
    api.call("POST", "/jobs", "bob", body)
    # the audit stream's records of what the trail holds, handed to the archiver
    trail = api.fakes.audit
    assert isinstance(trail, FakeAuditTrail)
    records = [
        {
            "eventName": "INSERT",
            "dynamodb": {
                "NewImage": codecs.dump(codecs.audit_item(entry)),
                "SequenceNumber": str(500 + n),
            },
        }
        for n, entry in enumerate(trail.entries.values())
    ]
    assert module.handler({"Records": records}, context()) == {"batchItemFailures": []}
    day = api.fakes.clock().date().isoformat()

    status, page, _ = api.call("GET", f"/archive?day={day}&kind=audit", "alice")

    assert status == 200, page
    assert page["kind"] == "audit"
    (found,) = page["objects"]
    lines = archive.decode(api.fakes.archive.download(found["url"]))  # type: ignore[attr-defined]
    shown = api.call("GET", f"/jobs/{job['id']}/audit", "alice")[1]["entries"]
    assert [{k: v for k, v in line.items() if k != "version"} for line in lines] == list(
        reversed(shown)
    )
    # the runs of that day: none (the audit objects are not the runs')
    status, runs, _ = api.call("GET", f"/archive?day={day}", "alice")
    assert (status, runs["kind"], runs["objects"]) == (200, "runs", [])


def test_given_a_kind_that_is_none_when_listed_then_422_names_kind(api: Api) -> None:
    status, page, _ = api.call("GET", "/archive?day=2030-01-01&kind=jobs", "alice")

    assert status == 422, page
    assert page["error"]["field"] == "kind"
