"""The fakes' reading of the run state machine's conditional writes (chronoq.fakes.asl) held
to DynamoDB's: each condition of the ASL file, tried by moto's DynamoDB on an item in every
state the state machine may find it in (none, and a run in each status), accepts exactly the
writes the reading accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain.runs import RunStatus
from chronoq.fakes.asl import Gate, gates
from chronoq.local.aws import LocalAWS

JOB_ID = "job_0123456789abcdef"
RUN_ID = f"{JOB_ID}_20261126T120000Z"
#: What each table's states find: no item, or one in each state that matters to them.
ITEMS: dict[str, list[dict[str, Any] | None]] = {
    r.ASL_RUNS_TABLE: [None]
    + [{"job_id": JOB_ID, "run_id": RUN_ID, "status": s.value} for s in RunStatus],
    r.ASL_JOBS_TABLE: [None, {"job_id": JOB_ID, "version": 3}],
}
TABLES = {r.ASL_RUNS_TABLE: r.RUNS_TABLE, r.ASL_JOBS_TABLE: r.JOBS_TABLE}


def _used(gate: Gate) -> tuple[dict[str, str], dict[str, Any]]:
    """The names and (static) values the condition uses."""
    tokens = set(re.findall(r"[#:][A-Za-z0-9_]+", gate.expression))
    names = {k: v for k, v in gate.names.items() if k in tokens}
    values = {k: v for k, v in gate.values.items() if k in tokens}
    assert all(not any(t.endswith(".$") for t in v) for v in values.values()), gate.state
    return names, values


def _shown(item: dict[str, Any] | None) -> str:
    return "no-item" if item is None else str(item.get("status", "item"))


CASES = [
    pytest.param(gate, item, id=f"{name}-{_shown(item)}")
    for name, gate in sorted(gates().items())
    for item in ITEMS[gate.table]
]


@pytest.mark.parametrize(("gate", "item"), CASES)
def test_given_a_conditional_write_of_the_asl_when_dynamodb_tries_it_then_it_accepts_it_exactly_when_the_fakes_reading_does(
    local_aws: LocalAWS, gate: Gate, item: dict[str, Any] | None
) -> None:
    dynamodb = local_aws.client("dynamodb")
    table = TABLES[gate.table]
    name = local_aws.env[table.env]
    key = {"job_id": JOB_ID} if table.sort_key is None else {"job_id": JOB_ID, "run_id": RUN_ID}
    dynamodb.delete_item(TableName=name, Key=codecs.dump(key))
    if item is not None:
        dynamodb.put_item(TableName=name, Item=codecs.dump(item))
    names, values = _used(gate)

    try:
        dynamodb.update_item(
            TableName=name,
            Key=codecs.dump(key),
            UpdateExpression="SET probe = :probe",
            ConditionExpression=gate.expression,
            ExpressionAttributeValues={**values, ":probe": {"S": "written"}},
            **({"ExpressionAttributeNames": names} if names else {}),
        )
        accepted = True
    except dynamodb.exceptions.ConditionalCheckFailedException:
        accepted = False

    assert accepted is gate.allows(item)
