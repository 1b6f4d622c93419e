"""The tables and queues of the synthesized stack against chronoq.resources."""

from __future__ import annotations

from typing import Any

import pytest
from chronoq import resources as r

from tests.infra.synthesis import Synthesis


def _key_schema(partition_key: str, sort_key: str | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition_key, "KeyType": "HASH"}]
    if sort_key:
        schema.append({"AttributeName": sort_key, "KeyType": "RANGE"})
    return schema


def test_given_the_stack_when_synthesized_then_it_has_exactly_the_resources_tables(
    synth: Synthesis,
) -> None:
    assert len(synth.of_type("AWS::DynamoDB::Table")) == len(r.TABLES)


@pytest.mark.parametrize("spec", r.TABLES, ids=lambda t: t.id)
def test_given_the_stack_when_synthesized_then_tables_match_resources(
    synth: Synthesis, spec: r.Table
) -> None:
    props = synth.resource(synth.stack.storage.tables[spec.id])["Properties"]
    keys = {
        spec.partition_key,
        spec.sort_key,
        *(k for i in spec.indexes for k in (i.partition_key, i.sort_key)),
    }

    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == _key_schema(spec.partition_key, spec.sort_key)
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == [
        {"AttributeName": name, "AttributeType": "S"} for name in sorted(k for k in keys if k)
    ]
    assert props.get("GlobalSecondaryIndexes", []) == [
        {
            "IndexName": i.name,
            "KeySchema": _key_schema(i.partition_key, i.sort_key),
            "Projection": {"ProjectionType": "ALL"},
        }
        for i in spec.indexes
    ]
    expected_ttl = {"AttributeName": spec.ttl_attribute, "Enabled": True}
    assert props.get("TimeToLiveSpecification") == (expected_ttl if spec.ttl_attribute else None)


@pytest.mark.parametrize("spec", [r.JOBS_TABLE, r.RUNS_TABLE], ids=lambda t: t.id)
def test_given_a_table_of_record_when_synthesized_then_it_is_recoverable_and_retained(
    synth: Synthesis, spec: r.Table
) -> None:
    table = synth.resource(synth.stack.storage.tables[spec.id])

    assert table["Properties"]["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True
    }
    assert table["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("spec", r.QUEUES, ids=lambda q: q.id)
def test_given_the_stack_when_synthesized_then_queues_match_resources(
    synth: Synthesis, spec: r.Queue
) -> None:
    queues = synth.stack.queues
    props = synth.resource(queues.by_priority[spec.priority])["Properties"]

    assert props["VisibilityTimeout"] == spec.visibility_timeout_seconds
    assert props["RedrivePolicy"] == {
        "deadLetterTargetArn": synth.arn(queues.dead_letter),
        "maxReceiveCount": spec.max_receive_count,
    }


def test_given_the_queues_when_synthesized_then_each_is_encrypted_and_refuses_plain_http(
    synth: Synthesis,
) -> None:
    queues = [*synth.stack.queues.by_priority.values(), synth.stack.queues.dead_letter]
    policies = synth.of_type("AWS::SQS::QueuePolicy").values()

    def refuses_plain_http(statement: dict[str, Any]) -> bool:
        condition = statement.get("Condition", {}).get("Bool", {})
        return (statement["Effect"], condition) == ("Deny", {"aws:SecureTransport": "false"})

    assert len(synth.of_type("AWS::SQS::Queue")) == len(queues)
    for queue in queues:
        assert synth.resource(queue)["Properties"]["SqsManagedSseEnabled"] is True
        assert any(
            synth.ref(queue) in p["Properties"]["Queues"]
            and any(refuses_plain_http(s) for s in p["Properties"]["PolicyDocument"]["Statement"])
            for p in policies
        )
