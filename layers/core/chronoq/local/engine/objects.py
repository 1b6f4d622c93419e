"""S3 for chronoq's own buckets, on disk: the outputs and logs too large for a run record
(chronoq.aws.artifacts) and the archive (chronoq.aws.archive) live in ``objects.db`` (SQLite,
WAL) beside the tables, so that they survive a restart and a backup as the run records that
point at them do.

It answers the calls S3Artifacts and S3Archive make (PutObject, GetObject, ListObjectsV2, and
presigned GETs: links that chronoq local's gateway serves, see ``download``) for the buckets it
keeps, and hands every other call, and every other bucket (one a job names as its output
location, made in the embedded S3), to the embedded AWS. Objects expire as the stack's
lifecycle rules expire them (outputs ``RUN_RETENTION_SECONDS`` after they were written; the
archive's after its own retention), a few at a time."""

from __future__ import annotations

import hashlib
import hmac
import io
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

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
#: Where presigned links point on chronoq local's gateway (``/_s3/<bucket>/<key>``), and their
#: query's parameters.
LINK_PATH = "/_s3/"
EXPIRES = "X-Chronoq-Expires"
SIGNATURE = "X-Chronoq-Signature"
#: ListObjectsV2's most keys per answer.
LIST_MAX = 1000
#: Sorts after any text that follows a prefix (the keys under it are before prefix + this).
_LAST = "\U0010ffff"


class LinkRefused(Exception):
    """A link that is not one this engine signed, or whose time has passed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
        retention: Mapping[str, int | None] | None = None,
    ) -> None:
        """``retention``: how long each bucket keeps an object, in seconds (None: for ever;
        a bucket not named: RUN_RETENTION_SECONDS, the outputs' lifecycle)."""
        self._buckets = frozenset(buckets)
        self._embedded = embedded
        self._clock = clock
        self._observer = observer
        self._retention: dict[str, int | None] = dict.fromkeys(
            self._buckets, r.RUN_RETENTION_SECONDS
        )
        self._retention.update(retention or {})
        self._lock = threading.Lock()
        self._db = connect(path, STEPS, f"{path or 'the objects database'}")
        #: Where links point (chronoq local's gateway: ``LINK_PATH`` is served there), and the
        #: key they are signed with (this process's own: links last minutes, not restarts).
        self.link_base = "http://127.0.0.1:8080"
        self._link_key = secrets.token_bytes(32)

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

    def list_objects_v2(
        self,
        *,
        Bucket: str,
        Prefix: str = "",
        StartAfter: str = "",
        ContinuationToken: str = "",
        MaxKeys: int = LIST_MAX,
        **request: Any,
    ) -> dict[str, Any]:
        """The keys under ``Prefix`` after ``StartAfter`` (or after the key a continuation
        token names), in key order, at most ``MaxKeys`` (1,000) of them."""
        if Bucket not in self._buckets:
            return dict(
                self._embedded().list_objects_v2(
                    Bucket=Bucket,
                    Prefix=Prefix,
                    StartAfter=StartAfter,
                    MaxKeys=MaxKeys,
                    **({"ContinuationToken": ContinuationToken} if ContinuationToken else {}),
                    **request,
                )
            )
        after = ContinuationToken or StartAfter
        count = max(0, min(int(MaxKeys), LIST_MAX))
        with self._lock:
            rows = self._db.execute(
                "SELECT key, length(body), etag, written FROM objects WHERE bucket = ? "
                "AND key >= ? AND key < ? AND key > ? ORDER BY key LIMIT ?",
                (Bucket, Prefix, Prefix + _LAST, after, count + 1),
            ).fetchall()
        shown = rows[:count]
        answer: dict[str, Any] = {
            "Name": Bucket,
            "Prefix": Prefix,
            "KeyCount": len(shown),
            "MaxKeys": count,
            "IsTruncated": len(rows) > count,
            "Contents": [
                {
                    "Key": key,
                    "Size": size,
                    "ETag": etag,
                    "LastModified": datetime.fromtimestamp(written, UTC),
                }
                for key, size, etag, written in shown
            ],
        }
        if len(rows) > count and shown:
            answer["NextContinuationToken"] = shown[-1][0]
        self._observe("s3:ListObjectsV2", {"Bucket": Bucket, "Prefix": Prefix}, answer)
        return answer

    def generate_presigned_url(
        self, ClientMethod: str, Params: Mapping[str, Any], ExpiresIn: int = 3600, **_: Any
    ) -> str:
        """A link to a kept object (``get_object`` only) that chronoq local's gateway serves
        until ``ExpiresIn`` seconds from now, to anyone who has it (as S3 serves a presigned
        GET); other buckets' links are the embedded S3's."""
        bucket, key = str(Params["Bucket"]), str(Params["Key"])
        if bucket not in self._buckets:
            url: str = self._embedded().generate_presigned_url(
                ClientMethod, Params=dict(Params), ExpiresIn=ExpiresIn
            )
            return url
        if ClientMethod != "get_object":
            raise ValueError(f"links to {ClientMethod} are not served locally")
        expires = int(self._clock().timestamp()) + int(ExpiresIn)
        signature = self._sign(bucket, key, expires)
        path = f"{LINK_PATH}{quote(bucket, safe='')}/{quote(key, safe='/=')}"
        return f"{self.link_base.rstrip('/')}{path}?{EXPIRES}={expires}&{SIGNATURE}={signature}"

    def download(self, target: str) -> tuple[bytes, str]:
        """What a link (its path and query, or the whole URL) downloads: the object's body
        and content type. LinkRefused: 403 for a link this engine did not sign or whose time
        has passed, 404 for an object no longer kept."""
        parts = urlsplit(target)
        if not parts.path.startswith(LINK_PATH):
            raise LinkRefused(404, "not a link to an object")
        bucket, _, key = unquote(parts.path[len(LINK_PATH) :]).partition("/")
        query = parse_qs(parts.query)
        try:
            expires = int(query[EXPIRES][0])
            signature = query[SIGNATURE][0]
        except (KeyError, ValueError, IndexError):
            raise LinkRefused(403, "the link is not signed") from None
        if bucket not in self._buckets or not hmac.compare_digest(
            signature, self._sign(bucket, key, expires)
        ):
            raise LinkRefused(403, "the link's signature does not match")
        if self._clock().timestamp() > expires:
            raise LinkRefused(403, "the link has expired")
        with self._lock:
            row = self._db.execute(
                "SELECT body, content_type FROM objects WHERE bucket = ? AND key = ?",
                (bucket, key),
            ).fetchone()
        self._observe("s3:GetObject", {"Bucket": bucket, "Key": key}, {})
        if row is None:
            raise LinkRefused(404, "the object is no longer kept")
        return bytes(row[0]), str(row[1])

    def _sign(self, bucket: str, key: str, expires: int) -> str:
        message = f"{bucket}\n{key}\n{expires}".encode()
        return hmac.new(self._link_key, message, hashlib.sha256).hexdigest()

    def sweep_expired(self) -> int:
        """Delete up to SWEEP_STEP objects past their bucket's lifecycle expiry; how many."""
        now = self._clock().timestamp()
        removed = 0
        for bucket, seconds in sorted(self._retention.items()):
            if seconds is None or removed >= SWEEP_STEP:
                continue
            with self._lock:
                removed += self._db.execute(
                    "DELETE FROM objects WHERE rowid IN (SELECT rowid FROM objects "
                    "WHERE bucket = ? AND written < ? LIMIT ?)",
                    (bucket, now - seconds, SWEEP_STEP - removed),
                ).rowcount
        return removed

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
