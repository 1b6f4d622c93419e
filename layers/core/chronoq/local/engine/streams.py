"""The runs table's change stream, served to the stream poller (chronoq.local.drivers) with
the DynamoDB Streams calls it makes: one shard, whose records the tables keep on disk in the
same transaction as each write (chronoq.local.engine.tables).

Records are handed over in order. A record is forgotten once the poller asks for those after
it (it has delivered it then), so that a restart, even after ``kill -9``, hands over again
what was not delivered: the notifier hears of every run's end at least once, as the event
source mapping on AWS promises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

#: The one shard of a local stream.
SHARD_ID = "shardId-00000000000000000000-00000001"


class StreamSource(Protocol):
    def read_stream(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]: ...

    def trim_stream(self, through: int) -> None: ...


Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]


class LocalStreams:
    """A DynamoDB Streams client of one table's stream (``describe_stream``,
    ``get_shard_iterator``, ``get_records``)."""

    def __init__(
        self,
        source: StreamSource,
        table_id: str,
        stream_arn: str,
        observer: Observer | None = None,
    ) -> None:
        self._source = source
        self._table = table_id
        self.stream_arn = stream_arn
        self._observer = observer

    def _answer(
        self, operation: str, request: dict[str, Any], answer: dict[str, Any]
    ) -> dict[str, Any]:
        if self._observer is not None:
            self._observer(f"dynamodbstreams:{operation}", request, answer)
        return answer

    def describe_stream(self, StreamArn: str, **_: Any) -> dict[str, Any]:
        return self._answer(
            "DescribeStream",
            {"StreamArn": StreamArn},
            {
                "StreamDescription": {
                    "StreamArn": self.stream_arn,
                    "StreamStatus": "ENABLED",
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                    "Shards": [{"ShardId": SHARD_ID}],
                }
            },
        )

    def get_shard_iterator(
        self,
        StreamArn: str,
        ShardId: str,
        ShardIteratorType: str,
        **_: Any,
    ) -> dict[str, Any]:
        """Every type reads from the oldest record not yet handed over: what was written
        while nothing read the stream (a restart) is delivered, not skipped."""
        return self._answer(
            "GetShardIterator",
            {"StreamArn": StreamArn, "ShardId": ShardId},
            {"ShardIterator": f"{self.stream_arn}|0"},
        )

    def get_records(
        self,
        ShardIterator: str,
        Limit: int = 1000,
        **_: Any,
    ) -> dict[str, Any]:
        arn, _bar, position = ShardIterator.rpartition("|")  # (arn|sequence)
        after = int(position)
        if after:
            self._source.trim_stream(after)  # (handed over: the poller asks for what follows)
        records = self._source.read_stream(self._table, after, Limit)
        last = int(records[-1]["dynamodb"]["SequenceNumber"]) if records else after
        return self._answer(
            "GetRecords",
            {"ShardIterator": ShardIterator},
            {"Records": records, "NextShardIterator": f"{arn}|{last}"},
        )
