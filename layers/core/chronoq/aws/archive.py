"""The Archive port on S3: the archive bucket's objects (gzip JSON Lines, see
chronoq.domain.archive), written by the archiver (its only right: s3:PutObject under the
archive's prefix), listed by the api function (s3:ListBucket, for prefixes under the archive's)
and read through presigned GETs (signed with the api function's s3:GetObject on them).
chronoq local's engine answers the same calls from its own storage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chronoq.usecases.ports import Page, StoredObject

CONTENT_TYPE = "application/gzip"
#: ListObjectsV2 answers at most this many keys.
_LIST_MAX = 1000


class S3Archive:
    """``client``: makes the S3 client, on first use."""

    def __init__(self, client: Callable[[], Any], bucket: str) -> None:
        self._client = client
        self.bucket = bucket

    @property
    def _s3(self) -> Any:
        return self._client()

    def put(self, key: str, body: bytes) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=CONTENT_TYPE)

    def list(self, prefix: str, limit: int, after: str | None = None) -> Page[StoredObject]:
        found: list[StoredObject] = []
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if after is not None:
            request["StartAfter"] = after
        while True:
            answer = self._s3.list_objects_v2(**request, MaxKeys=min(_LIST_MAX, limit + 1))
            found += [StoredObject(o["Key"], int(o["Size"])) for o in answer.get("Contents", [])]
            token = answer.get("NextContinuationToken")
            if len(found) > limit or not answer.get("IsTruncated") or not token:
                break
            request = {"Bucket": self.bucket, "Prefix": prefix, "ContinuationToken": token}
        page = found[:limit]
        more = len(found) > limit
        return Page(page, (page[-1].key,) if more and page else None)

    def delete(self, keys: Sequence[str]) -> None:
        if keys:
            objects: Any = [{"Key": key} for key in keys]
            self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})

    def link(self, key: str, expires_in: int) -> str:
        url: str = self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in
        )
        return url
