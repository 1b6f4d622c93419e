"""The PartiQL statements chronoq sends DynamoDB (ExecuteStatement), as chronoq local reads them:
which IAM action a statement is (``dynamodb:PartiQLInsert``, ...) and on which table, for the
calls recorded for the least-privilege check; and the one form chronoq writes with, an
``INSERT INTO "table" VALUE {'name': ?, ...}`` whose values are all parameters (see
chronoq.aws.audit), read into the item it inserts, for the engine's tables and moto."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: The IAM action of each kind of statement.
ACTIONS = {
    "INSERT": "PartiQLInsert",
    "SELECT": "PartiQLSelect",
    "UPDATE": "PartiQLUpdate",
    "DELETE": "PartiQLDelete",
}
#: A quoted name (``"table"``, PartiQL's identifier) or a bare one.
_NAME = r'"((?:[^"]|"")+)"|([A-Za-z0-9_.-]+)'
_TABLES = {
    "INSERT": re.compile(rf"^\s*INSERT\s+INTO\s+(?:{_NAME})", re.IGNORECASE),
    "SELECT": re.compile(rf"\bFROM\s+(?:{_NAME})", re.IGNORECASE),
    "UPDATE": re.compile(rf"^\s*UPDATE\s+(?:{_NAME})", re.IGNORECASE),
    "DELETE": re.compile(rf"^\s*DELETE\s+FROM\s+(?:{_NAME})", re.IGNORECASE),
}
_INSERT = re.compile(
    r'^\s*INSERT\s+INTO\s+"((?:[^"]|"")+)"\s+VALUE\s+\{(.*)\}\s*$', re.IGNORECASE | re.DOTALL
)
_ATTRIBUTE = re.compile(r"\s*'((?:[^']|'')+)'\s*:\s*\?\s*")


class StatementError(ValueError):
    """A statement chronoq local does not answer (DynamoDB's ValidationException)."""


def kind_of(statement: str) -> str:
    """INSERT, SELECT, UPDATE or DELETE ("" for anything else)."""
    first = statement.strip().split(None, 1)
    word = first[0].upper() if first else ""
    return word if word in ACTIONS else ""


def action_of(statement: str) -> tuple[str, str] | None:
    """The IAM action (``PartiQLInsert``, ...) and the table a statement names (None: not
    one of the four kinds, or no table found)."""
    kind = kind_of(statement)
    if not kind:
        return None
    found = _TABLES[kind].search(statement)
    if found is None:
        return None
    quoted, bare = found.group(1), found.group(2)
    table = quoted.replace('""', '"') if quoted else bare
    return ACTIONS[kind], table.split(".", 1)[0]  # (``"table"."index"``: the table's)


def parse_insert(
    statement: str, parameters: Sequence[Mapping[str, Any]] | None
) -> tuple[str, dict[str, Any]]:
    """The table and the item (typed values) of ``INSERT INTO "table" VALUE {'a': ?, ...}``
    with one parameter per ``?``; StatementError for anything else."""
    found = _INSERT.match(statement)
    if found is None:
        raise StatementError(
            'Statement wasn\'t well formed: chronoq local answers only INSERT INTO "table"'
            " VALUE {'name': ?, ...}"
        )
    table, body = found.group(1).replace('""', '"'), found.group(2)
    names = []
    for part in body.split(","):
        attribute = _ATTRIBUTE.fullmatch(part)
        if attribute is None:
            raise StatementError(
                f"Statement wasn't well formed, can't be processed: {part.strip()!r}"
                " (chronoq local takes every value as a ? parameter)"
            )
        names.append(attribute.group(1).replace("''", "'"))
    values = list(parameters or [])
    if len(values) != len(names):
        raise StatementError("Number of parameters in request and statement don't match.")
    if len(set(names)) != len(names):
        raise StatementError("Duplicate attribute name in the statement's value")
    return table, dict(zip(names, values, strict=True))
