"""Usage accounting: DynamoDB sizes and units the way DynamoDB bills them, and prices."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest
from chronoq import resources as r
from chronoq.local.calls import Call, calls_in, calls_of
from chronoq.local.usage import (
    Usage,
    index_write_units,
    item_size,
    operation_of,
    per_million_runs,
    price,
    read_units,
    value_size,
    write_units,
)

BY_OWNER = r.JOBS_TABLE.indexes[0]


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),
        ({"N": "123"}, 3),
        ({"N": "-0.0012"}, 2),
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"SS": ["ab", "c"]}, 3),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + 3 + 3),
        ({"M": {"k": {"S": "v"}}}, 3 + 1 + 1 + 1),
        ({"L": []}, 3),
    ],
)
def test_given_a_value_when_sized_then_it_is_what_dynamodb_bills(
    value: dict[str, object], size: int
) -> None:
    assert value_size(value) == size


def test_given_an_item_when_sized_then_names_count_too() -> None:
    assert item_size({"job_id": {"S": "job_1"}, "v": {"N": "1"}}) == 6 + 5 + 1 + 2
    assert item_size(None) == 0


def test_given_sizes_when_units_are_counted_then_writes_are_per_kb_and_reads_per_4_kb() -> None:
    assert [write_units(s) for s in (0, 1, 1024, 1025, 3000)] == [1, 1, 1, 2, 3]
    assert read_units(100, consistent=True) == 1.0
    assert read_units(100, consistent=False) == 0.5
    assert read_units(4097, consistent=True) == 2.0
    assert read_units(8193, consistent=False) == 1.5


def test_given_an_index_of_keys_only_when_its_item_changes_then_only_key_changes_write_it() -> None:
    job = {"job_id": {"S": "j"}, "owner": {"S": "alice"}, "created_at": {"S": "t"}}
    changed = {**job, "state": {"S": "PAUSED"}, "spec": {"S": "x" * 3000}}
    other_owner = {**job, "owner": {"S": "bob"}}
    unindexed = {"job_id": {"S": "j"}}

    assert BY_OWNER.projection is r.Projection.KEYS_ONLY
    assert index_write_units(None, job, BY_OWNER, r.JOBS_TABLE) == 1  # a new entry
    assert index_write_units(job, changed, BY_OWNER, r.JOBS_TABLE) == 0  # its keys are the same
    assert index_write_units(changed, None, BY_OWNER, r.JOBS_TABLE) == 1  # deleted
    assert index_write_units(job, other_owner, BY_OWNER, r.JOBS_TABLE) == 2  # moved
    assert index_write_units(None, unindexed, BY_OWNER, r.JOBS_TABLE) == 0


def test_given_an_index_projecting_all_when_its_item_changes_then_the_index_is_written_too() -> (
    None
):
    everything = dataclasses.replace(BY_OWNER, projection=r.Projection.ALL)
    job = {"job_id": {"S": "j"}, "owner": {"S": "alice"}, "created_at": {"S": "t"}}
    changed = {**job, "state": {"S": "PAUSED"}, "spec": {"S": "x" * 3000}}
    other_owner = {**job, "owner": {"S": "bob"}}

    assert index_write_units(None, job, everything, r.JOBS_TABLE) == 1  # a new entry
    assert index_write_units(job, changed, everything, r.JOBS_TABLE) == 3  # rewritten, 3 KB
    assert index_write_units(job, job, everything, r.JOBS_TABLE) == 0  # nothing changed
    assert index_write_units(job, other_owner, everything, r.JOBS_TABLE) == 2  # moved
    assert index_write_units(job, None, everything, r.JOBS_TABLE) == 1  # deleted


def test_given_a_workload_when_priced_then_each_service_costs_what_its_list_price_says() -> None:
    usage = Usage()
    usage.request("dynamodb:PutItem", "api")
    usage.units(write=2, read=4)
    usage.invocation("worker", 128, 99.2)  # billed 100 ms
    usage.execution("arn:standard", "standard")
    usage.ended("arn:standard", transitions=8, milliseconds=500)
    usage.execution("arn:express", "express")
    usage.ended("arn:express", transitions=8, milliseconds=120)  # billed 200 ms
    for operation in ("sqs:SendMessageBatch", "sns:Publish", "s3:PutObject", "events:PutEvents"):
        usage.request(operation, "statemachine")
    document = usage.document(runs_finished=2)

    costs = price(document)

    assert document["lambda"]["worker"] == {"invocations": 1, "memory_mb": 128, "billed_ms": 100}
    assert document["stepfunctions"]["express"]["billed_ms"] == 200
    # Worked out by hand from AWS's us-east-1 list prices ($0.625 and $0.125 per million
    # write and read units; Lambda $0.20 per million requests and $0.0000133334 per
    # GB-second on arm64, as the stack runs every function; Standard $25 per million
    # transitions; Express $1.00 per million requests and $0.00001667 per GB-second at 64 MB;
    # SQS $0.40, SNS $0.50, EventBridge $1.00 per million; S3 $0.005 per thousand PUTs):
    assert costs == {
        "dynamodb": Decimal("0.00000175"),  # 2 x 0.000000625 + 4 x 0.000000125
        "lambda": Decimal("0.00000036666750"),  # 0.0000002 + 0.0125 GB-s
        "stepfunctions": Decimal("0.000201208375"),  # 8 transitions + 1 request + 0.0125 GB-s
        "sqs": Decimal("0.0000004"),
        "sns": Decimal("0.0000005"),
        "s3": Decimal("0.000005"),
        "eventbridge": Decimal("0.000001"),
        "ssm": Decimal(0),  # (no secret read)
        "total": Decimal("0.00021022504250"),
    }
    assert per_million_runs(document)["total"] == Decimal("105.11252125")
    assert document["aws_requests_by_caller"] == {"api": 1, "statemachine": 4}


def test_given_secrets_put_and_read_when_priced_then_parameter_store_is_free_and_kms_is_paid_per_request() -> (
    None
):
    usage = Usage()
    usage.request("ssm:PutParameter", "api")
    usage.request("ssm:DeleteParameter", "api")
    for _ in range(9_998):
        usage.request("ssm:GetParameter", "runner")
    usage.request("ssm:GetParameters", "container-execution")
    document = usage.document(runs_finished=1)

    # Standard parameters at the standard throughput cost nothing; each put or read of a
    # SecureString is a KMS request on the aws/ssm key, $0.03 per 10,000.
    assert document["ssm"] == {"requests": 10_001, "reads": 9_999, "kms_requests": 10_000}
    assert price(document)["ssm"] == Decimal("0.03")
    assert price({**document, "ssm": {**document["ssm"], "kms_requests": 0}})["ssm"] == 0
    # (a usage document kept from before secrets)
    assert price({k: v for k, v in document.items() if k != "ssm"})["ssm"] == 0


def test_given_an_ssm_request_to_the_embedded_aws_when_counted_then_it_is_the_ssm_call_on_its_parameter() -> (
    None
):
    body = json.dumps({"Name": "/chronoq/local/secrets/alice/tok:3", "WithDecryption": True})
    headers = {"X-Amz-Target": b"AmazonSSM.GetParameter"}

    operation = operation_of("POST", "https://ssm.us-east-1.amazonaws.com/", headers, b"")
    calls = set(calls_of("runner", operation, "", body.encode(), "us-east-1", "123456789012"))
    many = calls_in(
        "container-execution",
        "ssm:GetParameters",
        {"Names": ["arn:aws:ssm:us-east-1:123456789012:parameter/p/a", "/p/b:2"]},
        "us-east-1",
        "123456789012",
    )

    assert operation == "ssm:GetParameter"
    arn = "arn:aws:ssm:us-east-1:123456789012:parameter/chronoq/local/secrets/alice/tok"
    assert calls == {Call("runner", "ssm:GetParameter", arn)}
    assert [c.resource for c in many] == [
        "arn:aws:ssm:us-east-1:123456789012:parameter/p/a",
        "arn:aws:ssm:us-east-1:123456789012:parameter/p/b",
    ]


def test_given_runs_on_each_state_machine_when_priced_per_million_then_as_the_docs_say() -> None:
    standard, express = Usage(), Usage()
    standard.execution("arn:s", "standard")
    standard.ended("arn:s", transitions=8, milliseconds=900)  # a run that succeeds first time
    express.execution("arn:e", "express")
    express.ended("arn:e", transitions=8, milliseconds=1)  # a batch of one, billed 100 ms

    assert per_million_runs(standard.document(runs_finished=1))["stepfunctions"] == 200
    # $1.00 per million requests, and 0.1 s at 64 MB: $0.10 per million (rounded)
    per_run = per_million_runs(express.document(runs_finished=1))["stepfunctions"]
    assert per_run == Decimal("1.10418750")


def test_given_a_reset_when_read_then_counts_start_again() -> None:
    usage = Usage()
    usage.request("sqs:SendMessageBatch", "dispatcher")
    usage.invocation("dispatcher", 1024, 10)

    usage.reset()

    document = usage.document(runs_finished=0)
    assert document["aws_requests"] == {}
    assert document["lambda"]["dispatcher"]["invocations"] == 0
    assert per_million_runs(document) == {}


def test_given_the_archivers_local_batches_when_priced_then_as_the_stacks_one_batch_a_window() -> (
    None
):
    """chronoq local gathers the archiver's batches for seconds, the stack for 240 s: its
    invocations are priced once a window (their milliseconds all), its objects once per owner
    and day in a window, and LISTs as PUTs."""
    now = [1_000_000.0 * r.ARCHIVER_BATCHING_WINDOW_SECONDS]
    usage = Usage(clock=lambda: now[0])
    alice, bob = "archive/owner=alice/day=2026-11-26/", "archive/owner=bob/day=2026-11-26/"

    kept = []
    for n in range(3):  # three local batches of one window
        usage.invocation("archiver", 512, 40)
        kept += [usage.archive_object(f"{alice}{n}.jsonl.gz"), usage.archive_object(f"{bob}{n}")]
        now[0] += 5
    now[0] += r.ARCHIVER_BATCHING_WINDOW_SECONDS  # the next window
    usage.invocation("archiver", 512, 40)
    kept.append(usage.archive_object(f"{alice}3.jsonl.gz"))
    usage.request("s3:ListObjectsV2", "api")
    document = usage.document(runs_finished=1)

    assert kept == [True, True, False, False, False, False, True]
    assert document["lambda"]["archiver"] == {"invocations": 2, "memory_mb": 512, "billed_ms": 160}
    assert document["archive_batches"] == {
        "local": 4,
        "priced": 2,
        "objects_local": 7,
        "objects_priced": 3,
    }
    assert price(document)["s3"] == Decimal("0.000005")  # one LIST, at the PUT price


def test_given_the_archivers_puts_metered_when_counted_then_one_per_owner_day_and_window() -> None:
    from chronoq.local.aws import archive_bucket_name, output_bucket_name
    from chronoq.local.usage import Meter, calling_as

    now = [1_000_000.0 * r.ARCHIVER_BATCHING_WINDOW_SECONDS]
    usage = Usage(clock=lambda: now[0])
    meter = Meter(usage, {}, "us-east-1", "123456789012")
    key = f"{r.ARCHIVE_PREFIX}/owner=alice/day=2026-11-26/{{}}.jsonl.gz"
    # (chronoq local's own buckets: the calls are recorded for the least-privilege check)
    archive, outputs = archive_bucket_name(), output_bucket_name()

    with calling_as("archiver"):
        for n in range(3):
            meter.observe("s3:PutObject", {"Bucket": archive, "Key": key.format(n)}, {})
    with calling_as("runner"):  # (anyone else's objects: each priced)
        for n in range(2):
            meter.observe(
                "s3:PutObject", {"Bucket": outputs, "Key": f"runs/j/r/output-{n}.json"}, {}
            )

    document = usage.document(runs_finished=1)
    assert document["s3"]["puts"] == 3
    assert document["aws_requests_by_caller"] == {"archiver": 1, "runner": 2}
