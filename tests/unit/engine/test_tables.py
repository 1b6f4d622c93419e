"""chronoq local's tables (chronoq.local.engine.tables): DynamoDB's calls over SQLite, with
DynamoDB's semantics (conditions, paging, indexes, TTL, streams), its errors, and what the
database keeps across a close and a killed process. Time is a fake clock the tests move.

Why this module is long: it is every DynamoDB call and semantic the local tables answer (what
makes chronoq/local/engine/tables.py long), a section each, over one fake clock and observer."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError
from chronoq import resources as r
from chronoq.local.engine import tables as engine_tables
from chronoq.local.engine.tables import SqliteTables, UnsupportedDatabase

JOBS, RUNS, SCHEDULE = "jobs-table", "runs-table", "schedule-table"
NAMES = {r.JOBS_TABLE.id: JOBS, r.RUNS_TABLE.id: RUNS, r.SCHEDULE_TABLE.id: SCHEDULE}
#: A table with a number sort key (chronoq's own keys are strings).
NUMBERED = r.Table(id="Numbered", env="NUMBERED", partition_key="p", sort_key="n")


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def move(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class Heard:
    """An observer keeping every call it hears of."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def __call__(self, operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self.calls.append((operation, request, response))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
def tables(clock: FakeClock, heard: Heard) -> Iterator[SqliteTables]:
    engine = SqliteTables(None, (*r.TABLES, NUMBERED), NAMES, clock=clock.now, observer=heard)
    yield engine
    engine.close()


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: int | str) -> dict[str, str]:
    return {"N": str(value)}


def run(job: str, run_id: str, **attributes: Any) -> dict[str, Any]:
    return {"job_id": s(job), "run_id": s(run_id), **attributes}


def job(job_id: str, owner: str, created_at: str, **attributes: Any) -> dict[str, Any]:
    return {"job_id": s(job_id), "owner": s(owner), "created_at": s(created_at), **attributes}


def key_of(item: dict[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in ("job_id", "run_id") if k in item}


def code_of(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


# --- single items -------------------------------------------------------------------------------


def test_given_an_item_with_every_type_when_put_and_got_then_it_comes_back_as_it_went(
    tables: SqliteTables,
) -> None:
    item = run(
        "j",
        "r",
        text=s("é ✓"),
        number=n("12.50"),
        blob={"B": b"\x00\xff"},
        blobs={"BS": [b"a", b"b"]},
        flag={"BOOL": True},
        nothing={"NULL": True},
        words={"SS": ["x", "y"]},
        numbers={"NS": ["1", "2"]},
        nested={"M": {"list": {"L": [s("a"), {"M": {"B": s("not binary")}}]}}},
    )

    tables.put_item(TableName=RUNS, Item=item)
    got = tables.get_item(TableName=RUNS, Key=key_of(item), ConsistentRead=True)
    absent = tables.get_item(TableName=RUNS, Key={"job_id": s("j"), "run_id": s("other")})

    assert got == {"Item": item}
    assert absent == {}


def test_given_a_long_item_when_stored_then_it_is_compressed_and_read_back_the_same() -> None:
    item = run("j", "r", logs={"L": [s(f"line {i} of the attempt's log") for i in range(100)]})

    stored = engine_tables.encode(item)

    assert isinstance(stored, bytes)
    assert len(stored) * 2 < len(engine_tables.encode({"x": s("")})) + len(str(item))
    assert engine_tables.decode(stored) == item


def test_given_a_failing_condition_when_writing_then_the_item_is_untouched_and_the_error_is_dynamodbs(
    tables: SqliteTables,
) -> None:
    item = run("j", "r", status=s("RUNNING"))
    tables.put_item(TableName=RUNS, Item=item)
    values = {":scheduled": s("SCHEDULED"), ":x": s("x")}
    condition = {
        "ConditionExpression": "#s = :scheduled",
        "ExpressionAttributeNames": {"#s": "status"},
    }

    with pytest.raises(tables.exceptions.ConditionalCheckFailedException) as put:
        tables.put_item(
            TableName=RUNS,
            Item=run("j", "r"),
            ExpressionAttributeValues={":scheduled": s("SCHEDULED")},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **condition,
        )
    with pytest.raises(ClientError) as update:
        tables.update_item(
            TableName=RUNS,
            Key=key_of(item),
            UpdateExpression="SET other_attribute = :x",
            ExpressionAttributeValues=values,
            **condition,
        )
    with pytest.raises(ClientError) as delete:
        tables.delete_item(
            TableName=RUNS,
            Key=key_of(item),
            ExpressionAttributeValues={":scheduled": s("SCHEDULED")},
            **condition,
        )

    assert tables.get_item(TableName=RUNS, Key=key_of(item)) == {"Item": item}
    assert (
        dict(put.value.response)["Item"] == item
    )  # (asked for: ReturnValuesOnConditionCheckFailure)
    assert "Item" not in update.value.response
    assert [code_of(e) for e in (put, update, delete)] == ["ConditionalCheckFailedException"] * 3
    assert str(put.value) == (
        "An error occurred (ConditionalCheckFailedException) when calling the PutItem "
        "operation: The conditional request failed"
    )


def test_given_no_item_when_updated_then_it_is_created_from_the_key_unless_the_condition_wants_one(
    tables: SqliteTables,
) -> None:
    key = key_of(run("j", "r"))

    with pytest.raises(tables.exceptions.ConditionalCheckFailedException):
        tables.update_item(
            TableName=RUNS,
            Key=key,
            UpdateExpression="SET logs = :l",
            ConditionExpression="attribute_exists(run_id)",
            ExpressionAttributeValues={":l": {"L": []}},
        )
    missing = tables.get_item(TableName=RUNS, Key=key)
    created = tables.update_item(
        TableName=RUNS,
        Key=key,
        UpdateExpression="SET #s = if_not_exists(#s, :s) ADD tries :one",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": s("SCHEDULED"), ":one": n(1)},
        ReturnValues="ALL_NEW",
    )

    assert missing == {}
    assert created == {"Attributes": {**key, "status": s("SCHEDULED"), "tries": n(1)}}


@pytest.mark.parametrize(
    ("returns", "expected"),
    [
        ("NONE", None),
        ("ALL_OLD", {"job_id": s("j"), "run_id": s("r"), "a": n(1), "b": n(1)}),
        ("ALL_NEW", {"job_id": s("j"), "run_id": s("r"), "a": n(2), "c": n(1)}),
        ("UPDATED_OLD", {"a": n(1), "b": n(1)}),
        ("UPDATED_NEW", {"a": n(2), "c": n(1)}),
    ],
)
def test_given_return_values_when_updating_then_the_answer_shows_what_was_asked(
    tables: SqliteTables, returns: str, expected: dict[str, Any] | None
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "r", a=n(1), b=n(1)))

    answer = tables.update_item(
        TableName=RUNS,
        Key=key_of(run("j", "r")),
        UpdateExpression="SET a = a + :one, c = :one REMOVE b",
        ExpressionAttributeValues={":one": n(1)},
        ReturnValues=returns,
    )

    assert answer.get("Attributes") == expected


def test_given_sets_when_added_to_and_deleted_from_then_members_join_and_an_emptied_set_goes(
    tables: SqliteTables,
) -> None:
    key = {"job_id": s("job_1")}
    tables.put_item(TableName=JOBS, Item={**key, "version": n(1)})

    def change(update: str, ids: list[str]) -> dict[str, Any]:
        answer: dict[str, Any] = tables.update_item(
            TableName=JOBS,
            Key=key,
            UpdateExpression=update,
            ConditionExpression="attribute_exists(job_id)",
            ExpressionAttributeValues={":ids": {"SS": ids}},
            ReturnValues="ALL_NEW",
        )["Attributes"]
        return answer

    joined = change("ADD active_runs :ids", ["r1", "r2"])
    again = change("ADD active_runs :ids", ["r2", "r3"])
    fewer = change("DELETE active_runs :ids", ["r1", "r3"])
    emptied = change("DELETE active_runs :ids", ["r2"])

    assert joined["active_runs"] == {"SS": ["r1", "r2"]}
    assert again["active_runs"] == {"SS": ["r1", "r2", "r3"]}
    assert fewer["active_runs"] == {"SS": ["r2"]}
    assert emptied == {**key, "version": n(1)}


@pytest.mark.parametrize(
    ("call", "request_", "code"),
    [
        ("get_item", {"TableName": "nope", "Key": {"job_id": s("j")}}, "ResourceNotFoundException"),
        ("get_item", {"TableName": JOBS, "Key": {"owner": s("o")}}, "ValidationException"),
        ("get_item", {"TableName": RUNS, "Key": {"job_id": s("j")}}, "ValidationException"),
        ("get_item", {"TableName": JOBS, "Key": {"job_id": s("")}}, "ValidationException"),
        ("put_item", {"TableName": RUNS, "Item": {"job_id": s("j")}}, "ValidationException"),
        (
            "put_item",
            {"TableName": JOBS, "Item": {"job_id": s("j")}, "ReturnValues": "ALL_NEW"},
            "ValidationException",
        ),
        (
            "update_item",
            {
                "TableName": JOBS,
                "Key": {"job_id": s("j")},
                "UpdateExpression": "SET job_id = :v",
                "ExpressionAttributeValues": {":v": s("k")},
            },
            "ValidationException",
        ),
        (
            "update_item",
            {
                "TableName": JOBS,
                "Key": {"job_id": s("j")},
                "UpdateExpression": "SET a = :v",
                "ExpressionAttributeValues": {":v": s("k"), ":unused": s("u")},
            },
            "ValidationException",
        ),
        (
            "put_item",
            {"TableName": JOBS, "Item": {"job_id": s("j"), "big": s("x" * 410_000)}},
            "ValidationException",
        ),
        (
            "query",
            {
                "TableName": JOBS,
                "IndexName": "no_such_index",
                "KeyConditionExpression": "job_id = :j",
                "ExpressionAttributeValues": {":j": s("j")},
            },
            "ValidationException",
        ),
        (
            "query",
            {
                "TableName": RUNS,
                "KeyConditionExpression": "job_id = :j AND run_id BETWEEN :b AND :a",
                "ExpressionAttributeValues": {":j": s("j"), ":a": s("a"), ":b": s("b")},
            },
            "ValidationException",
        ),
    ],
)
def test_given_a_request_dynamodb_refuses_when_sent_then_it_fails_with_dynamodbs_code_and_writes_nothing(
    tables: SqliteTables, call: str, request_: dict[str, Any], code: str
) -> None:
    with pytest.raises(ClientError) as refused:
        getattr(tables, call)(**request_)

    assert code_of(refused) == code
    assert tables.scan(TableName=JOBS)["Count"] == 0
    assert tables.scan(TableName=RUNS)["Count"] == 0


def test_given_an_unknown_parameter_when_sent_then_it_is_refused_as_botocore_refuses_it(
    tables: SqliteTables,
) -> None:
    with pytest.raises(ParamValidationError, match='Unknown parameter in input: "Keys"'):
        tables.get_item(TableName=JOBS, Keys={"job_id": s("j")})


def test_given_projection_expressions_when_reading_then_only_those_attributes_come_back(
    tables: SqliteTables,
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("OK"), logs={"L": [s("l")]}))

    got = tables.get_item(
        TableName=RUNS,
        Key=key_of(run("j", "r")),
        ProjectionExpression="#s, logs, log_objects",
        ExpressionAttributeNames={"#s": "status"},
    )

    assert got == {"Item": {"status": s("OK"), "logs": {"L": [s("l")]}}}


# --- queries and scans --------------------------------------------------------------------------


@pytest.fixture
def runs(tables: SqliteTables) -> list[str]:
    """Five runs of job j (r1..r5, status alternating) and one of job k."""
    ids = [f"j_{i}" for i in range(1, 6)]
    for i, run_id in enumerate(ids):
        status = "OK" if i % 2 == 0 else "FAILED"
        tables.put_item(TableName=RUNS, Item=run("j", run_id, status=s(status)))
    tables.put_item(TableName=RUNS, Item=run("k", "k_1", status=s("OK")))
    return ids


def query_runs(tables: SqliteTables, condition: str, **values: Any) -> dict[str, Any]:
    extra = {k: values.pop(k) for k in list(values) if k[0].isupper()}
    return tables.query(
        TableName=RUNS,
        KeyConditionExpression=condition,
        ExpressionAttributeValues={":j": s("j"), **{f":{k}": v for k, v in values.items()}},
        **extra,
    )


def run_ids(answer: dict[str, Any]) -> list[str]:
    return [i["run_id"]["S"] for i in answer["Items"]]


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("job_id = :j", {}, ["j_1", "j_2", "j_3", "j_4", "j_5"]),
        ("job_id = :j AND run_id = :a", {"a": s("j_2")}, ["j_2"]),
        ("job_id = :j AND run_id < :a", {"a": s("j_2")}, ["j_1"]),
        ("job_id = :j AND run_id <= :a", {"a": s("j_2")}, ["j_1", "j_2"]),
        ("job_id = :j AND run_id > :a", {"a": s("j_4")}, ["j_5"]),
        ("job_id = :j AND run_id >= :a", {"a": s("j_4")}, ["j_4", "j_5"]),
        (
            "job_id = :j AND run_id BETWEEN :a AND :b",
            {"a": s("j_2"), "b": s("j_4")},
            ["j_2", "j_3", "j_4"],
        ),
        ("job_id = :j AND begins_with(run_id, :a)", {"a": s("j_3")}, ["j_3"]),
        ("job_id = :j AND begins_with(run_id, :a)", {"a": s("k")}, []),
        ("run_id >= :a AND job_id = :j", {"a": s("j_5")}, ["j_5"]),
    ],
)
def test_given_a_key_condition_when_querying_then_the_partitions_items_in_range_come_in_key_order(
    tables: SqliteTables,
    runs: list[str],
    condition: str,
    values: dict[str, Any],
    expected: list[str],
) -> None:
    assert run_ids(query_runs(tables, condition, **values)) == expected


def test_given_a_backward_query_with_a_limit_and_a_filter_then_the_limit_counts_items_read_before_the_filter(
    tables: SqliteTables, runs: list[str]
) -> None:
    first = query_runs(
        tables,
        "job_id = :j",
        ok=s("OK"),
        ScanIndexForward=False,
        Limit=2,
        FilterExpression="#s = :ok",
        ExpressionAttributeNames={"#s": "status"},
    )
    rest = query_runs(
        tables,
        "job_id = :j",
        ok=s("OK"),
        ScanIndexForward=False,
        ExclusiveStartKey=first["LastEvaluatedKey"],
        FilterExpression="#s = :ok",
        ExpressionAttributeNames={"#s": "status"},
    )

    assert (run_ids(first), first["Count"], first["ScannedCount"]) == (["j_5"], 1, 2)
    assert first["LastEvaluatedKey"] == {"job_id": s("j"), "run_id": s("j_4")}
    assert (run_ids(rest), rest["Count"], rest["ScannedCount"]) == (["j_3", "j_1"], 2, 3)
    assert "LastEvaluatedKey" not in rest  # (nothing more to read)


def test_given_select_count_when_querying_then_only_the_counts_come_back(
    tables: SqliteTables, runs: list[str]
) -> None:
    answer = query_runs(tables, "job_id = :j", Select="COUNT")

    assert answer == {"Count": 5, "ScannedCount": 5}


def test_given_a_key_condition_on_other_attributes_when_querying_then_it_is_refused(
    tables: SqliteTables, runs: list[str]
) -> None:
    with pytest.raises(ClientError, match="missed key schema element: job_id"):
        query_runs(tables, "run_id = :j")
    with pytest.raises(ClientError, match="key condition not supported"):
        query_runs(tables, "job_id = :j AND #s = :j", ExpressionAttributeNames={"#s": "status"})


def test_given_an_index_when_paging_with_limit_and_start_key_then_every_item_comes_once_in_index_order(
    tables: SqliteTables,
) -> None:
    # three jobs created at the same instant: the table's keys order them within it
    stamps = {
        "job_c": "2026-01-01",
        "job_a": "2026-01-02",
        "job_b": "2026-01-02",
        "job_d": "2026-01-02",
    }
    for job_id, created in stamps.items():
        tables.put_item(TableName=JOBS, Item=job(job_id, "ann", created, spec=s("{}")))
    tables.put_item(TableName=JOBS, Item=job("job_z", "bob", "2026-01-01"))
    tables.put_item(TableName=JOBS, Item={"job_id": s("idem#1"), "fingerprint": s("f")})

    pages = list(
        tables.get_paginator("query").paginate(
            TableName=JOBS,
            IndexName=r.JOBS_BY_OWNER_INDEX,
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": s("ann")},
            PaginationConfig={"PageSize": 2},
        )
    )

    assert [[i["job_id"]["S"] for i in p["Items"]] for p in pages] == [
        ["job_c", "job_a"],
        ["job_b", "job_d"],
    ]
    assert pages[0]["LastEvaluatedKey"] == {
        "job_id": s("job_a"),
        "owner": s("ann"),
        "created_at": s("2026-01-02"),
    }
    # a KEYS_ONLY index shows the table's and the index's keys only
    assert pages[1]["Items"][0] == {
        "job_id": s("job_b"),
        "owner": s("ann"),
        "created_at": s("2026-01-02"),
    }


def test_given_an_index_when_asked_for_a_consistent_read_then_it_is_refused(
    tables: SqliteTables,
) -> None:
    with pytest.raises(ClientError, match="Consistent reads are not supported on global secondary"):
        tables.query(
            TableName=JOBS,
            IndexName=r.JOBS_BY_OWNER_INDEX,
            KeyConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":o": s("ann")},
            ConsistentRead=True,
        )


def test_given_number_sort_keys_when_querying_then_they_sort_as_numbers(
    tables: SqliteTables,
) -> None:
    for value in ("10", "9", "-1", "2.5"):
        tables.put_item(TableName="Numbered", Item={"p": s("x"), "n": n(value)})

    answer = tables.query(
        TableName="Numbered",
        KeyConditionExpression="p = :p AND n > :low",
        ExpressionAttributeValues={":p": s("x"), ":low": n(0)},
    )

    assert [i["n"]["N"] for i in answer["Items"]] == ["2.5", "9", "10"]


def test_given_a_scan_with_a_limit_and_a_filter_when_paged_then_every_item_is_seen_once(
    tables: SqliteTables, runs: list[str]
) -> None:
    pages = list(
        tables.get_paginator("scan").paginate(
            TableName=RUNS,
            Limit=4,
            FilterExpression="#s IN (:ok)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":ok": s("OK")},
        )
    )

    assert sorted(i["run_id"]["S"] for p in pages for i in p["Items"]) == [
        "j_1",
        "j_3",
        "j_5",
        "k_1",
    ]
    assert [p["ScannedCount"] for p in pages] == [4, 2]


def test_given_more_than_a_page_of_data_when_scanning_then_a_page_stops_near_a_megabyte(
    tables: SqliteTables, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_tables, "PAGE_BYTES", 1000)
    for i in range(10):
        tables.put_item(TableName=RUNS, Item=run("j", f"j_{i}", pad=s("x" * 300)))

    pages = list(tables.get_paginator("scan").paginate(TableName=RUNS))

    assert [p["Count"] for p in pages] == [3, 3, 3, 1]


# --- batches -----------------------------------------------------------------------------------


def test_given_batch_writes_and_reads_then_puts_and_deletes_apply_and_reads_answer_per_table(
    tables: SqliteTables,
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "gone"))
    tables.batch_write_item(
        RequestItems={
            RUNS: [
                {"PutRequest": {"Item": run("j", "a", x=n(1))}},
                {"DeleteRequest": {"Key": key_of(run("j", "gone"))}},
            ],
            JOBS: [{"PutRequest": {"Item": {"job_id": s("job_1")}}}],
        }
    )

    answer = tables.batch_get_item(
        RequestItems={
            RUNS: {
                "Keys": [key_of(run("j", "a")), key_of(run("j", "gone"))],
                "ConsistentRead": True,
            },
            JOBS: {"Keys": [{"job_id": s("job_1")}], "ProjectionExpression": "job_id"},
        }
    )

    assert answer == {
        "Responses": {RUNS: [run("j", "a", x=n(1))], JOBS: [{"job_id": s("job_1")}]},
        "UnprocessedKeys": {},
    }


def test_given_a_batch_naming_one_key_twice_when_sent_then_it_is_refused_whole(
    tables: SqliteTables,
) -> None:
    with pytest.raises(ClientError, match="duplicates"):
        tables.batch_write_item(
            RequestItems={
                RUNS: [
                    {"PutRequest": {"Item": run("j", "a")}},
                    {"DeleteRequest": {"Key": key_of(run("j", "a"))}},
                ]
            }
        )
    with pytest.raises(ClientError, match="Too many items"):
        tables.batch_write_item(
            RequestItems={RUNS: [{"PutRequest": {"Item": run("j", f"r{i}")}} for i in range(26)]}
        )

    assert tables.scan(TableName=RUNS)["Count"] == 0


# --- streams -------------------------------------------------------------------------------------


def events(tables: SqliteTables, after: int = 0) -> list[tuple[str, str, str | None, str | None]]:
    """(eventName, run id, old status, new status) of each stream record after ``after``."""
    found = []
    for record in tables.read_stream(r.RUNS_TABLE.id, after, 100):
        change = record["dynamodb"]
        found.append(
            (
                record["eventName"],
                change["Keys"]["run_id"]["S"],
                change.get("OldImage", {}).get("status", {}).get("S"),
                change.get("NewImage", {}).get("status", {}).get("S"),
            )
        )
    return found


def test_given_writes_to_the_runs_table_when_they_change_items_then_each_change_is_one_stream_record(
    tables: SqliteTables,
) -> None:
    key = key_of(run("j", "r"))
    tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("QUEUED")))
    tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("QUEUED")))  # no change
    tables.update_item(
        TableName=RUNS,
        Key=key,
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": s("RUNNING")},
    )
    tables.update_item(  # no change either
        TableName=RUNS,
        Key=key,
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": s("RUNNING")},
    )
    with pytest.raises(ClientError):  # refused: no record
        tables.delete_item(
            TableName=RUNS, Key=key, ConditionExpression="attribute_not_exists(run_id)"
        )
    tables.delete_item(TableName=RUNS, Key=key)
    tables.delete_item(TableName=RUNS, Key=key)  # nothing left to delete
    tables.put_item(TableName=JOBS, Item={"job_id": s("job_1")})  # (a table without a stream)

    assert events(tables) == [
        ("INSERT", "r", None, "QUEUED"),
        ("MODIFY", "r", "QUEUED", "RUNNING"),
        ("REMOVE", "r", "RUNNING", None),
    ]


def test_given_stream_records_when_read_then_they_have_the_shape_getrecords_answers(
    tables: SqliteTables, clock: FakeClock
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("OK")))

    (record,) = tables.read_stream(r.RUNS_TABLE.id, 0, 10)

    assert record["eventSource"] == "aws:dynamodb"
    assert record["dynamodb"]["ApproximateCreationDateTime"] == clock.at
    assert record["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert record["dynamodb"]["Keys"] == key_of(run("j", "r"))
    assert record["dynamodb"]["NewImage"] == run("j", "r", status=s("OK"))
    assert record["dynamodb"]["SequenceNumber"] == "1"
    assert "userIdentity" not in record


def test_given_stream_records_when_read_after_a_position_and_trimmed_then_sequence_numbers_keep_rising(
    tables: SqliteTables,
) -> None:
    for i in range(5):
        tables.put_item(TableName=RUNS, Item=run("j", f"r{i}"))

    first = tables.read_stream(r.RUNS_TABLE.id, 0, 2)
    later = tables.read_stream(r.RUNS_TABLE.id, 2, 10)
    tables.trim_stream(5)
    tables.put_item(TableName=RUNS, Item=run("j", "r9"))
    after_trim = tables.read_stream(r.RUNS_TABLE.id, 0, 10)

    assert [x["dynamodb"]["SequenceNumber"] for x in first] == ["1", "2"]
    assert [x["dynamodb"]["SequenceNumber"] for x in later] == ["3", "4", "5"]
    assert [x["dynamodb"]["SequenceNumber"] for x in after_trim] == ["6"]


def test_given_a_stream_record_that_cannot_be_written_when_an_item_is_then_neither_is_written(
    tables: SqliteTables, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("A")))
    monkeypatch.setattr(engine_tables, "_APPEND", "INSERT INTO nowhere VALUES (?, ?, ?, ?, ?, ?)")

    with pytest.raises(sqlite3.OperationalError):
        tables.put_item(TableName=RUNS, Item=run("j", "r", status=s("B")))
    with pytest.raises(sqlite3.OperationalError):
        tables.put_item(TableName=RUNS, Item=run("j", "new"))

    assert tables.get_item(TableName=RUNS, Key=key_of(run("j", "r")))["Item"]["status"] == s("A")
    assert tables.get_item(TableName=RUNS, Key=key_of(run("j", "new"))) == {}


# --- TTL -------------------------------------------------------------------------------------------


def test_given_expired_items_when_swept_then_at_most_the_limit_go_per_call_earliest_first_each_with_a_remove_record(
    tables: SqliteTables, clock: FakeClock
) -> None:
    now = int(clock.at.timestamp())
    for i in range(5):
        tables.put_item(TableName=RUNS, Item=run("j", f"r{i}", expires_at=n(now - 10 + i)))
    tables.put_item(TableName=RUNS, Item=run("j", "later", expires_at=n(now + 60)))
    tables.put_item(TableName=RUNS, Item=run("j", "kept"))
    seen_before = len(events(tables))

    still_there = tables.get_item(TableName=RUNS, Key=key_of(run("j", "r0")))  # (until swept)
    first = tables.sweep_expired(limit=2)
    left_after_first = run_ids(query_runs(tables, "job_id = :j"))
    second, third = tables.sweep_expired(limit=2), tables.sweep_expired(limit=2)
    removed = tables.read_stream(r.RUNS_TABLE.id, seen_before, 100)

    assert "Item" in still_there
    assert (first, second, third) == (2, 2, 1)
    assert left_after_first == ["kept", "later", "r2", "r3", "r4"]
    assert run_ids(query_runs(tables, "job_id = :j")) == ["kept", "later"]
    assert [x["dynamodb"]["Keys"]["run_id"]["S"] for x in removed] == ["r0", "r1", "r2", "r3", "r4"]
    assert {x["eventName"] for x in removed} == {"REMOVE"}
    assert all(
        x["userIdentity"] == {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
        for x in removed
    )
    assert removed[0]["dynamodb"]["OldImage"] == run("j", "r0", expires_at=n(now - 10))

    clock.move(61)
    assert tables.sweep_expired() == 1  # the later one, once its time has passed


def test_given_an_item_whose_ttl_attribute_is_no_number_when_swept_then_it_is_kept(
    tables: SqliteTables,
) -> None:
    tables.put_item(TableName=JOBS, Item={"job_id": s("x"), "expires_at": s("1")})

    assert tables.sweep_expired() == 0
    assert tables.scan(TableName=JOBS)["Count"] == 1


# --- observer ------------------------------------------------------------------------------------


def test_given_an_observer_when_calls_are_made_then_it_hears_each_with_the_images_written_which_the_caller_never_sees(
    tables: SqliteTables, heard: Heard
) -> None:
    item = run("j", "r", status=s("A"))
    put = tables.put_item(TableName=RUNS, Item=item)
    with pytest.raises(ClientError):
        tables.put_item(
            TableName=RUNS, Item=run("j", "r"), ConditionExpression="attribute_not_exists(run_id)"
        )
    tables.get_item(TableName=RUNS, Key=key_of(item))
    deleted = tables.delete_item(TableName=RUNS, Key=key_of(item))

    operations = [c[0] for c in heard.calls]
    written = [c[2].get("_written") for c in heard.calls]

    assert operations == [
        "dynamodb:PutItem",
        "dynamodb:PutItem",
        "dynamodb:GetItem",
        "dynamodb:DeleteItem",
    ]
    assert written == [
        [(RUNS, None, item)],
        [(RUNS, item, item)],  # refused: the item as it stays
        None,
        [(RUNS, item, None)],
    ]
    assert heard.calls[1][2]["Error"]["Code"] == "ConditionalCheckFailedException"
    assert heard.calls[0][1] == {"TableName": RUNS, "Item": item}
    assert put == {}
    assert deleted == {}


def test_given_an_item_when_read_for_metering_then_it_is_read_unheard(
    tables: SqliteTables, heard: Heard
) -> None:
    tables.put_item(TableName=RUNS, Item=run("j", "r"))
    heard.calls.clear()

    assert tables.stored(RUNS, key_of(run("j", "r"))) == run("j", "r")
    assert tables.stored(RUNS, key_of(run("j", "other"))) is None
    assert heard.calls == []


def test_given_the_tables_when_described_then_key_schemas_and_indexes_are_chronoqs(
    tables: SqliteTables,
) -> None:
    jobs = tables.describe_table(TableName=JOBS)["Table"]
    runs = tables.describe_table(TableName=RUNS)["Table"]

    assert jobs["KeySchema"] == [{"AttributeName": "job_id", "KeyType": "HASH"}]
    assert jobs["GlobalSecondaryIndexes"][0]["IndexName"] == r.JOBS_BY_OWNER_INDEX
    assert jobs["GlobalSecondaryIndexes"][0]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert runs["KeySchema"] == [
        {"AttributeName": "job_id", "KeyType": "HASH"},
        {"AttributeName": "run_id", "KeyType": "RANGE"},
    ]
    assert runs["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"


# --- the database file -------------------------------------------------------------------------------


def test_given_a_file_database_when_reopened_then_items_and_stream_records_are_kept(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "tables.db"
    first = SqliteTables(path, r.TABLES, NAMES, clock=clock.now)
    first.put_item(TableName=RUNS, Item=run("j", "r1", status=s("OK")))
    first.put_item(TableName=RUNS, Item=run("j", "r2", blob={"B": b"\x01"}))
    first.trim_stream(1)
    first.close()

    again = SqliteTables(path, r.TABLES, NAMES, clock=clock.now)
    items = run_ids(query_runs(again, "job_id = :j"))
    stream = events(again)
    again.put_item(TableName=RUNS, Item=run("j", "r3"))
    numbers = [x["dynamodb"]["SequenceNumber"] for x in again.read_stream(r.RUNS_TABLE.id, 0, 10)]
    blob = again.get_item(TableName=RUNS, Key=key_of(run("j", "r2")))["Item"]["blob"]
    again.close()

    assert items == ["r1", "r2"]
    assert stream == [("INSERT", "r2", None, None)]
    assert numbers == ["2", "3"]
    assert blob == {"B": b"\x01"}
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_given_a_database_of_a_newer_schema_when_opened_then_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tables.db"
    SqliteTables(path, r.TABLES).close()
    newer = sqlite3.connect(path)
    newer.execute(f"PRAGMA user_version={engine_tables.SCHEMA_VERSION + 1}")
    newer.close()

    newer_version = engine_tables.SCHEMA_VERSION + 1
    with pytest.raises(UnsupportedDatabase, match=f"schema version {newer_version}"):
        SqliteTables(path, r.TABLES)


def test_given_a_database_made_before_a_table_gained_an_index_when_opened_then_its_items_stay_and_the_index_answers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tables.db"
    before = tuple(replace(t, indexes=()) if t is r.RUNS_TABLE else t for t in r.TABLES)
    old = SqliteTables(path, before)
    old.put_item(TableName="Runs", Item={"job_id": {"S": "j"}, "run_id": {"S": "r1"}})
    old.close()

    tables = SqliteTables(path, r.TABLES)
    tables.put_item(
        TableName="Runs",
        Item={
            "job_id": {"S": "j"},
            "run_id": {"S": "r2"},
            "waits_on": {"S": "flow#f"},
            "wait_order": {"S": "1#a"},
        },
    )

    assert [i["run_id"]["S"] for i in tables.scan(TableName="Runs")["Items"]] == ["r1", "r2"]
    found = tables.query(
        TableName="Runs",
        IndexName=r.RUNS_WAITING_INDEX,
        KeyConditionExpression="waits_on = :f",
        ExpressionAttributeValues={":f": {"S": "flow#f"}},
    )["Items"]
    assert [i["run_id"]["S"] for i in found] == ["r2"]


WRITER = """
import sys
from pathlib import Path
from chronoq import resources as r
from chronoq.local.engine.tables import SqliteTables

tables = SqliteTables(Path(sys.argv[1]), r.TABLES)
for i in range(100_000):
    tables.put_item(TableName="Runs", Item={"job_id": {"S": "j"}, "run_id": {"S": f"r{i:06d}"}})
    print(i, flush=True)
"""


def test_given_a_process_killed_while_writing_when_the_database_is_reopened_then_every_write_it_answered_is_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tables.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    answered = -1
    for line in writer.stdout:
        answered = int(line)
        if answered >= 200:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait()

    tables = SqliteTables(path, r.TABLES)
    kept = tables.query(
        TableName="Runs",
        KeyConditionExpression="job_id = :j",
        ExpressionAttributeValues={":j": s("j")},
        Select="COUNT",
    )["Count"]
    records = len(tables.read_stream(r.RUNS_TABLE.id, 0, 1_000_000))
    tables.close()

    assert answered >= 200
    assert kept >= answered + 1
    assert records == kept  # (each write's stream record committed with it)


# --- PartiQL: the INSERT chronoq adds audit entries with ---------------------------------------

AUDIT = r.AUDIT_TABLE.id
INSERT = f"INSERT INTO \"{AUDIT}\" VALUE {{'job_id': ?, 'entry': ?, 'note': ?}}"


def test_given_an_insert_when_executed_then_its_parameters_make_the_item(
    tables: SqliteTables, heard: Heard
) -> None:
    answer = tables.execute_statement(Statement=INSERT, Parameters=[s("j"), s("e1"), s("first")])

    assert answer == {"Items": []}
    assert tables.stored(AUDIT, {"job_id": s("j"), "entry": s("e1")}) == {
        "job_id": s("j"),
        "entry": s("e1"),
        "note": s("first"),
    }
    operation, _, response = heard.calls[-1]
    assert operation == "dynamodb:ExecuteStatement"
    assert response["_written"] == [
        (AUDIT, None, tables.stored(AUDIT, {"job_id": s("j"), "entry": s("e1")}))
    ]


def test_given_an_item_when_an_insert_of_its_key_is_executed_then_refused_and_it_is_kept(
    tables: SqliteTables,
) -> None:
    tables.execute_statement(Statement=INSERT, Parameters=[s("j"), s("e1"), s("first")])

    with pytest.raises(tables.exceptions.DuplicateItemException) as refused:
        tables.execute_statement(Statement=INSERT, Parameters=[s("j"), s("e1"), s("forged")])

    assert refused.value.response["Error"]["Code"] == "DuplicateItemException"
    kept = tables.stored(AUDIT, {"job_id": s("j"), "entry": s("e1")})
    assert kept is not None
    assert kept["note"] == s("first")


@pytest.mark.parametrize(
    ("statement", "parameters"),
    [
        ("UPDATE \"Audit\" SET note = ? WHERE job_id = 'j' AND entry = 'e1'", [s("x")]),
        ("DELETE FROM \"Audit\" WHERE job_id = 'j' AND entry = 'e1'", []),
        ('SELECT * FROM "Audit"', []),
        (f"INSERT INTO \"{AUDIT}\" VALUE {{'job_id': 'j', 'entry': 'e1'}}", []),
        (INSERT, [s("j"), s("e1")]),  # (one parameter short)
    ],
)
def test_given_another_statement_when_executed_then_it_is_refused_and_nothing_changes(
    tables: SqliteTables, statement: str, parameters: list[dict[str, str]]
) -> None:
    tables.execute_statement(Statement=INSERT, Parameters=[s("j"), s("e1"), s("first")])

    with pytest.raises(tables.exceptions.ValidationException):
        tables.execute_statement(Statement=statement, Parameters=parameters)

    kept = tables.stored(AUDIT, {"job_id": s("j"), "entry": s("e1")})
    assert kept is not None
    assert kept["note"] == s("first")
