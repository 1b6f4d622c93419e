"""DynamoDB's expression language over typed attribute values, for the local engine's tables.

Every expression chronoq sends to a table (ConditionExpression, FilterExpression,
KeyConditionExpression, UpdateExpression, ProjectionExpression) is parsed here once per text
(the parse is cached) into Python closures, then evaluated over items in DynamoDB's typed form
(``{"S": "x"}``, ``{"N": "1"}``, ``{"SS": [...]}``, ``{"M": {...}}``, ...) with DynamoDB's
semantics: numbers compare as decimals, values of different types are never equal nor
ordered, a missing attribute satisfies only ``attribute_not_exists``, ``<>`` and ``NOT``, an
update evaluates every operand against the item as it was, and a set emptied by DELETE
disappears. Placeholders (``#name``, ``:value``) are resolved at evaluation time, so one
parse serves every call whatever names and values it brings; the placeholders an expression
uses are known from the parse, to refuse undefined and unused ones as DynamoDB does.

Problems DynamoDB reports as a ValidationException raise ``ExpressionError`` with DynamoDB's
message; those of an expression's text raise ``InvalidExpression``, whose message the caller
prefixes with the parameter's name ("Invalid UpdateExpression: ...").

Why this module is long: DynamoDB's expression language is one grammar (the tokenizer, the
parser, typed comparisons and functions, the update actions) whose parts share the token and
typed-value helpers; split, the parser would be cut from what it builds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

#: One typed attribute value (``{"S": "x"}``), and an item: attribute name -> typed value.
Typed = dict[str, Any]
Item = dict[str, Typed]
Names = Mapping[str, str]
Values = Mapping[str, Typed]
#: A document path with its placeholders resolved: attribute names and list indexes.
Steps = tuple[str | int, ...]
#: An operand compiled: (item, names, values) -> its typed value, None when missing.
Operand = Callable[[Mapping[str, Typed], Names, Values], Typed | None]
#: A condition compiled: (item, names, values) -> whether it holds.
Predicate = Callable[[Mapping[str, Typed], Names, Values], bool]

#: Every type name ``attribute_type`` accepts.
TYPE_NAMES = ("S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M")
_SETS = frozenset({"SS", "NS", "BS"})

INCORRECT_TYPE = "An operand in the update expression has an incorrect data type"
INVALID_PATH = "The document path provided in the update expression is invalid for update"
MISSING_OPERAND = "The provided expression refers to an attribute that does not exist in the item"

# DynamoDB's reserved words: none may name an attribute in an expression (use a #name).
_RESERVED_WORDS = """
    ABORT ABSOLUTE ACTION ADD AFTER AGENT AGGREGATE ALL ALLOCATE ALTER ANALYZE AND ANY ARCHIVE
    ARE ARRAY AS ASC ASCII ASENSITIVE ASSERTION ASYMMETRIC AT ATOMIC ATTACH ATTRIBUTE AUTH
    AUTHORIZATION AUTHORIZE AUTO AVG BACK BACKUP BASE BATCH BEFORE BEGIN BETWEEN BIGINT BINARY
    BIT BLOB BLOCK BOOLEAN BOTH BREADTH BUCKET BULK BY BYTE CALL CALLED CALLING CAPACITY CASCADE
    CASCADED CASE CAST CATALOG CHAR CHARACTER CHECK CLASS CLOB CLOSE CLUSTER CLUSTERED
    CLUSTERING CLUSTERS COALESCE COLLATE COLLATION COLLECTION COLUMN COLUMNS COMBINE COMMENT
    COMMIT COMPACT COMPILE COMPRESS CONDITION CONFLICT CONNECT CONNECTION CONSISTENCY CONSISTENT
    CONSTRAINT CONSTRAINTS CONSTRUCTOR CONSUMED CONTINUE CONVERT COPY CORRESPONDING COUNT
    COUNTER CREATE CROSS CUBE CURRENT CURSOR CYCLE DATA DATABASE DATE DATETIME DAY DEALLOCATE
    DEC DECIMAL DECLARE DEFAULT DEFERRABLE DEFERRED DEFINE DEFINED DEFINITION DELETE DELIMITED
    DEPTH DEREF DESC DESCRIBE DESCRIPTOR DETACH DETERMINISTIC DIAGNOSTICS DIRECTORIES DISABLE
    DISCONNECT DISTINCT DISTRIBUTE DO DOMAIN DOUBLE DROP DUMP DURATION DYNAMIC EACH ELEMENT ELSE
    ELSEIF EMPTY ENABLE END EQUAL EQUALS ERROR ESCAPE ESCAPED EVAL EVALUATE EXCEEDED EXCEPT
    EXCEPTION EXCEPTIONS EXCLUSIVE EXEC EXECUTE EXISTS EXIT EXPLAIN EXPLODE EXPORT EXPRESSION
    EXTENDED EXTERNAL EXTRACT FAIL FALSE FAMILY FETCH FIELDS FILE FILTER FILTERING FINAL FINISH
    FIRST FIXED FLATTERN FLOAT FOR FORCE FOREIGN FORMAT FORWARD FOUND FREE FROM FULL FUNCTION
    FUNCTIONS GENERAL GENERATE GET GLOB GLOBAL GO GOTO GRANT GREATER GROUP GROUPING HANDLER HASH
    HAVE HAVING HEAP HIDDEN HOLD HOUR IDENTIFIED IDENTITY IF IGNORE IMMEDIATE IMPORT IN
    INCLUDING INCLUSIVE INCREMENT INCREMENTAL INDEX INDEXED INDEXES INDICATOR INFINITE INITIALLY
    INLINE INNER INNTER INOUT INPUT INSENSITIVE INSERT INSTEAD INT INTEGER INTERSECT INTERVAL
    INTO INVALIDATE IS ISOLATION ITEM ITEMS ITERATE JOIN KEY KEYS LAG LANGUAGE LARGE LAST
    LATERAL LEAD LEADING LEAVE LEFT LENGTH LESS LEVEL LIKE LIMIT LIMITED LINES LIST LOAD LOCAL
    LOCALTIME LOCALTIMESTAMP LOCATION LOCATOR LOCK LOCKS LOG LOGED LONG LOOP LOWER MAP MATCH
    MATERIALIZED MAX MAXLEN MEMBER MERGE METHOD METRICS MIN MINUS MINUTE MISSING MOD MODE
    MODIFIES MODIFY MODULE MONTH MULTI MULTISET NAME NAMES NATIONAL NATURAL NCHAR NCLOB NEW NEXT
    NO NONE NOT NULL NULLIF NUMBER NUMERIC OBJECT OF OFFLINE OFFSET OLD ON ONLINE ONLY OPAQUE
    OPEN OPERATOR OPTION OR ORDER ORDINALITY OTHER OTHERS OUT OUTER OUTPUT OVER OVERLAPS
    OVERRIDE OWNER PAD PARALLEL PARAMETER PARAMETERS PARTIAL PARTITION PARTITIONED PARTITIONS
    PATH PERCENT PERCENTILE PERMISSION PERMISSIONS PIPE PIPELINED PLAN POOL POSITION PRECISION
    PREPARE PRESERVE PRIMARY PRIOR PRIVATE PRIVILEGES PROCEDURE PROCESSED PROJECT PROJECTION
    PROPERTY PROVISIONING PUBLIC PUT QUERY QUIT QUORUM RAISE RANDOM RANGE RANK RAW READ READS
    REAL REBUILD RECORD RECURSIVE REDUCE REF REFERENCE REFERENCES REFERENCING REGEXP REGION
    REINDEX RELATIVE RELEASE REMAINDER RENAME REPEAT REPLACE REQUEST RESET RESIGNAL RESOURCE
    RESPONSE RESTORE RESTRICT RESULT RETURN RETURNING RETURNS REVERSE REVOKE RIGHT ROLE ROLES
    ROLLBACK ROLLUP ROUTINE ROW ROWS RULE RULES SAMPLE SATISFIES SAVE SAVEPOINT SCAN SCHEMA
    SCOPE SCROLL SEARCH SECOND SECTION SEGMENT SEGMENTS SELECT SELF SEMI SENSITIVE SEPARATE
    SEQUENCE SERIALIZABLE SESSION SET SETS SHARD SHARE SHARED SHORT SHOW SIGNAL SIMILAR SIZE
    SKEWED SMALLINT SNAPSHOT SOME SOURCE SPACE SPACES SPARSE SPECIFIC SPECIFICTYPE SPLIT SQL
    SQLCODE SQLERROR SQLEXCEPTION SQLSTATE SQLWARNING START STATE STATIC STATUS STORAGE STORE
    STORED STREAM STRING STRUCT STYLE SUB SUBMULTISET SUBPARTITION SUBSTRING SUBTYPE SUM SUPER
    SYMMETRIC SYNONYM SYSTEM TABLE TABLESAMPLE TEMP TEMPORARY TERMINATED TEXT THAN THEN
    THROUGHPUT TIME TIMESTAMP TIMEZONE TINYINT TO TOKEN TOTAL TOUCH TRAILING TRANSACTION
    TRANSFORM TRANSLATE TRANSLATION TREAT TRIGGER TRIM TRUE TRUNCATE TTL TUPLE TYPE UNDER UNDO
    UNION UNIQUE UNIT UNKNOWN UNLOGGED UNNEST UNPROCESSED UNSIGNED UNTIL UPDATE UPPER URL USAGE
    USE USER USERS USING UUID VACUUM VALUE VALUED VALUES VARCHAR VARIABLE VARIANCE VARINT
    VARYING VIEW VIEWS VIRTUAL VOID WAIT WHEN WHENEVER WHERE WHILE WINDOW WITH WITHIN WITHOUT
    WORK WRAPPED WRITE YEAR ZONE
"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


class ExpressionError(ValueError):
    """An expression, or its evaluation over an item, that DynamoDB refuses with a
    ValidationException; the message is DynamoDB's."""


class InvalidExpression(ExpressionError):
    """A problem of an expression's text; DynamoDB's message names the parameter first
    (``Invalid ConditionExpression: <this message>``)."""


# --- Typed values ----------------------------------------------------------------------------


def kind_of(value: Mapping[str, Any]) -> str:
    """The type of a typed value (``"S"``, ``"N"``, ...)."""
    return next(iter(value))


def decimal(text: str) -> Decimal:
    """A number attribute's value."""
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ExpressionError("A value provided cannot be converted into a number") from None


def number_text(value: Decimal) -> str:
    """A number as DynamoDB writes one it computed: no exponent, no trailing zeros."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def equal(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """DynamoDB's ``=``: same type and value (numbers as decimals, sets unordered)."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    kind = kind_of(a)
    if kind != kind_of(b):
        return False
    x, y = a[kind], b[kind]
    if kind == "N":
        return decimal(x) == decimal(y)
    if kind == "NS":
        return {decimal(n) for n in x} == {decimal(n) for n in y}
    if kind in _SETS:
        return set(x) == set(y)
    if kind == "L":
        return len(x) == len(y) and all(equal(p, q) for p, q in zip(x, y, strict=True))
    if kind == "M":
        return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
    return False


def order(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> int | None:
    """-1, 0 or 1 as ``a`` sorts before, with or after ``b``; None when they do not compare
    (either missing, different types, or a type without order: only S, N and B have one)."""
    if a is None or b is None:
        return None
    kind = kind_of(a)
    if kind != kind_of(b):
        return None
    x: Any
    y: Any
    if kind == "S":
        x, y = a["S"], b["S"]
    elif kind == "N":
        x, y = decimal(a["N"]), decimal(b["N"])
    elif kind == "B":
        x, y = bytes(a["B"]), bytes(b["B"])
    else:
        return None
    return int(x > y) - int(x < y)


def _size(value: Mapping[str, Any] | None) -> Typed | None:
    """``size()``: a string's or binary's length, a set's, list's or map's element count."""
    if value is None:
        return None
    kind = kind_of(value)
    if kind in ("N", "BOOL", "NULL"):
        return None
    return {"N": str(len(value[kind]))}


def lookup(item: Mapping[str, Typed], steps: Steps) -> Typed | None:
    """The value at a document path of an item (None: not there)."""
    value: Any = item.get(str(steps[0]))
    for step in steps[1:]:
        if value is None:
            return None
        if isinstance(step, int):
            elements = value.get("L")
            if elements is None or step >= len(elements):
                return None
            value = elements[step]
        else:
            members = value.get("M")
            if members is None:
                return None
            value = members.get(step)
    return value  # type: ignore[no-any-return]


# --- Text -----------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|(<>|<=|>=|[=<>(),.\[\]+-])"
    r"|([A-Za-z_][A-Za-z0-9_]*)|([0-9]+))"
)
_TOKEN_KINDS = ("name", "value", "op", "word", "number")
_COMPARATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
_PREDICATES = frozenset(
    {"attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains"}
)


class _Token(NamedTuple):
    kind: str  # name (#n), value (:v), op, word, number, end
    text: str


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    at, end = 0, len(text.rstrip())
    while at < end:
        match = _TOKEN.match(text, at)
        if match is None or match.lastindex is None:
            near = text[at:].lstrip()[:1]
            raise InvalidExpression(f'Syntax error; token: "{near}", near: "{text[at:]}"')
        tokens.append(_Token(_TOKEN_KINDS[match.lastindex - 1], match.group(match.lastindex)))
        at = match.end()
    tokens.append(_Token("end", "<EOF>"))
    return tokens


# --- Syntax tree ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Path:
    """A document path as written: attribute names, ``#name`` placeholders, list indexes."""

    elements: tuple[str | int, ...]

    @functools.cached_property
    def _placeholders(self) -> bool:
        return any(isinstance(e, str) and e.startswith("#") for e in self.elements)

    def resolve(self, names: Names) -> Steps:
        """The path with its placeholders replaced by the names they stand for."""
        if not self._placeholders:
            return self.elements
        return tuple(
            names[e] if isinstance(e, str) and e.startswith("#") else e for e in self.elements
        )

    def __str__(self) -> str:
        text = ""
        for e in self.elements:
            text += f"[{e}]" if isinstance(e, int) else f".{e}" if text else e
        return text


class _Value(NamedTuple):
    name: str


class _Size(NamedTuple):
    path: Path


class _Compare(NamedTuple):
    op: str
    left: Any
    right: Any


class _Between(NamedTuple):
    operand: Any
    low: Any
    high: Any


class _In(NamedTuple):
    operand: Any
    choices: tuple[Any, ...]


class _And(NamedTuple):
    left: Any
    right: Any


class _Or(NamedTuple):
    left: Any
    right: Any


class _Not(NamedTuple):
    inner: Any


class _Call(NamedTuple):
    function: str
    args: tuple[Any, ...]


class _Arith(NamedTuple):
    op: str
    left: Any
    right: Any


class _IfNotExists(NamedTuple):
    path: Path
    default: Any


class _ListAppend(NamedTuple):
    first: Any
    second: Any


class _Parser:
    """Recursive descent over one expression's tokens; notes the placeholders it meets."""

    def __init__(self, text: str) -> None:
        if not text.strip():
            raise InvalidExpression("The expression can not be empty;")
        self._text = text
        self._tokens = _tokenize(text)
        self._at = 0
        self.names: set[str] = set()
        self.values: set[str] = set()

    def _peek(self, ahead: int = 0) -> _Token:
        return self._tokens[min(self._at + ahead, len(self._tokens) - 1)]

    def _take(self) -> _Token:
        token = self._peek()
        self._at = min(self._at + 1, len(self._tokens) - 1)
        return token

    def _error(self) -> InvalidExpression:
        token = self._peek()
        return InvalidExpression(f'Syntax error; token: "{token.text}", near: "{self._text}"')

    def _op(self, text: str) -> bool:
        """Take the operator ``text`` if it comes next."""
        token = self._peek()
        if token.kind == "op" and token.text == text:
            self._at += 1
            return True
        return False

    def _keyword(self, word: str) -> bool:
        """Take the keyword ``word`` (any case) if it comes next."""
        token = self._peek()
        if token.kind == "word" and token.text.upper() == word:
            self._at += 1
            return True
        return False

    def _expect(self, text: str) -> None:
        if not (self._op(text) or self._keyword(text)):
            raise self._error()

    def done(self) -> None:
        if self._peek().kind != "end":
            raise self._error()

    # paths and operands

    def path(self) -> Path:
        elements: list[str | int] = [self._element()]
        while True:
            if self._op("."):
                elements.append(self._element())
            elif self._op("["):
                token = self._take()
                if token.kind != "number":
                    raise self._error()
                self._expect("]")
                elements.append(int(token.text))
            else:
                return Path(tuple(elements))

    def _element(self) -> str:
        token = self._peek()
        if token.kind == "name":
            self._take()
            self.names.add(token.text)
            return token.text
        if token.kind == "word":
            if token.text.upper() in _RESERVED:
                raise InvalidExpression(
                    f"Attribute name is a reserved keyword; reserved keyword: {token.text}"
                )
            self._take()
            return token.text
        raise self._error()

    def _value(self) -> _Value:
        token = self._take()
        if token.kind != "value":
            self._at -= 1
            raise self._error()
        self.values.add(token.text)
        return _Value(token.text)

    def _is_call(self, *functions: str) -> bool:
        token, after = self._peek(), self._peek(1)
        return (
            token.kind == "word"
            and token.text in functions
            and after.kind == "op"
            and after.text == "("
        )

    def operand(self) -> Any:
        """A path, a ``:value`` or ``size(path)``."""
        if self._peek().kind == "value":
            return self._value()
        if self._is_call("size"):
            self._at += 2
            path = self.path()
            self._expect(")")
            return _Size(path)
        return self.path()

    # conditions

    def condition(self) -> Any:
        node = self._conjunction()
        while self._keyword("OR"):
            node = _Or(node, self._conjunction())
        return node

    def _conjunction(self) -> Any:
        node = self._negation()
        while self._keyword("AND"):
            node = _And(node, self._negation())
        return node

    def _negation(self) -> Any:
        if self._keyword("NOT"):
            return _Not(self._negation())
        return self._primary()

    def _primary(self) -> Any:
        if self._op("("):
            node = self.condition()
            self._expect(")")
            return node
        if self._is_call(*_PREDICATES):
            return self._call()
        left = self.operand()
        if self._keyword("BETWEEN"):
            low = self.operand()
            self._expect("AND")
            return _Between(left, low, self.operand())
        if self._keyword("IN"):
            self._expect("(")
            choices = [self.operand()]
            while self._op(","):
                choices.append(self.operand())
            self._expect(")")
            return _In(left, tuple(choices))
        token = self._peek()
        if token.kind == "op" and token.text in _COMPARATORS:
            self._take()
            return _Compare(token.text, left, self.operand())
        raise self._error()

    def _call(self) -> _Call:
        function = self._take().text
        self._expect("(")
        args = [self.path()]
        if function not in ("attribute_exists", "attribute_not_exists"):
            self._expect(",")
            args.append(self.operand())
        self._expect(")")
        return _Call(function, tuple(args))

    # updates

    def update(self) -> dict[str, list[Any]]:
        sections: dict[str, list[Any]] = {}
        while self._peek().kind != "end":
            token = self._take()
            clause = token.text.upper() if token.kind == "word" else ""
            if clause not in ("SET", "REMOVE", "ADD", "DELETE"):
                self._at -= 1
                raise self._error()
            if clause in sections:
                raise InvalidExpression(
                    f'The "{clause}" section can only be used once in an update expression;'
                )
            actions = [self._action(clause)]
            while self._op(","):
                actions.append(self._action(clause))
            sections[clause] = actions
        return sections

    def _action(self, clause: str) -> Any:
        path = self.path()
        if clause == "SET":
            self._expect("=")
            return (path, self._update_value())
        if clause == "REMOVE":
            return path
        return (path, self._value().name)

    def _update_value(self) -> Any:
        left = self._update_operand()
        token = self._peek()
        if token.kind == "op" and token.text in ("+", "-"):
            self._take()
            return _Arith(token.text, left, self._update_operand())
        return left

    def _update_operand(self) -> Any:
        if self._peek().kind == "value":
            return self._value()
        if self._is_call("if_not_exists"):
            self._at += 2
            path = self.path()
            self._expect(",")
            default = self._update_operand()
            self._expect(")")
            return _IfNotExists(path, default)
        if self._is_call("list_append"):
            self._at += 2
            first = self._update_operand()
            self._expect(",")
            second = self._update_operand()
            self._expect(")")
            return _ListAppend(first, second)
        return self.path()

    # projections

    def paths(self) -> list[Path]:
        found = [self.path()]
        while self._op(","):
            found.append(self.path())
        return found


# --- Conditions -----------------------------------------------------------------------------


def _reader(path: Path) -> Operand:
    """An operand reading ``path`` of the item (None when missing)."""
    elements = path.elements
    if len(elements) == 1:
        head = elements[0]
        if isinstance(head, str) and head.startswith("#"):
            return lambda item, names, values: item.get(names[head])
        name = str(head)
        return lambda item, names, values: item.get(name)
    return lambda item, names, values: lookup(item, path.resolve(names))


def _operand(node: Any) -> Operand:
    if isinstance(node, _Value):
        name = node.name
        return lambda item, names, values: values[name]
    if isinstance(node, _Size):
        read = _reader(node.path)
        return lambda item, names, values: _size(read(item, names, values))
    return _reader(node)


def _less(a: Typed | None, b: Typed | None) -> bool:
    found = order(a, b)
    return found is not None and found < 0


def _less_or_equal(a: Typed | None, b: Typed | None) -> bool:
    found = order(a, b)
    return found is not None and found <= 0


_COMPARE: dict[str, Callable[[Typed | None, Typed | None], bool]] = {
    "=": equal,
    "<>": lambda a, b: not equal(a, b),
    "<": _less,
    "<=": _less_or_equal,
    ">": lambda a, b: _less(b, a),
    ">=": lambda a, b: _less_or_equal(b, a),
}


def _contains(container: Typed | None, member: Typed | None) -> bool:
    if container is None or member is None:
        return False
    kind, wanted = kind_of(container), kind_of(member)
    if kind == "S" and wanted == "S":
        return bool(member["S"] in container["S"])
    if kind == "B" and wanted == "B":
        return bytes(member["B"]) in bytes(container["B"])
    if kind in _SETS and wanted == kind[0]:
        return any(equal({wanted: e}, member) for e in container[kind])
    if kind == "L":
        return any(equal(e, member) for e in container["L"])
    return False


def _begins_with(value: Typed | None, prefix: Typed | None) -> bool:
    if value is None or prefix is None:
        return False
    kind = kind_of(value)
    if kind != kind_of(prefix) or kind not in ("S", "B"):
        return False
    if kind == "S":
        return bool(value["S"].startswith(prefix["S"]))
    return bytes(value["B"]).startswith(bytes(prefix["B"]))


def _has_type(value: Typed | None, type_name: Typed | None) -> bool:
    name = (type_name or {}).get("S")
    if name not in TYPE_NAMES:
        raise ExpressionError(
            f"Invalid ConditionExpression: Invalid attribute type name found; type: {name}, "
            f"valid types: {{{','.join(TYPE_NAMES)}}}"
        )
    return value is not None and kind_of(value) == name


def _compile_call(node: _Call) -> Predicate:
    read = _reader(node.args[0])
    if node.function == "attribute_exists":
        return lambda item, names, values: read(item, names, values) is not None
    if node.function == "attribute_not_exists":
        return lambda item, names, values: read(item, names, values) is None
    second = _operand(node.args[1])
    test = {"attribute_type": _has_type, "begins_with": _begins_with, "contains": _contains}[
        node.function
    ]
    return lambda item, names, values: test(read(item, names, values), second(item, names, values))


def _compile(node: Any) -> Predicate:
    if isinstance(node, _And):
        a, b = _compile(node.left), _compile(node.right)
        return lambda item, names, values: a(item, names, values) and b(item, names, values)
    if isinstance(node, _Or):
        a, b = _compile(node.left), _compile(node.right)
        return lambda item, names, values: a(item, names, values) or b(item, names, values)
    if isinstance(node, _Not):
        inner = _compile(node.inner)
        return lambda item, names, values: not inner(item, names, values)
    if isinstance(node, _Compare):
        left, right, test = _operand(node.left), _operand(node.right), _COMPARE[node.op]
        return lambda item, names, values: test(
            left(item, names, values), right(item, names, values)
        )
    if isinstance(node, _Between):
        x, low, high = _operand(node.operand), _operand(node.low), _operand(node.high)

        def between(item: Mapping[str, Typed], names: Names, values: Values) -> bool:
            value = x(item, names, values)
            return _less_or_equal(low(item, names, values), value) and _less_or_equal(
                value, high(item, names, values)
            )

        return between
    if isinstance(node, _In):
        x, choices = _operand(node.operand), [_operand(c) for c in node.choices]

        def among(item: Mapping[str, Typed], names: Names, values: Values) -> bool:
            value = x(item, names, values)
            return any(equal(value, c(item, names, values)) for c in choices)

        return among
    if isinstance(node, _Call):
        return _compile_call(node)
    raise InvalidExpression(f"Not a condition: {node}")


@dataclass(frozen=True)
class Condition:
    """A ConditionExpression or FilterExpression, parsed."""

    text: str
    test: Predicate
    tree: Any
    names: frozenset[str]
    values: frozenset[str]


@functools.lru_cache(maxsize=4096)
def condition(text: str) -> Condition:
    """``text`` parsed (once per text) as a condition."""
    parser = _Parser(text)
    tree = parser.condition()
    parser.done()
    return Condition(text, _compile(tree), tree, frozenset(parser.names), frozenset(parser.values))


# --- Key conditions -------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyPart:
    """One key attribute's condition: ``operator`` is =, <, <=, >, >=, BETWEEN or
    begins_with; ``values`` are the placeholders of its operands."""

    path: Path
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class KeyCondition:
    """A KeyConditionExpression: the partition key's equality and at most one condition on
    the sort key (which is which is known only once names are resolved)."""

    parts: tuple[KeyPart, ...]
    names: frozenset[str]
    values: frozenset[str]


def _key_part(node: Any) -> KeyPart:
    if isinstance(node, _Compare) and node.op != "<>":
        if isinstance(node.left, Path) and isinstance(node.right, _Value):
            return KeyPart(node.left, node.op, (node.right.name,))
        if isinstance(node.left, _Value) and isinstance(node.right, Path):
            flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(node.op, node.op)
            return KeyPart(node.right, flipped, (node.left.name,))
    if (
        isinstance(node, _Between)
        and isinstance(node.operand, Path)
        and isinstance(node.low, _Value)
        and isinstance(node.high, _Value)
    ):
        return KeyPart(node.operand, "BETWEEN", (node.low.name, node.high.name))
    if (
        isinstance(node, _Call)
        and node.function == "begins_with"
        and isinstance(node.args[1], _Value)
    ):
        return KeyPart(node.args[0], "begins_with", (node.args[1].name,))
    if isinstance(node, _Or | _Not | _In):
        operator = type(node).__name__.strip("_").upper()
        raise InvalidExpression(f"Invalid operator used in KeyConditionExpression: {operator}")
    raise InvalidExpression("Query key condition not supported")


@functools.lru_cache(maxsize=1024)
def key_condition(text: str) -> KeyCondition:
    """``text`` parsed (once per text) as a KeyConditionExpression."""
    parser = _Parser(text)
    tree = parser.condition()
    parser.done()
    nodes = [tree.left, tree.right] if isinstance(tree, _And) else [tree]
    if any(isinstance(n, _And) for n in nodes):
        raise InvalidExpression("The expression has too many conditions on the key")
    parts = tuple(_key_part(n) for n in nodes)
    for part in parts:
        if len(part.path.elements) != 1:
            raise InvalidExpression("Key condition may not use a nested path")
    return KeyCondition(parts, frozenset(parser.names), frozenset(parser.values))


# --- Updates --------------------------------------------------------------------------------


def _incorrect(operator: str, value: Typed) -> ExpressionError:
    return ExpressionError(
        "Invalid UpdateExpression: Incorrect operand type for operator or function; "
        f"operator or function: {operator}, operand type: {kind_of(value)}"
    )


def _arithmetic(op: str, a: Typed, b: Typed) -> Typed:
    for value in (a, b):
        if kind_of(value) != "N":
            raise _incorrect(op, value)
    x, y = decimal(a["N"]), decimal(b["N"])
    return {"N": number_text(x + y if op == "+" else x - y)}


def _list_append(a: Typed, b: Typed) -> Typed:
    for value in (a, b):
        if kind_of(value) != "L":
            raise _incorrect("list_append", value)
    return {"L": [*a["L"], *b["L"]]}


def _update_operand(node: Any) -> Callable[[Mapping[str, Typed], Names, Values], Typed]:
    """A SET operand; one reading a missing attribute is refused."""
    if isinstance(node, _Value):
        name = node.name
        return lambda item, names, values: values[name]
    if isinstance(node, _Arith):
        op, a, b = node.op, _update_operand(node.left), _update_operand(node.right)
        return lambda item, names, values: _arithmetic(
            op, a(item, names, values), b(item, names, values)
        )
    if isinstance(node, _ListAppend):
        a, b = _update_operand(node.first), _update_operand(node.second)
        return lambda item, names, values: _list_append(
            a(item, names, values), b(item, names, values)
        )
    if isinstance(node, _IfNotExists):
        read, default = _reader(node.path), _update_operand(node.default)

        def if_not_exists(item: Mapping[str, Typed], names: Names, values: Values) -> Typed:
            found = read(item, names, values)
            return found if found is not None else default(item, names, values)

        return if_not_exists
    read = _reader(node)

    def existing(item: Mapping[str, Typed], names: Names, values: Values) -> Typed:
        found = read(item, names, values)
        if found is None:
            raise ExpressionError(MISSING_OPERAND)
        return found

    return existing


def _member_key(kind: str) -> Callable[[Any], Any]:
    return decimal if kind == "NS" else bytes if kind == "BS" else str


def _add(old: Typed | None, value: Typed) -> Typed:
    """ADD: a number added to, or members joined to a set (a missing attribute is 0 or the
    empty set)."""
    kind = kind_of(value)
    if kind not in _SETS and kind != "N":
        raise _incorrect("ADD", value)
    if old is None:
        return value
    if kind_of(old) != kind:
        raise ExpressionError(INCORRECT_TYPE)
    if kind == "N":
        return {"N": number_text(decimal(old["N"]) + decimal(value["N"]))}
    key = _member_key(kind)
    have = {key(m) for m in old[kind]}
    added = [m for m in dict.fromkeys(value[kind]) if key(m) not in have]
    return {kind: [*old[kind], *added]} if added else old


def _subtract(old: Typed | None, value: Typed) -> Typed | None:
    """DELETE: members taken out of a set; None when none is left (or there was none)."""
    kind = kind_of(value)
    if kind not in _SETS:
        raise _incorrect("DELETE", value)
    if old is None:
        return None
    if kind_of(old) != kind:
        raise ExpressionError(INCORRECT_TYPE)
    key = _member_key(kind)
    gone = {key(m) for m in value[kind]}
    left = [m for m in old[kind] if key(m) not in gone]
    return {kind: left} if left else None


def _set_in(container: Typed | None, steps: Steps, value: Typed) -> Typed:
    """``container`` (a map or list) with ``value`` at ``steps`` under it; copied, never
    changed in place."""
    step = steps[0]
    if isinstance(step, int):
        if container is None or "L" not in container:
            raise ExpressionError(INVALID_PATH)
        elements = list(container["L"])
        if len(steps) == 1:
            if step < len(elements):
                elements[step] = value
            else:
                elements.append(value)
        elif step < len(elements):
            elements[step] = _set_in(elements[step], steps[1:], value)
        else:
            raise ExpressionError(INVALID_PATH)
        return {"L": elements}
    if container is None or "M" not in container:
        raise ExpressionError(INVALID_PATH)
    members = dict(container["M"])
    members[step] = value if len(steps) == 1 else _set_in(members.get(step), steps[1:], value)
    return {"M": members}


def _without(container: Typed, steps: Steps) -> Typed:
    """``container`` without what is at ``steps`` under it (copied; unchanged if absent)."""
    step = steps[0]
    if isinstance(step, int):
        if "L" not in container:
            raise ExpressionError(INVALID_PATH)
        elements = container["L"]
        if step >= len(elements):
            return container
        if len(steps) == 1:
            return {"L": elements[:step] + elements[step + 1 :]}
        changed = list(elements)
        changed[step] = _without(elements[step], steps[1:])
        return {"L": changed}
    if "M" not in container:
        raise ExpressionError(INVALID_PATH)
    members = container["M"]
    if len(steps) == 1:
        if step not in members:
            return container
        return {"M": {k: v for k, v in members.items() if k != step}}
    inner = members.get(step)
    if inner is None:
        raise ExpressionError(INVALID_PATH)
    return {"M": {**members, step: _without(inner, steps[1:])}}


def _assign(item: Item, steps: Steps, value: Typed) -> None:
    head = steps[0]
    assert isinstance(head, str)
    item[head] = value if len(steps) == 1 else _set_in(item.get(head), steps[1:], value)


def _remove(item: Item, steps: Steps) -> None:
    head = steps[0]
    assert isinstance(head, str)
    if len(steps) == 1:
        item.pop(head, None)
        return
    current = item.get(head)
    if current is None:
        raise ExpressionError(INVALID_PATH)
    item[head] = _without(current, steps[1:])


def _check_overlap(paths: list[Steps]) -> None:
    """DynamoDB refuses an update naming a path twice, or a path and a path inside it."""
    seen: set[Steps] = set()
    for steps in paths:
        if steps in seen:
            raise _overlap(steps, steps)
        seen.add(steps)
    for steps in paths:
        for end in range(1, len(steps)):
            if steps[:end] in seen:
                raise _overlap(steps[:end], steps)


def _overlap(one: Steps, two: Steps) -> ExpressionError:
    return ExpressionError(
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or "
        f"rewrite one of these paths; path one: [{', '.join(map(str, one))}], "
        f"path two: [{', '.join(map(str, two))}]"
    )


@dataclass(frozen=True)
class Update:
    """An UpdateExpression, parsed: its SET, REMOVE, ADD and DELETE actions."""

    text: str
    sets: tuple[tuple[Path, Callable[[Mapping[str, Typed], Names, Values], Typed]], ...]
    removes: tuple[Path, ...]
    adds: tuple[tuple[Path, str], ...]
    deletes: tuple[tuple[Path, str], ...]
    names: frozenset[str]
    values: frozenset[str]

    def apply(
        self,
        item: Mapping[str, Typed],
        names: Names,
        values: Values,
        keys: Iterable[str] = (),
    ) -> tuple[Item, list[Steps]]:
        """The item as the update leaves it (a new dict: ``item`` is left as it is), and the
        paths it touched. Every operand is read from ``item`` as it was; ``keys`` (the
        table's key attributes) may not be touched."""
        writes: list[tuple[Steps, Typed | None]] = [
            (path.resolve(names), value(item, names, values)) for path, value in self.sets
        ]
        for path, name in self.adds:
            steps = path.resolve(names)
            writes.append((steps, _add(lookup(item, steps), values[name])))
        for path, name in self.deletes:
            steps = path.resolve(names)
            writes.append((steps, _subtract(lookup(item, steps), values[name])))
        writes.extend((path.resolve(names), None) for path in self.removes)
        touched = [steps for steps, _ in writes]
        if len(touched) > 1:
            _check_overlap(touched)
        for steps in touched:
            if str(steps[0]) in keys:
                raise ExpressionError(
                    f"One or more parameter values were invalid: Cannot update attribute "
                    f"{steps[0]}. This attribute is part of the key"
                )
        result = dict(item)
        removals: list[Steps] = []
        for steps, value in writes:
            if value is None:
                removals.append(steps)
            else:
                _assign(result, steps, value)
        # (list elements removed from the last: each index names the element it named before)
        removals.sort(key=lambda s: s[-1] if isinstance(s[-1], int) else -1, reverse=True)
        for steps in removals:
            _remove(result, steps)
        return result, touched


@functools.lru_cache(maxsize=4096)
def update(text: str) -> Update:
    """``text`` parsed (once per text) as an UpdateExpression."""
    parser = _Parser(text)
    sections = parser.update()
    return Update(
        text,
        sets=tuple((path, _update_operand(node)) for path, node in sections.get("SET", [])),
        removes=tuple(sections.get("REMOVE", [])),
        adds=tuple(sections.get("ADD", [])),
        deletes=tuple(sections.get("DELETE", [])),
        names=frozenset(parser.names),
        values=frozenset(parser.values),
    )


# --- Projections ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """A ProjectionExpression, parsed: the paths to keep."""

    paths: tuple[Path, ...]
    names: frozenset[str]

    def apply(self, item: Mapping[str, Typed], names: Names) -> Item:
        return project(item, [p.resolve(names) for p in self.paths])


@functools.lru_cache(maxsize=1024)
def projection(text: str) -> Projection:
    """``text`` parsed (once per text) as a ProjectionExpression."""
    parser = _Parser(text)
    paths = parser.paths()
    parser.done()
    return Projection(tuple(paths), frozenset(parser.names))


#: Which parts of a value to keep: None keeps all of it; otherwise member name or list index
#: -> what to keep of that member.
_Tree = dict[str | int, Any]


def project(item: Mapping[str, Typed], paths: Iterable[Steps]) -> Item:
    """Only the attributes at ``paths`` (nested values keep the structure around them; the
    elements kept of a list close ranks, in index order)."""
    paths = list(paths)
    if all(len(p) == 1 for p in paths):
        tops = [str(p[0]) for p in paths]
        return {name: item[name] for name in tops if name in item}
    tree: _Tree = {}
    for steps in paths:
        node = tree
        for step in steps[:-1]:
            child = node.setdefault(step, {})
            if child is None:  # (a path inside one kept whole)
                break
            node = child
        else:
            node[steps[-1]] = None
    return _pick_members(item, tree)


def _pick_members(members: Mapping[str, Typed], tree: _Tree) -> Item:
    kept: Item = {}
    for name, sub in tree.items():
        value = members.get(name) if isinstance(name, str) else None
        if value is None:
            continue
        picked = value if sub is None else _pick(value, sub)
        if picked is not None:
            kept[str(name)] = picked
    return kept


def _pick(value: Typed, tree: _Tree) -> Typed | None:
    if "M" in value:
        members = _pick_members(value["M"], tree)
        return {"M": members} if members else None
    if "L" in value:
        elements = value["L"]
        picked = [
            elements[i] if sub is None else _pick(elements[i], sub)
            for i, sub in sorted((k, s) for k, s in tree.items() if isinstance(k, int))
            if i < len(elements)
        ]
        kept = [p for p in picked if p is not None]
        return {"L": kept} if kept else None
    return None


# --- Placeholders ---------------------------------------------------------------------------


def check_placeholders(
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
    used_names: frozenset[str],
    used_values: frozenset[str],
) -> None:
    """Refuse, as DynamoDB does, placeholders used but not given, and given but not used."""
    if values is not None and not values:
        raise ExpressionError("ExpressionAttributeValues must not be empty")
    if names is not None and not names:
        raise ExpressionError("ExpressionAttributeNames must not be empty")
    given_names = names.keys() if names else frozenset()
    given_values = values.keys() if values else frozenset()
    if given_names == used_names and given_values == used_values:
        return
    for name in sorted(used_names - given_names):
        raise ExpressionError(
            "An expression attribute name used in the document path is not defined; "
            f"attribute name: {name}"
        )
    for value in sorted(used_values - given_values):
        raise ExpressionError(
            "An expression attribute value used in expression is not defined; "
            f"attribute value: {value}"
        )
    if unused := sorted(given_names - used_names):
        raise ExpressionError(
            "Value provided in ExpressionAttributeNames unused in expressions: "
            f"keys: {{{', '.join(unused)}}}"
        )
    unused = sorted(given_values - used_values)
    raise ExpressionError(
        "Value provided in ExpressionAttributeValues unused in expressions: "
        f"keys: {{{', '.join(unused)}}}"
    )
