"""moto's DynamoDB PartiQL INSERT, as DynamoDB answers the one chronoq sends.

chronoq adds to a job's audit trail with ``INSERT INTO "table" VALUE {'name': ?, ...}``,
every value a parameter (chronoq.aws.audit), and relies on DynamoDB refusing an INSERT of a
key that exists (DuplicateItemException: an entry is never written over). moto 5.2.5 reads
INSERT statements with py-partiql-parser, which takes no ``?`` parameter in a VALUE (the
request fails), and puts the item whatever is stored under its key (it would write over).
This reads that form of INSERT as DynamoDB does; any other statement goes to moto as before.
"""

from __future__ import annotations

from typing import Any


def partiql_inserts_as_dynamodb() -> None:
    """Install, once: moto's ExecuteStatement answers chronoq's INSERT (parameters put in;
    DuplicateItemException, nothing written, when the key exists)."""
    from moto.dynamodb.exceptions import DynamodbException, MockValidationException
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType

    from chronoq.local.partiql import StatementError, kind_of, parse_insert

    original = DynamoDBBackend.execute_statement
    if getattr(original, "chronoq", False):
        return

    class DuplicateItem(DynamodbException):
        error_type = "com.amazonaws.dynamodb.v20120810#DuplicateItemException"

        def __init__(self) -> None:
            super().__init__(self.error_type, "Duplicate primary key exists in table")

    def execute_statement(
        self: DynamoDBBackend, statement: str, parameters: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        if kind_of(statement) != "INSERT":
            return original(self, statement, parameters)
        try:
            table_name, item = parse_insert(statement, parameters)
        except StatementError as problem:
            raise MockValidationException(str(problem)) from None
        table = self.get_table(table_name)
        hash_key = item.get(table.hash_key_attr)
        range_key = item.get(table.range_key_attr) if table.range_key_attr else None
        if hash_key is None or (table.range_key_attr and range_key is None):
            raise MockValidationException(
                "One or more parameter values were invalid: Missing the key in the item"
            )
        kept = table.get_item(
            DynamoType(hash_key), DynamoType(range_key) if range_key is not None else None
        )
        if kept is not None:
            raise DuplicateItem()
        self.put_item(table_name, item)
        return []

    execute_statement.chronoq = True  # type: ignore[attr-defined]
    DynamoDBBackend.execute_statement = execute_statement  # type: ignore[method-assign]
