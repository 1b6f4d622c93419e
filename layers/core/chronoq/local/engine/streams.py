"""A table's change stream (the runs table's, the audit table's), served to the stream
pollers (chronoq.local.drivers) with the DynamoDB Streams calls they make: one shard, whose
records the tables keep on disk in the same transaction as each write
(chronoq.local.engine.tables).

Each reader of a stream (chronoq.aws.fanout: the notifier, the archiver) reads it through
a client of its own (``reader``), at a position of its own, kept on disk. Records are handed
over in order. A reader has had a record once it asks for those after it (its poller
delivered it then); a record every reader has had is forgotten. So a restart, even after
``kill -9``, hands each reader again what was not delivered to it: each hears of every run's
end at least once, as the event source mappings on AWS promise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from chronoq import resources as r

#: The one shard of a local stream.
SHARD_ID = "shardId-00000000000000000000-00000001"
#: The reader of a client that names none: the stream's first (the notifier).
FIRST_READER = r.NOTIFIER_FUNCTION.name


class StreamSource(Protocol):
    def read_stream(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]: ...

    def stream_head(self) -> int: ...

    def stream_position(self, reader: str) -> int: ...

    def handed_over(self, reader: str, through: int) -> None: ...


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
        reader: str = FIRST_READER,
    ) -> None:
        self._source = source
        self._table = table_id
        self.stream_arn = stream_arn
        self._observer = observer
        self.reader_name = reader

    def reader(self, name: str) -> LocalStreams:
        """The stream as reader ``name`` reads it (its own position)."""
        return LocalStreams(self._source, self._table, self.stream_arn, self._observer, name)

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
        """Every type reads from the oldest record not yet handed over to this reader: what
        was written while nothing read the stream (a restart) is delivered, not skipped."""
        position = self._source.stream_position(self.reader_name)
        return self._answer(
            "GetShardIterator",
            {"StreamArn": StreamArn, "ShardId": ShardId},
            {"ShardIterator": f"{self.stream_arn}|{self.reader_name}|{position}"},
        )

    def get_records(
        self,
        ShardIterator: str,
        Limit: int = 1000,
        **_: Any,
    ) -> dict[str, Any]:
        arn, reader, position = ShardIterator.rsplit("|", 2)  # (arn|reader|sequence)
        after = int(position)
        if after:
            # handed over to it: its poller asks for what follows
            self._source.handed_over(reader, after)
        # (the log is every streamed table's: a reader of one table moves past the others'
        # records too, up to the log's head as it was before this read, when it read all of
        # its own there were; else a reader of a table seldom written would hold back the
        # dropping of every other table's records it has nothing to do with)
        head = self._source.stream_head()
        records = self._source.read_stream(self._table, after, Limit)
        last = int(records[-1]["dynamodb"]["SequenceNumber"]) if records else after
        if len(records) < Limit:
            last = max(last, head)
        return self._answer(
            "GetRecords",
            {"ShardIterator": ShardIterator},
            {"Records": records, "NextShardIterator": f"{arn}|{reader}|{last}"},
        )
