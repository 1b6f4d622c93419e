"""What a run leaves behind: its output and its log lines.

Small ones live in the run record (up to ``INLINE_BYTES`` each: the output, and the log lines
of all attempts together); larger ones are S3 objects under the job's ``output_location``
(default: the deployment's bucket, prefix ``runs/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain.runs import Run, attempt_of_line, log_size
from chronoq.domain.targets import split_location

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


class S3Artifacts:
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

    def erase_job_objects(self, job_id: str) -> int:
        """Pages of the job's keys under ``runs/<job id>/``, deleted 1,000 a request."""
        erased = 0
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=f"runs/{job_id}/"
        )
        try:
            for page in pages:
                found: list[Any] = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if found:
                    self._s3.delete_objects(
                        Bucket=self._bucket, Delete={"Objects": found, "Quiet": True}
                    )
                erased += len(found)
        except self._s3.exceptions.NoSuchBucket:  # (locally: made with its first object)
            return erased
        return erased

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
        size = log_size(lines)
        keys = codecs.run_key(job_id, run_id)
        if size <= r.INLINE_BYTES:
            try:
                self._db.update_item(
                    TableName=self._runs,
                    Key=keys,
                    UpdateExpression="SET logs = list_append(if_not_exists(logs, :none), :lines) "
                    "ADD log_bytes :size",
                    ConditionExpression="attribute_exists(run_id) AND "
                    "(attribute_not_exists(log_bytes) OR log_bytes <= :room)",
                    ExpressionAttributeValues=codecs.dump(
                        {
                            ":none": [],
                            ":lines": lines,
                            ":size": size,
                            ":room": r.INLINE_BYTES - size,
                        }
                    ),
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
                ExpressionAttributeValues=codecs.dump({":none": [], ":location": [location]}),
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return

    def log_object(
        self, job_id: str, run_id: str, attempt: int, lines: list[str], output_location: str | None
    ) -> str | None:
        if log_size(lines) <= r.INLINE_BYTES:
            return None
        location = self._key(output_location, job_id, run_id, f"attempt-{attempt}.log")
        self._put(location, "\n".join(lines) + "\n", "text/plain")
        return location

    def read_output(self, run: Run) -> str | None:
        """The run's output as JSON text, wherever it is kept (None: no output yet)."""
        if run.output_location:
            return self._get(run.output_location)
        return run.output

    def read_logs(self, job_id: str, run_id: str) -> list[str]:
        """Every log line of the run, attempt by attempt."""
        item = self._db.get_item(
            TableName=self._runs,
            Key=codecs.run_key(job_id, run_id),
            ProjectionExpression="logs, log_objects",
            ConsistentRead=True,
        ).get("Item", {})
        kept = codecs.load(item)
        lines: list[str] = list(kept.get("logs", []))
        for location in kept.get("log_objects", []):
            lines.extend(self._get(location).splitlines())
        return sorted(lines, key=attempt_of_line)  # stable: each attempt's lines keep their order
