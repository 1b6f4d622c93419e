"""Jobs' audit trails on DynamoDB (the AuditTrail port): the audit table, only ever added to.

An entry is written with a PartiQL ``INSERT``, which DynamoDB refuses
(``DuplicateItemException``) when an item with its key exists: an entry is never written
over. The api function's role may do nothing else to the table but read it
(``dynamodb:PartiQLInsert`` and ``dynamodb:Query``, see cdk/chronoq_cdk/api.py): no
PutItem, UpdateItem, DeleteItem or PartiQL UPDATE or DELETE, whatever the code does. Entries
leave the table only when they expire (TTL)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from chronoq import resources as r
from chronoq.aws import codecs
from chronoq.domain.audit import AuditEntry
from chronoq.usecases.ports import EntryExists, Page, Position

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The error DynamoDB answers an INSERT of a key that exists with.
DUPLICATE = "DuplicateItemException"


def insert_statement(table: str, attributes: list[str]) -> str:
    """``INSERT INTO "<table>" VALUE {'a': ?, 'b': ?}``: the attributes' values passed as
    parameters, in their order (the names are the codec's own, the table the deployment's)."""
    values = ", ".join(f"'{name}': ?" for name in attributes)
    return f'INSERT INTO "{table}" VALUE {{{values}}}'


class DynamoAuditTrail:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def append(self, entry: AuditEntry) -> None:
        """One ExecuteStatement (a write unit per KB of the entry)."""
        item = codecs.dump(codecs.audit_item(entry))
        names = list(item)
        try:
            self._db.execute_statement(
                Statement=insert_statement(self._table, names),
                Parameters=[item[name] for name in names],
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == DUPLICATE:
                raise EntryExists(f"audit entry {entry.key} of job {entry.job_id}") from None
            raise

    def page(
        self, job_id: str, owner: str, limit: int, after: Position | None = None
    ) -> Page[AuditEntry]:
        """A key-range query of the job's partition, newest first, reading one more entry
        than the page holds (to know whether another page follows). Every entry of a job
        carries its owner: one of another owner ends the listing. A position is (entry,)."""
        found: list[AuditEntry] = []
        start = codecs.dump({"job_id": job_id, "entry": after[0]}) if after else None
        while True:
            query: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "job_id = :j",
                "ExpressionAttributeValues": codecs.dump({":j": job_id}),
                "ScanIndexForward": False,
                "Limit": limit - len(found) + 1,
            }
            if start:
                query["ExclusiveStartKey"] = start
            answer = self._db.query(**query)
            for item in answer["Items"]:
                entry = codecs.audit_from_item(item)
                if entry.owner != owner:
                    return Page(found, None)
                if len(found) == limit:
                    return Page(found, (found[-1].key,))  # one more is there: a page follows
                found.append(entry)
            start = answer.get("LastEvaluatedKey")
            if not start:
                return Page(found, None)


class DynamoAuditEraser:
    """What erasing an owner takes out of the audit table (the eraser function's role may;
    the api's may not): the owner's entries, found through the owner index (keys only)."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def _keys(self, owner: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            query: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": r.AUDIT_BY_OWNER_INDEX,
                "KeyConditionExpression": "#o = :o",
                "ExpressionAttributeNames": {"#o": "owner"},
                "ExpressionAttributeValues": codecs.dump({":o": owner}),
            }
            if start:
                query["ExclusiveStartKey"] = start
            answer = self._db.query(**query)
            found += [{"job_id": i["job_id"], "entry": i["entry"]} for i in answer["Items"]]
            start = answer.get("LastEvaluatedKey")
            if not start:
                return found

    def job_ids(self, owner: str) -> list[str]:
        """The ids of the jobs the owner's entries name (deleted ones too)."""
        return sorted({codecs.load(k)["job_id"] for k in self._keys(owner)})

    def erase(self, owner: str) -> int:
        """Delete the owner's entries, one DeleteItem each (not BatchWriteItem, whose IAM
        action would let the eraser's role write entries over too): how many there were."""
        keys = self._keys(owner)
        for key in keys:
            self._db.delete_item(TableName=self._table, Key=key)
        return len(keys)
