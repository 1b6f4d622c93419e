"""The engine's calls priced as the AWS requests they stand for (chronoq.local.usage.Meter
.observe): the request and its caller, DynamoDB's units from the item images each write hands
over, the runs that reached a final status, and the IAM call each makes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from chronoq import resources as r
from chronoq.aws.store import DynamoStore
from chronoq.domain.runs import RunStatus
from chronoq.fakes.clock import FakeClock
from chronoq.local.calls import RECORDER, Call
from chronoq.local.engine.functions import LocalFunctions
from chronoq.local.engine.tables import SqliteTables
from chronoq.local.usage import STATE_MACHINE, Meter, Usage, calling_as

from tests.contract.backends import NOW, a_job, a_run

REGION, ACCOUNT = "us-east-1", "123456789012"


@pytest.fixture
def usage() -> Usage:
    return Usage()


@pytest.fixture
def store(usage: Usage) -> Iterator[DynamoStore]:
    meter = Meter(usage, {t.id: t for t in r.TABLES}, REGION, ACCOUNT)
    tables: SqliteTables

    def observe(operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        meter.observe(operation, request, response, stored=tables.stored)

    tables = SqliteTables(None, r.TABLES, clock=FakeClock(now=NOW), observer=observe)
    yield DynamoStore(cast(Any, tables), r.JOBS_TABLE.id, r.RUNS_TABLE.id, r.SCHEDULE_TABLE.id)
    tables.close()


def test_given_a_run_ended_on_the_engine_when_metered_then_each_request_and_its_units_count_and_the_run_finished(
    store: DynamoStore, usage: Usage
) -> None:
    job = a_job()
    run = a_run(job)
    store.create_run(run, NOW)

    store.end_run(run, RunStatus.SKIPPED, NOW, "skipped", [RunStatus.SCHEDULED])

    assert usage.requests["dynamodb:PutItem"] == 1
    assert usage.requests["dynamodb:UpdateItem"] == 1
    assert usage.write_units == 2  # (two writes of an item under 1 KB)
    assert usage.runs_finished == 1


def test_given_a_conditional_write_the_engine_refused_when_metered_then_it_is_billed_as_dynamodb_bills_it(
    store: DynamoStore, usage: Usage
) -> None:
    job = a_job()
    run = a_run(job)
    store.create_run(run, NOW)
    store.end_run(run, RunStatus.SKIPPED, NOW, "skipped", [RunStatus.SCHEDULED])
    before = usage.write_units

    again = store.end_run(run, RunStatus.SKIPPED, NOW, "skipped", [RunStatus.SCHEDULED])

    assert not again
    assert usage.write_units == before + 1  # (a refused write still consumes a unit)
    assert usage.runs_finished == 1


def test_given_the_state_machine_invoking_a_function_when_metered_then_its_iam_call_names_the_function(
    usage: Usage,
) -> None:
    meter = Meter(usage, {}, REGION, ACCOUNT)
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:chronoq-local-runner"

    class Runtime:
        def names(self) -> list[str]:
            return ["chronoq-local-runner"]

        def invoke(self, name: str, event: Any) -> Any:
            return {"ok": name}

    functions = LocalFunctions(
        cast(Any, Runtime()), lambda: None, observer=lambda o, q, a: meter.observe(o, q, a)
    )

    with calling_as(STATE_MACHINE):
        answer = functions.invoke(FunctionName=arn, Payload=b"{}")

    assert answer["Payload"].read() == b'{"ok": "chronoq-local-runner"}'
    assert usage.requests["lambda:Invoke"] == 1
    assert Call(STATE_MACHINE, "lambda:InvokeFunction", arn) in RECORDER.recorded


def test_given_a_transaction_on_the_engine_when_metered_then_each_item_costs_twice_a_write_and_iam_sees_each_items_action(
    store: DynamoStore, usage: Usage
) -> None:
    """DynamoDB bills a transaction's writes at two units per KB of each item, refused or
    not; IAM authorizes each item as its own action (UpdateItem, PutItem)."""
    db = cast(Any, store)._db
    jobs, runs = r.JOBS_TABLE.id, r.RUNS_TABLE.id
    items: list[dict[str, Any]] = [
        {"Put": {"TableName": runs, "Item": {"job_id": {"S": "j"}, "run_id": {"S": "r"}}}},
        {
            "Update": {
                "TableName": jobs,
                "Key": {"job_id": {"S": "usage#alice"}},
                "UpdateExpression": "ADD version :one",
                "ConditionExpression": "attribute_not_exists(version)",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
    ]

    db.transact_write_items(TransactItems=items)
    assert usage.write_units == 4
    with pytest.raises(db.exceptions.TransactionCanceledException) as refused:
        db.transact_write_items(TransactItems=items)  # (the version exists now)

    reasons = refused.value.response["CancellationReasons"]
    assert [reason["Code"] for reason in reasons] == ["None", "ConditionalCheckFailed"]
    assert usage.write_units == 8
    assert usage.requests["dynamodb:TransactWriteItems"] == 2
    own = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table"
    assert {
        (c.action, c.resource) for c in RECORDER.recorded if c.action.startswith("dynamodb:")
    } >= {("dynamodb:PutItem", f"{own}/{runs}"), ("dynamodb:UpdateItem", f"{own}/{jobs}")}


def test_given_an_audit_entry_added_on_the_engine_when_metered_then_iam_sees_a_partiql_insert_and_a_unit_is_billed(
    usage: Usage,
) -> None:
    """An INSERT through ExecuteStatement is authorized as dynamodb:PartiQLInsert on the table
    it names (what the api function's role grants on the audit table); DynamoDB bills it as a
    write of its item, refused (the key exists) or not. (The tables named as chronoq local
    names them: the calls are the stack's, for the least-privilege check.)"""
    from chronoq.aws.audit import DynamoAuditTrail
    from chronoq.local.aws import table_name
    from chronoq.usecases.ports import EntryExists

    from tests.contract.test_audit_trail import an_entry

    names = {t.id: table_name(t) for t in r.TABLES}
    meter = Meter(usage, {names[t.id]: t for t in r.TABLES}, REGION, ACCOUNT)
    tables: SqliteTables

    def observe(operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        meter.observe(operation, request, response, stored=tables.stored)

    tables = SqliteTables(None, r.TABLES, names, clock=FakeClock(now=NOW), observer=observe)
    audit = names[r.AUDIT_TABLE.id]
    trail = DynamoAuditTrail(cast(Any, tables), audit)
    entry = an_entry()
    try:
        with calling_as(r.API_FUNCTION.name):
            trail.append(entry)
            with pytest.raises(EntryExists):
                trail.append(entry)
            trail.page(entry.job_id, entry.owner, 10)
    finally:
        tables.close()

    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{audit}"
    assert Call(r.API_FUNCTION.name, "dynamodb:PartiQLInsert", arn) in RECORDER.recorded
    assert Call(r.API_FUNCTION.name, "dynamodb:Query", arn) in RECORDER.recorded
    assert usage.requests["dynamodb:ExecuteStatement"] == 2
    # the entry (1) and its owner index entry (1); the refused one, billed as DynamoDB does (1)
    assert usage.write_units == 3
