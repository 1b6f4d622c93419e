"""S3 for chronoq's own bucket, on disk: the outputs and logs too large for a run record
(chronoq.aws.artifacts) live in ``objects.db`` (SQLite, WAL) beside the tables, so that they
survive a restart and a backup as the run records that point at them do.

It answers the calls S3Artifacts makes (PutObject, GetObject) for the buckets it keeps, and
hands every other call, and every other bucket (one a job names as its output location, made
in the embedded S3), to the embedded AWS. Objects expire as the stack's lifecycle rule
expires them (``RUN_RETENTION_SECONDS`` after they were written), a few at a time."""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.local.engine.schema import Step, connect, statements

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]

#: The schema this code writes (one per step of STEPS: see chronoq.local.engine.schema).
SCHEMA_VERSION = 1
STEPS: tuple[Step, ...] = (
    statements(
        "CREATE TABLE objects (bucket TEXT NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL, "
        "content_type TEXT NOT NULL, etag TEXT NOT NULL, written REAL NOT NULL, "
        "PRIMARY KEY (bucket, key)); "
        "CREATE INDEX objects_written ON objects (written)"
    ),
)
#: Most expired objects one sweep deletes.
SWEEP_STEP = 100


class LocalObjects:
    """An S3 client's put_object and get_object for ``buckets``, on disk; the embedded AWS's
    S3 for the rest."""

    def __init__(
        self,
        path: Path | None,
        buckets: Iterable[str],
        embedded: Callable[[], Any],
        clock: Callable[[], datetime],
        observer: Observer | None = None,
    ) -> None:
        self._buckets = frozenset(buckets)
        self._embedded = embedded
        self._clock = clock
        self._observer = observer
        self._lock = threading.Lock()
        self._db = connect(path, STEPS, f"{path or 'the objects database'}")

    @property
    def exceptions(self) -> Any:
        return self._embedded().exceptions

    def put_object(
        self, *, Bucket: str, Key: str, Body: bytes | str = b"", **request: Any
    ) -> dict[str, Any]:
        if Bucket not in self._buckets:
            return dict(self._embedded().put_object(Bucket=Bucket, Key=Key, Body=Body, **request))
        body = Body.encode() if isinstance(Body, str) else bytes(Body)
        etag = f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"'
        content_type = str(request.get("ContentType") or "binary/octet-stream")
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                (Bucket, Key, body, content_type, etag, self._clock().timestamp()),
            )
        answer = {"ETag": etag}
        self._observe("s3:PutObject", {"Bucket": Bucket, "Key": Key}, answer)
        return answer

    def get_object(self, *, Bucket: str, Key: str, **request: Any) -> dict[str, Any]:
        if Bucket not in self._buckets:
            return dict(self._embedded().get_object(Bucket=Bucket, Key=Key, **request))
        with self._lock:
            row = self._db.execute(
                "SELECT body, content_type, etag, written FROM objects "
                "WHERE bucket = ? AND key = ?",
                (Bucket, Key),
            ).fetchone()
        if row is None:
            self._observe("s3:GetObject", {"Bucket": Bucket, "Key": Key}, {})
            error: Any = {
                "Error": {"Code": "NoSuchKey", "Message": "The specified key does not exist."},
                "ResponseMetadata": {"HTTPStatusCode": 404},
            }
            raise self._embedded().exceptions.NoSuchKey(error, "GetObject")
        body, content_type, etag, written = row
        answer = {
            "Body": io.BytesIO(body),
            "ContentLength": len(body),
            "ContentType": content_type,
            "ETag": etag,
            "LastModified": datetime.fromtimestamp(written, UTC),
        }
        self._observe("s3:GetObject", {"Bucket": Bucket, "Key": Key}, answer)
        return answer

    def create_bucket(self, *, Bucket: str, **request: Any) -> dict[str, Any]:
        """A bucket kept here exists from the start; any other is the embedded S3's."""
        if Bucket in self._buckets:
            return {"Location": f"/{Bucket}"}
        return dict(self._embedded().create_bucket(Bucket=Bucket, **request))

    def sweep_expired(self) -> int:
        """Delete up to SWEEP_STEP objects past the lifecycle's expiry; how many."""
        cutoff = self._clock().timestamp() - r.RUN_RETENTION_SECONDS
        with self._lock:
            return self._db.execute(
                "DELETE FROM objects WHERE rowid IN "
                "(SELECT rowid FROM objects WHERE written < ? LIMIT ?)",
                (cutoff, SWEEP_STEP),
            ).rowcount

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM objects").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedded(), name)

    def _observe(self, operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self._observer is not None:
            self._observer(operation, request, response)
