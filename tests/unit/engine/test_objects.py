"""chronoq's own S3 bucket on disk (chronoq.local.engine.objects): what S3Artifacts puts and
gets, kept across a restart, expired as the stack's lifecycle rule expires it; every other
bucket is the embedded S3's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import boto3
import pytest
from chronoq import resources as r
from chronoq.aws.artifacts import S3Artifacts
from chronoq.fakes.clock import FakeClock
from chronoq.local.engine import objects as engine_objects
from chronoq.local.engine.objects import LocalObjects

from tests.contract.backends import a_job, a_run

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
OWN = "chronoq-local-outputbucket"


class Embedded:
    """The embedded S3, as far as these tests need it: its errors, and the calls it gets."""

    def __init__(self) -> None:
        self.exceptions = boto3.client("s3", region_name="us-east-1").exceptions
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def put_object(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("put_object", request))
        return {"ETag": '"embedded"'}

    def list_buckets(self) -> dict[str, Any]:
        self.calls.append(("list_buckets", {}))
        return {"Buckets": []}


def _objects(
    path: Path | None, clock: FakeClock, embedded: Embedded, heard: list[Any]
) -> LocalObjects:
    return LocalObjects(path, [OWN], lambda: embedded, clock, lambda *call: heard.append(call))


def test_given_an_object_put_in_the_own_bucket_when_the_engine_restarts_then_it_is_read_back(
    tmp_path: Path,
) -> None:
    clock, embedded = FakeClock(now=NOW), Embedded()
    heard: list[Any] = []
    first = _objects(tmp_path / "objects.db", clock, embedded, heard)
    first.put_object(
        Bucket=OWN, Key="runs/j/r/output-1.json", Body=b'{"a": 1}', ContentType="application/json"
    )
    first.close()

    again = _objects(tmp_path / "objects.db", clock, embedded, heard)
    answer = again.get_object(Bucket=OWN, Key="runs/j/r/output-1.json")

    assert answer["Body"].read() == b'{"a": 1}'
    assert answer["ContentType"] == "application/json"
    assert embedded.calls == []  # (the embedded S3 never saw it)
    assert [operation for operation, _, _ in heard] == ["s3:PutObject", "s3:GetObject"]
    assert heard[0][1] == {"Bucket": OWN, "Key": "runs/j/r/output-1.json"}


def test_given_a_key_never_put_when_read_then_no_such_key_as_s3_answers() -> None:
    objects = _objects(None, FakeClock(now=NOW), embedded := Embedded(), [])

    with pytest.raises(embedded.exceptions.NoSuchKey):
        objects.get_object(Bucket=OWN, Key="runs/missing")


def test_given_another_bucket_or_call_when_asked_then_the_embedded_s3_answers() -> None:
    embedded = Embedded()
    objects = _objects(None, FakeClock(now=NOW), embedded, [])

    objects.put_object(Bucket="team-outputs", Key="k", Body=b"x")
    objects.list_buckets()

    assert embedded.calls == [
        ("put_object", {"Bucket": "team-outputs", "Key": "k", "Body": b"x"}),
        ("list_buckets", {}),
    ]
    assert objects.count() == 0


def test_given_objects_past_the_retention_when_swept_then_a_few_at_a_time_are_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_objects, "SWEEP_STEP", 2)
    clock = FakeClock(now=NOW)
    objects = _objects(None, clock, Embedded(), [])
    for n in range(3):
        objects.put_object(Bucket=OWN, Key=f"old-{n}", Body=b"x")
    clock.advance(r.RUN_RETENTION_SECONDS - 1)
    objects.put_object(Bucket=OWN, Key="recent", Body=b"x")
    clock.advance(2)

    assert objects.sweep_expired() == 2
    assert objects.sweep_expired() == 1
    assert objects.sweep_expired() == 0
    assert objects.count() == 1
    assert objects.get_object(Bucket=OWN, Key="recent")["Body"].read() == b"x"


def test_given_a_large_output_kept_by_the_artifacts_when_the_engine_restarts_then_the_run_still_has_it(
    tmp_path: Path,
) -> None:
    clock, embedded = FakeClock(now=NOW), Embedded()
    first = _objects(tmp_path / "objects.db", clock, embedded, [])
    output = json.dumps({"rows": ["x" * 100] * (r.INLINE_BYTES // 100)})
    kept = S3Artifacts(cast(Any, None), cast(Any, first), "runs", OWN).save_output(
        "job_1", "run_1", 1, output, None
    )
    first.close()

    again = _objects(tmp_path / "objects.db", clock, embedded, [])
    run = a_run(a_job()).model_copy(update={"output_location": kept["output_location"]})

    assert kept["output_location"].startswith(f"s3://{OWN}/runs/")
    assert S3Artifacts(cast(Any, None), cast(Any, again), "runs", OWN).read_output(run) == output
