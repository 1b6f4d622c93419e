"""The KeyStore port on DynamoDB: idempotency keys' records, in the jobs table."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import Any, cast

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.aws.codecs import dump as _dump
from chronoq.aws.codecs import load as _load
from chronoq.aws.store._tables import Tables
from chronoq.domain import keys
from chronoq.usecases.ports import KeyRecord


class DynamoKeys(Tables):
    """Idempotency keys, items of the jobs table."""

    def claim_key(
        self, key: str, fingerprint: str, now: datetime, stale: datetime
    ) -> KeyRecord | None:
        """One conditional PutItem: taken unless the key is held, unexpired (TTL deletes
        late), and answered or recently claimed or of another fingerprint. Refused, the
        write answers the record that holds the key (no read of its own)."""
        item = {
            "job_id": keys.idempotency_key(key),
            "fingerprint": fingerprint,
            "claimed_at": codecs.millis(now),
            "expires_at": int(now.timestamp()) + r.IDEMPOTENCY_KEY_SECONDS,
        }
        try:
            self._db.put_item(
                TableName=self._jobs,
                Item=_dump(item),
                ConditionExpression=(
                    "attribute_not_exists(job_id) OR expires_at <= :now OR "
                    "(attribute_not_exists(answer) AND claimed_at < :stale "
                    "AND fingerprint = :fingerprint)"
                ),
                ExpressionAttributeValues=_dump(
                    {
                        ":now": int(now.timestamp()),
                        ":stale": codecs.millis(stale),
                        ":fingerprint": fingerprint,
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self._db.exceptions.ConditionalCheckFailedException as refused:
            given = cast("dict[str, Any]", refused.response).get("Item")
            held = given or self._db.get_item(
                TableName=self._jobs,
                Key=_dump({"job_id": keys.idempotency_key(key)}),
                ConsistentRead=True,
            ).get("Item", {})
            data = _load(held)
            answer = data.get("answer")
            return KeyRecord(
                fingerprint=str(data.get("fingerprint", "")),
                answer=zlib.decompress(bytes(answer.value)).decode() if answer else None,
                claimed_at=datetime.fromtimestamp(int(data.get("claimed_at", 0)) / 1000, UTC),
            )
        return None

    def answer_key(self, key: str, answer: str) -> None:
        """Keep the answer, compressed (JSON of a job compresses several times over: fewer
        write units)."""
        self._db.update_item(
            TableName=self._jobs,
            Key=_dump({"job_id": keys.idempotency_key(key)}),
            UpdateExpression="SET answer = :answer",
            ExpressionAttributeValues=_dump({":answer": zlib.compress(answer.encode())}),
        )

    def release_key(self, key: str) -> None:
        self._db.delete_item(TableName=self._jobs, Key=_dump({"job_id": keys.idempotency_key(key)}))
