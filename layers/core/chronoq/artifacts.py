"""What a run leaves behind: its output and its log lines.

Small ones live in the run record (up to ``INLINE_BYTES`` each: the output, and the log lines
of all attempts together); larger ones are S3 objects under the job's ``output_location``
(default: the deployment's bucket, prefix ``runs/``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from chronoq import resources as r
from chronoq.models import Run, format_instant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_ATTEMPT = re.compile(r"\[attempt (\d+)\]")


def log_line(attempt: int, message: str, at: datetime | None = None) -> str:
    """One log line as kept: instant, attempt, message."""
    return f"{format_instant(at or datetime.now(UTC))} [attempt {attempt}] {message}"


def _attempt_of(line: str) -> int:
    match = _ATTEMPT.search(line)
    return int(match.group(1)) if match else 0


def split_location(location: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> (bucket, "some/key")."""
    bucket, _, key = location.removeprefix("s3://").partition("/")
    return bucket, key


class Artifacts:
    def __init__(
        self, dynamodb: DynamoDBClient, s3: S3Client, runs_table: str, bucket: str
    ) -> None:
        self._db = dynamodb
        self._s3 = s3
        self._runs = runs_table
        self._bucket = bucket

    def _key(self, output_location: str | None, job_id: str, run_id: str, name: str) -> str:
        """Where an object of this run goes, as an ``s3://`` URI."""
        if output_location:
            bucket, prefix = split_location(output_location)
        else:
            bucket, prefix = self._bucket, "runs"
        prefix = prefix.strip("/")
        key = "/".join(p for p in (prefix, job_id, run_id, name) if p)
        return f"s3://{bucket}/{key}"

    def _put(self, location: str, text: str, content_type: str) -> None:
        bucket, key = split_location(location)
        self._s3.put_object(Bucket=bucket, Key=key, Body=text.encode(), ContentType=content_type)

    def _get(self, location: str) -> str:
        bucket, key = split_location(location)
        return self._s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()

    def save_output(
        self, job_id: str, run_id: str, attempt: int, output: str, output_location: str | None
    ) -> dict[str, str]:
        """Keep an attempt's output: ``{"output": text, "output_location": ""}`` when small
        enough for the run record, else the text goes to S3 (one object per attempt, so that
        an attempt that ends late overwrites nothing) and ``output`` is empty."""
        if len(output.encode()) <= r.INLINE_BYTES:
            return {"output": output, "output_location": ""}
        location = self._key(output_location, job_id, run_id, f"output-{attempt}.json")
        self._put(location, output, "application/json")
        return {"output": "", "output_location": location}

    def append_logs(
        self,
        job_id: str,
        run_id: str,
        attempt: int,
        lines: list[str],
        output_location: str | None,
    ) -> None:
        """Add an attempt's log lines to the run: in the record while all of them fit in
        ``INLINE_BYTES``, else as one S3 object for the attempt."""
        if not lines:
            return
        size = sum(len(line.encode()) + 1 for line in lines)
        keys = {"job_id": {"S": job_id}, "run_id": {"S": run_id}}
        if size <= r.INLINE_BYTES:
            try:
                self._db.update_item(
                    TableName=self._runs,
                    Key=keys,
                    UpdateExpression="SET logs = list_append(if_not_exists(logs, :none), :lines) "
                    "ADD log_bytes :size",
                    ConditionExpression="attribute_exists(run_id) AND "
                    "(attribute_not_exists(log_bytes) OR log_bytes <= :room)",
                    ExpressionAttributeValues={
                        ":none": {"L": []},
                        ":lines": {"L": [{"S": line} for line in lines]},
                        ":size": {"N": str(size)},
                        ":room": {"N": str(r.INLINE_BYTES - size)},
                    },
                )
                return
            except self._db.exceptions.ConditionalCheckFailedException:
                pass  # no room left in the record (or the run is gone: then S3 is harmless)
        location = self._key(output_location, job_id, run_id, f"attempt-{attempt}.log")
        self._put(location, "\n".join(lines) + "\n", "text/plain")
        try:
            self._db.update_item(
                TableName=self._runs,
                Key=keys,
                UpdateExpression="SET log_objects = list_append(if_not_exists(log_objects, :none), "
                ":location)",
                ConditionExpression="attribute_exists(run_id)",
                ExpressionAttributeValues={
                    ":none": {"L": []},
                    ":location": {"L": [{"S": location}]},
                },
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return

    def read_output(self, run: Run) -> str | None:
        """The run's output as JSON text, wherever it is kept (None: no output yet)."""
        if run.output_location:
            return self._get(run.output_location)
        return run.output

    def read_logs(self, job_id: str, run_id: str) -> list[str]:
        """Every log line of the run, attempt by attempt."""
        item = self._db.get_item(
            TableName=self._runs,
            Key={"job_id": {"S": job_id}, "run_id": {"S": run_id}},
            ProjectionExpression="logs, log_objects",
            ConsistentRead=True,
        ).get("Item", {})
        lines: list[str] = [v["S"] for v in item.get("logs", {}).get("L", [])]
        for location in item.get("log_objects", {}).get("L", []):
            lines.extend(self._get(location["S"]).splitlines())
        return sorted(lines, key=_attempt_of)  # stable: each attempt's lines keep their order
