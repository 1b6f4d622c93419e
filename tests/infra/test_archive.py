"""The archive in the synthesized stack: the runs stream's two readers (and no third), the
archiver's mapping and its least-privilege role, the bucket and its lifecycle (deploy
settings), the Glue table with partition projection, and Athena's workgroup."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.domain import archive
from chronoq.domain import limits as lim
from chronoq.domain.archive import Archived, ArchivedEntry
from chronoq.domain.audit import Action, AuditEntry, Source
from chronoq.domain.runs import TERMINAL_STATUSES, Priority, Run, RunStatus

from tests.infra.synthesis import Synthesis, allowed, grants, rendered


def _stream_mappings(synth: Synthesis, table: Any = None) -> dict[str, dict[str, Any]]:
    """The event source mappings of the runs table's stream (of ``table``'s), by the
    function they feed."""
    table = table if table is not None else synth.stack.storage.runs
    stream = {"Fn::GetAtt": [synth.logical_id(table), "StreamArn"]}
    functions = {synth.logical_id(f): name for name, f in synth.stack.functions.items()}
    return {
        functions[m["Properties"]["FunctionName"]["Ref"]]: m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == stream
    }


def _lifecycle(template: dict[str, Any], bucket: str) -> dict[str, dict[str, Any]]:
    rules = template["Resources"][bucket]["Properties"]["LifecycleConfiguration"]["Rules"]
    return {rule["Id"]: rule for rule in rules}


def test_given_the_runs_stream_when_synthesized_then_it_has_at_most_two_readers_those_of_the_fanout(
    synth: Synthesis,
) -> None:
    mappings = _stream_mappings(synth)

    assert len(mappings) <= fanout.MAX_READERS
    assert set(mappings) == {reader.name for reader in fanout.RUNS_STREAM_READERS}
    for reader in fanout.RUNS_STREAM_READERS:
        mapping = mappings[reader.name]
        assert mapping["BatchSize"] == reader.batch_size, reader.name
        assert mapping.get("MaximumBatchingWindowInSeconds", 0) == reader.batching_window_seconds
        assert mapping["MaximumRetryAttempts"] == reader.max_retries, reader.name


def test_given_every_table_stream_when_synthesized_then_at_most_two_readers_each_those_of_the_fanout(
    synth: Synthesis,
) -> None:
    read = {
        m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"].get("Fn::GetAtt", [None, None])[1] == "StreamArn"
    }
    tables = synth.stack.storage.tables

    # (every stream read is one the fanout names, and the fanout's every one is read)
    assert read == {synth.logical_id(tables[table_id]) for table_id in fanout.STREAM_READERS}
    for table_id, table in synth.stack.storage.tables.items():
        mappings = _stream_mappings(synth, table)
        readers = fanout.STREAM_READERS.get(table_id, ())
        assert len(mappings) <= fanout.MAX_READERS, table_id
        assert set(mappings) == {reader.function.name for reader in readers}, table_id


def test_given_the_audit_stream_when_synthesized_then_the_archiver_reads_every_entry_added_in_long_batches(
    synth: Synthesis,
) -> None:
    (spec,) = [
        t
        for t in synth.of_type("AWS::DynamoDB::Table").values()
        if t["Properties"].get("KeySchema", [{}])[-1].get("AttributeName") == "entry"
    ]
    mapping = _stream_mappings(synth, synth.stack.storage.audit)["archiver"]
    (pattern,) = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]

    assert spec["Properties"]["StreamSpecification"]["StreamViewType"] in (
        "NEW_IMAGE",
        "NEW_AND_OLD_IMAGES",
    )
    assert pattern == {"eventName": ["INSERT"]}
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == fanout.AUDIT_ARCHIVER.batch_size == 10_000
    assert mapping["MaximumBatchingWindowInSeconds"] == 240
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MaximumRetryAttempts"] == fanout.AUDIT_ARCHIVER.max_retries
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": synth.arn(synth.stack.archive.dead_letter)}
    }


def test_given_the_archiver_when_synthesized_then_it_reads_ended_runs_in_long_batches(
    synth: Synthesis,
) -> None:
    mapping = _stream_mappings(synth)["archiver"]
    (pattern,) = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]

    assert pattern == {
        "dynamodb": {"NewImage": {"status": {"S": sorted(s.value for s in TERMINAL_STATUSES)}}}
    }
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == 10_000
    # within 5 minutes of a run's end: the window, and the archiver's own time
    assert mapping["MaximumBatchingWindowInSeconds"] == 240
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": synth.arn(synth.stack.archive.dead_letter)}
    }


def test_given_the_archivers_role_when_synthesized_then_it_may_only_write_the_archive_and_read_the_stream(
    synth: Synthesis,
) -> None:
    stack = synth.stack
    bucket = synth.logical_id(stack.archive.bucket)
    statements = synth.role_statements(stack.archive.function)
    own_log = rendered(synth.arn(stack.archive.function.log_group))
    stream = f"${{{synth.logical_id(stack.storage.runs)}.StreamArn}}"
    audit = f"${{{synth.logical_id(stack.storage.audit)}.StreamArn}}"
    dead_letter = rendered(synth.arn(stack.archive.dead_letter))

    assert grants(statements) == {
        ("s3:PutObject", f"${{{bucket}.Arn}}/{r.ARCHIVE_PREFIX}/*", "null"),
        # the event source mappings', acting with the archiver's role (the runs stream's,
        # the audit stream's)
        ("dynamodb:DescribeStream", stream, "null"),
        ("dynamodb:GetRecords", stream, "null"),
        ("dynamodb:GetShardIterator", stream, "null"),
        ("dynamodb:DescribeStream", audit, "null"),
        ("dynamodb:GetRecords", audit, "null"),
        ("dynamodb:GetShardIterator", audit, "null"),
        ("dynamodb:ListStreams", "*", "null"),
        ("sqs:SendMessage", dead_letter, "null"),
        ("sqs:GetQueueAttributes", dead_letter, "null"),
        ("sqs:GetQueueUrl", dead_letter, "null"),
        ("logs:CreateLogStream", own_log, "null"),
        ("logs:PutLogEvents", own_log, "null"),
        ("xray:PutTraceSegments", "*", "null"),
        ("xray:PutTelemetryRecords", "*", "null"),
    }
    assert len(allowed(statements)) == len(statements)  # (nothing denied, nothing else)


def test_given_the_archive_bucket_when_synthesized_then_it_is_private_encrypted_retained_and_tls_only(
    synth: Synthesis,
) -> None:
    bucket = synth.resource(synth.stack.archive.bucket)
    props = bucket["Properties"]
    (policy,) = (
        p["Properties"]
        for p in synth.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == synth.ref(synth.stack.archive.bucket)
    )

    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"),
        True,
    )
    assert props["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        ]
    }
    assert bucket["DeletionPolicy"] == "Retain"
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in policy["PolicyDocument"]["Statement"]
    )


def test_given_the_default_settings_when_synthesized_then_archived_objects_move_to_ia_then_expire(
    synth: Synthesis,
) -> None:
    rules = _lifecycle(synth.template, synth.logical_id(synth.stack.archive.bucket))

    assert rules["archive"] == {
        "Id": "archive",
        "Prefix": f"{r.ARCHIVE_PREFIX}/",
        "Status": "Enabled",
        "Transitions": [
            {
                "StorageClass": "STANDARD_IA",
                "TransitionInDays": r.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS,
            }
        ],
        "ExpirationInDays": r.DEFAULT_ARCHIVE_EXPIRY_DAYS,
    }
    assert rules["athena-results"]["Prefix"] == f"{r.ATHENA_RESULTS_PREFIX}/"
    assert rules["athena-results"]["ExpirationInDays"] == r.ATHENA_RESULTS_DAYS


def _from_context(tmp_path: Path, **context: str) -> tuple[Any, dict[str, Any]]:
    from app import stack_from_context

    app = App(outdir=str(tmp_path), context=context)
    stack = stack_from_context(app)
    return stack, dict(Template.from_stack(stack).to_json())


@pytest.mark.parametrize(
    ("context", "transition", "expiry"),
    [
        ({"archive_infrequent_access_days": "90", "archive_expiry_days": "3650"}, 90, 3650),
        ({"archive_infrequent_access_days": "0"}, None, r.DEFAULT_ARCHIVE_EXPIRY_DAYS),
        ({"archive_expiry_days": "0"}, r.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS, None),
    ],
)
def test_given_lifecycle_settings_in_the_context_when_synthesized_then_the_bucket_follows_them(
    tmp_path: Path, context: dict[str, str], transition: int | None, expiry: int | None
) -> None:
    stack, template = _from_context(tmp_path, **context)
    logical = stack.get_logical_id(stack.archive.bucket.node.default_child)
    rule = _lifecycle(template, logical)["archive"]

    assert [t["TransitionInDays"] for t in rule.get("Transitions", [])] == (
        [transition] if transition else []
    )
    assert rule.get("ExpirationInDays") == expiry


@pytest.mark.parametrize(
    "context",
    [
        {"archive_infrequent_access_days": "10"},  # S3: 30 days at least
        {"archive_infrequent_access_days": "60", "archive_expiry_days": "45"},
        {"archive_expiry_days": "-1"},
    ],
)
def test_given_a_lifecycle_s3_would_refuse_when_synthesized_then_it_is_refused(
    tmp_path: Path, context: dict[str, str]
) -> None:
    with pytest.raises(ValueError, match="archive_"):
        _from_context(tmp_path, **context)


def _glue_table(synth: Synthesis, name: str) -> dict[str, Any]:
    (table,) = [
        t
        for t in synth.of_type("AWS::Glue::Table").values()
        if t["Properties"]["TableInput"]["Name"] == name
    ]
    return table


def test_given_the_archive_table_when_synthesized_then_it_projects_owner_and_day_partitions(
    synth: Synthesis,
) -> None:
    table = _glue_table(synth, r.ARCHIVE_TABLE)
    props = table["Properties"]
    table_input = props["TableInput"]
    parameters = table_input["Parameters"]
    (database,) = synth.of_type("AWS::Glue::Database").values()

    assert props["DatabaseName"] == database["Properties"]["DatabaseInput"]["Name"]
    assert props["DatabaseName"] == "chronoq_archive"
    assert table_input["Name"] == r.ARCHIVE_TABLE
    assert table_input["PartitionKeys"] == [
        {"Name": "owner_key", "Type": "string"},
        {"Name": "day", "Type": "string"},
    ]
    assert {k: v for k, v in parameters.items() if k != "storage.location.template"} == {
        "classification": "json",
        "compressionType": "gzip",
        "projection.enabled": "true",
        "projection.owner_key.type": "injected",
        "projection.day.type": "date",
        "projection.day.format": "yyyy-MM-dd",
        "projection.day.range": f"{lim.EARLIEST_YEAR}-01-01,NOW+1DAYS",
        "projection.day.interval": "1",
        "projection.day.interval.unit": "DAYS",
    }
    bucket = synth.logical_id(synth.stack.archive.bucket)
    assert rendered(parameters["storage.location.template"]) == (
        f"s3://${{{bucket}}}/{r.ARCHIVE_PREFIX}/owner=${{owner_key}}/day=${{day}}/"
    )
    # (the keys the archiver writes: the template names them)
    key = archive.object_key(r.ARCHIVE_PREFIX, "alice", datetime(2026, 11, 26).date(), "1", "2")
    assert key.startswith(f"{r.ARCHIVE_PREFIX}/owner=alice/day=2026-11-26/")
    assert table_input["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"] == (
        "org.openx.data.jsonserde.JsonSerDe"
    )
    assert not synth.of_type("AWS::Glue::Crawler")


def test_given_the_archive_table_when_synthesized_then_its_columns_are_every_field_of_a_line(
    synth: Synthesis,
) -> None:
    table = _glue_table(synth, r.ARCHIVE_TABLE)
    columns = table["Properties"]["TableInput"]["StorageDescriptor"]["Columns"]
    at = datetime(2026, 11, 26, tzinfo=UTC)
    run = Run(
        id="job_a_1",
        job_id="job_a",
        owner="alice",
        status=RunStatus.FAILED,
        priority=Priority.NORMAL,
        scheduled_at=at,
    )

    assert [(c["Name"], c["Type"]) for c in columns] == list(archive.COLUMNS)
    assert {c["Name"] for c in columns} == set(Archived("1", run).line())
    assert not {c["Name"] for c in columns} & {n for n, _ in archive.PARTITIONS}


def test_given_the_audit_table_when_synthesized_then_it_projects_each_owners_audit_days_and_every_field_of_a_line(
    synth: Synthesis,
) -> None:
    runs = _glue_table(synth, r.ARCHIVE_TABLE)["Properties"]["TableInput"]
    table = _glue_table(synth, r.ARCHIVE_AUDIT_TABLE)["Properties"]
    audit = table["TableInput"]
    parameters = audit["Parameters"]
    bucket = synth.logical_id(synth.stack.archive.bucket)
    entry = AuditEntry(
        job_id="job_a",
        owner="alice",
        at=datetime(2026, 11, 26, 9, tzinfo=UTC),
        request_id="req-1",
        action=Action.PAUSE,
        by="alice",
        source=Source.CLI,
    )

    assert table["DatabaseName"] == "chronoq_archive"
    assert audit["PartitionKeys"] == runs["PartitionKeys"]
    assert {k: v for k, v in parameters.items() if k != "storage.location.template"} == {
        k: v for k, v in runs["Parameters"].items() if k != "storage.location.template"
    }
    assert rendered(parameters["storage.location.template"]) == (
        f"s3://${{{bucket}}}/{r.ARCHIVE_PREFIX}/owner=${{owner_key}}/audit/day=${{day}}/"
    )
    # (the keys the archiver writes: the template names them)
    (written,) = archive.objects(r.ARCHIVE_PREFIX, [ArchivedEntry(archive.version("7"), entry)])
    assert written.key.startswith(f"{r.ARCHIVE_PREFIX}/owner=alice/audit/day=2026-11-26/")
    columns = audit["StorageDescriptor"]["Columns"]
    assert [(c["Name"], c["Type"]) for c in columns] == list(archive.AUDIT_COLUMNS)
    assert {c["Name"] for c in columns} == set(written.lines[0])


def test_given_the_workgroup_when_synthesized_then_results_stay_encrypted_in_the_archive_bucket(
    synth: Synthesis,
) -> None:
    (workgroup,) = synth.of_type("AWS::Athena::WorkGroup").values()
    configuration = workgroup["Properties"]["WorkGroupConfiguration"]
    bucket = synth.logical_id(synth.stack.archive.bucket)

    assert workgroup["Properties"]["Name"] == "Chronoq-archive"
    assert configuration["EnforceWorkGroupConfiguration"] is True
    results = configuration["ResultConfiguration"]
    assert rendered(results["OutputLocation"]) == f"s3://${{{bucket}}}/{r.ATHENA_RESULTS_PREFIX}/"
    assert results["EncryptionConfiguration"] == {"EncryptionOption": "SSE_S3"}
