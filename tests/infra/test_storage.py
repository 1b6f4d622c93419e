"""The tables, the output bucket and the queues of the synthesized stack against
chronoq.resources."""

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
            "Projection": {"ProjectionType": i.projection.value},
        }
        for i in spec.indexes
    ]
    expected_ttl = {"AttributeName": spec.ttl_attribute, "Enabled": True}
    assert props.get("TimeToLiveSpecification") == (expected_ttl if spec.ttl_attribute else None)
    expected_stream = {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props.get("StreamSpecification") == (expected_stream if spec.stream else None)


def test_given_the_jobs_table_when_synthesized_then_its_owner_index_holds_keys_only(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.storage.jobs)["Properties"]

    index, silent = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == r.JOBS_BY_OWNER_INDEX
    # a job is written on every run of it: only a change of its keys may write the index
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    # silent jobs (docs/api/notifications.md, "Silence"): only an expectation item while it
    # is silent carries the index's keys; small, it is projected whole
    assert silent["IndexName"] == r.JOBS_SILENT_INDEX
    assert [k["AttributeName"] for k in silent["KeySchema"]] == ["silent_owner", "silent_since"]
    assert silent["Projection"] == {"ProjectionType": "ALL"}


def test_given_the_runs_table_when_synthesized_then_it_streams_new_and_old_images(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.storage.runs)["Properties"]

    assert r.RUNS_TABLE.stream
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


@pytest.mark.parametrize("spec", [r.JOBS_TABLE, r.RUNS_TABLE], ids=lambda t: t.id)
def test_given_a_table_of_record_when_synthesized_then_it_is_recoverable_and_retained(
    synth: Synthesis, spec: r.Table
) -> None:
    table = synth.resource(synth.stack.storage.tables[spec.id])

    assert table["Properties"]["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True
    }
    assert table["DeletionPolicy"] == "Retain"


def test_given_the_output_bucket_when_synthesized_then_it_is_private_encrypted_and_retained(
    synth: Synthesis,
) -> None:
    bucket = synth.resource(synth.stack.storage.outputs)
    props = bucket["Properties"]

    # (and the archive's: tests/infra/test_archive.py)
    assert set(synth.of_type("AWS::S3::Bucket")) == {
        synth.logical_id(synth.stack.storage.outputs),
        synth.logical_id(synth.stack.archive.bucket),
    }
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        ]
    }
    assert bucket["DeletionPolicy"] == "Retain"  # history, like the runs table


def test_given_the_output_bucket_when_synthesized_then_objects_expire_with_their_runs(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.storage.outputs)["Properties"]

    assert props["LifecycleConfiguration"] == {
        "Rules": [{"ExpirationInDays": r.RUN_RETENTION_SECONDS // 86400, "Status": "Enabled"}]
    }


def test_given_the_output_bucket_when_synthesized_then_it_refuses_plain_http(
    synth: Synthesis,
) -> None:
    bucket = synth.ref(synth.stack.storage.outputs)
    (policy,) = (
        p["Properties"]
        for p in synth.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == bucket
    )

    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["PolicyDocument"]["Statement"]
    )


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
    queues = [
        *synth.stack.queues.by_priority.values(),
        synth.stack.queues.dead_letter,
        synth.stack.notifications.dead_letter,
        synth.stack.archive.dead_letter,
    ]
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
