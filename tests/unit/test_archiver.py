"""The archiver function's handler on the fake bucket (events/archiver), and what reaches it:
its filter of the runs stream, and the stream's readers (chronoq.aws.fanout)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.aws.streams import matches
from chronoq.domain import archive
from chronoq.domain.runs import ACTIVE_STATUSES, TERMINAL_STATUSES
from chronoq.fakes import FakeArchive
from chronoq.local.drivers import stream_filter
from chronoq.local.lambdas import LambdaContext, _import
from chronoq.origin import ForeignInvocation
from chronoq.settings import environment
from chronoq.usecases.archive import Archiver

from tests.support import load_event

ENVIRONMENT = {r.ENV_ARCHIVE_BUCKET: "chronoq-local-archive"}


def context(client_context: Any = None) -> LambdaContext:
    return LambdaContext(
        function_name="chronoq-local-archiver",
        memory_limit_in_mb=r.ARCHIVER_FUNCTION.memory_mb,
        timeout_seconds=r.ARCHIVER_FUNCTION.timeout_seconds,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-archiver",
        client_context=client_context,
    )


@pytest.fixture
def handler() -> Iterator[tuple[Any, FakeArchive]]:
    """The handler, its use case over a fake bucket."""
    with environment(ENVIRONMENT):
        module = _import("archiver_on_fakes_handler", r.ARCHIVER_FUNCTION.handler_file)
    store = FakeArchive()
    cast(Any, module).archiver = Archiver(store)
    with environment(ENVIRONMENT):
        yield module, store


def lines(store: FakeArchive) -> list[dict[str, Any]]:
    return [line for body in store.objects.values() for line in archive.decode(body)]


def test_given_a_batch_of_the_stream_when_handled_then_each_write_of_an_ended_run_is_archived(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/stream_batch")

    answer = module.handler(event, context())

    assert answer == {"batchItemFailures": []}
    kept = lines(store)
    assert sorted(line["version"] for line in kept) == sorted(
        archive.version(rec["dynamodb"]["SequenceNumber"]) for rec in event["Records"]
    )
    latest = archive.latest(kept)
    first = event["Records"][0]["dynamodb"]["NewImage"]["run_id"]["S"]
    assert latest[first]["notifications"] == {"webhook": "delivered"}  # its later write
    assert latest[first]["logs"] == [
        "2030-01-01T08:00:00.013Z [attempt 1] GET https://example.com/report"
    ]
    (bobs,) = [line for line in kept if line["status"] == "FAILED"]
    assert bobs["output"] is None
    assert bobs["output_location"] is None
    assert bobs["log_objects"][0].startswith("s3://chronoq-outputs/runs/")
    assert bobs["error"].startswith("TargetError")


def test_given_a_record_of_a_run_not_ended_when_handled_then_nothing_of_it_is_archived(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/stream_batch")
    for record in event["Records"]:
        record["dynamodb"]["NewImage"]["status"] = {"S": "RUNNING"}
    event["Records"].append({"eventName": "REMOVE", "dynamodb": {"SequenceNumber": "9"}})

    assert module.handler(event, context()) == {"batchItemFailures": []}
    assert not store.puts


def test_given_an_objects_write_failing_when_handled_then_its_records_are_reported_failed(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    store.failing.add("archive/owner=alice/")
    event = load_event("archiver/stream_batch")

    answer = module.handler(event, context())

    alices = [
        rec["dynamodb"]["SequenceNumber"]
        for rec in event["Records"]
        if rec["dynamodb"]["NewImage"]["owner"]["S"] == "alice"
    ]
    assert answer == {"batchItemFailures": [{"itemIdentifier": n} for n in sorted(alices)]}
    assert {line["owner"] for line in lines(store)} == {"h/../bob"}


def test_given_an_unreadable_record_when_handled_then_it_alone_is_reported_failed(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    event = load_event("archiver/stream_batch")
    event["Records"][1]["dynamodb"]["SequenceNumber"] = "not-a-number"

    answer = module.handler(event, context())

    assert answer == {"batchItemFailures": [{"itemIdentifier": "not-a-number"}]}
    assert len(lines(store)) == len(event["Records"]) - 1


def test_given_a_client_context_when_invoked_then_it_refuses(
    handler: tuple[Any, FakeArchive],
) -> None:
    module, store = handler
    from chronoq.local.lambdas import ClientContext

    with pytest.raises(ForeignInvocation):
        module.handler(load_event("archiver/stream_batch"), context(ClientContext(custom={})))
    assert not store.puts


# --- what reaches it ----------------------------------------------------------------------


def a_record(event: str, old: str | None, new: str | None) -> dict[str, Any]:
    change: dict[str, Any] = {"Keys": {"job_id": {"S": "j"}, "run_id": {"S": "r"}}}
    if old is not None:
        change["OldImage"] = {"status": {"S": old}}
    if new is not None:
        change["NewImage"] = {"status": {"S": new}}
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": change}


FINAL = sorted(s.value for s in TERMINAL_STATUSES)
NOT_ENDED = sorted(s.value for s in ACTIVE_STATUSES)


@pytest.mark.parametrize("status", FINAL)
def test_given_a_write_that_ends_a_run_or_rewrites_an_ended_one_then_it_reaches_the_archiver(
    status: str,
) -> None:
    keep = stream_filter(fanout.ARCHIVER.filters(()))

    assert keep(a_record("INSERT", None, status))  # ended as it was written (MISSED, SKIPPED)
    assert keep(a_record("MODIFY", "RUNNING", status))  # its end
    assert keep(a_record("MODIFY", status, status))  # its notifications' notes, its count


@pytest.mark.parametrize("status", NOT_ENDED)
def test_given_a_write_of_a_run_not_ended_then_it_never_reaches_the_archiver(status: str) -> None:
    keep = stream_filter(fanout.ARCHIVER.filters(()))

    assert not keep(a_record("INSERT", None, status))
    assert not keep(a_record("MODIFY", "SCHEDULED", status))
    assert not keep(a_record("REMOVE", status, None))
    assert not keep(a_record("REMOVE", "SUCCEEDED", None))  # (its expiry)


def test_given_the_runs_stream_when_read_then_two_readers_share_it_one_per_cadence() -> None:
    readers = {reader.name: reader for reader in fanout.RUNS_STREAM_READERS}

    assert len(readers) <= fanout.MAX_READERS == 2
    assert set(readers) == {r.NOTIFIER_FUNCTION.name, r.ARCHIVER_FUNCTION.name}
    prompt, bulk = readers["notifier"], readers["archiver"]
    assert prompt.batching_window_seconds == 0
    assert prompt.batch_size <= 10
    assert bulk.batch_size == 10_000
    # the archive within 5 minutes of a run's end: the window, and the handler's own time
    assert bulk.batching_window_seconds + 60 <= r.ARCHIVE_LATENCY_SECONDS
    assert bulk.local_batching_window_seconds <= 10
    for reader in readers.values():
        assert 1 <= len(reader.filters(())) <= 5  # (Lambda takes five patterns at most)
        json.dumps(reader.filters(()))  # (as CloudFormation takes them)


def test_given_the_archivers_filter_when_matched_then_lambdas_syntax_is_what_it_uses() -> None:
    (pattern,) = fanout.archiver_filters()

    assert matches(pattern, a_record("MODIFY", "RUNNING", "FAILED"))
    assert not matches(pattern, a_record("MODIFY", "FAILED", "RUNNING"))
