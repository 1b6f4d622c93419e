"""The run state machine's conditional writes, read from its ASL file (one reading, used by the
fakes): a fake of the state machine decides each of its writes by the condition the file gives
that state, so that a change to the file changes what the fast tests check.

``GATES`` holds, for each DynamoDB write of the file that has a ``ConditionExpression``, its
condition; ``Gate.allows`` evaluates it against an item (a plain dict of attribute values, as
the codecs make them; None when there is no item) with a small evaluator of DynamoDB's
condition grammar: comparisons (``= <> < <= > >=``), ``IN``, ``BETWEEN``, ``AND``, ``OR``,
``NOT``, parentheses, ``attribute_exists``, ``attribute_not_exists``, ``contains``,
``begins_with``. A value is the file's own (``{"S": "RUNNING"}``) or read from the state's
input (``{"S.$": "$.run_id"}``; ``$$.State.EnteredTime`` is ``now``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chronoq.execution import machines

#: An attribute the item does not have (every comparison with it is false, as in DynamoDB).
_MISSING = object()

_TOKEN = re.compile(
    r"\s*(?:(?P<op><>|<=|>=|=|<|>)|(?P<punct>[(),])|(?P<value>:[A-Za-z0-9_]+)"
    r"|(?P<name>#?[A-Za-z_][A-Za-z0-9_.]*))"
)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "BETWEEN"}
_FUNCTIONS = {"attribute_exists", "attribute_not_exists", "contains", "begins_with"}

#: item, the state's input, now -> true or false
Predicate = Callable[[Mapping[str, Any], Mapping[str, Any], str], bool]
#: the same -> a value (or _MISSING)
Operand = Callable[[Mapping[str, Any], Mapping[str, Any], str], Any]


class UnreadableCondition(ValueError):
    """A condition (or value) of the ASL file this reading does not understand."""


def _tokens(expression: str) -> list[str]:
    tokens, at = [], 0
    expression = expression.rstrip()
    while at < len(expression):
        match = _TOKEN.match(expression, at)
        if match is None or match.end() == at:
            raise UnreadableCondition(f"cannot read {expression[at:]!r} in {expression!r}")
        tokens.append(match.group(match.lastgroup or "name"))
        at = match.end()
    return tokens


def _path(document: Mapping[str, Any], path: str, now: str) -> Any:
    """A JSONPath of the simple kind the ASL uses (``$.a.b``) into the state's input."""
    if path == "$$.State.EnteredTime":
        return now
    if not path.startswith("$."):
        raise UnreadableCondition(f"cannot read the path {path!r}")
    found: Any = document
    for part in path[2:].split("."):
        found = found[part]
    return found


def _typed(value: Mapping[str, Any], document: Mapping[str, Any], now: str) -> Any:
    """A typed value of ExpressionAttributeValues as a plain one."""
    ((kind, given),) = value.items()
    if kind.endswith(".$"):
        kind, given = kind[:-2], _path(document, given, now)
    if kind == "S" or kind == "BOOL":
        return given
    if kind == "N":
        return Decimal(str(given))
    if kind in ("SS", "NS"):
        return set(given)
    raise UnreadableCondition(f"cannot read a value of type {kind}")


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is _MISSING or right is _MISSING:
        return False
    if isinstance(left, (int, float)):
        left = Decimal(str(left))
    if isinstance(right, (int, float)):
        right = Decimal(str(right))
    try:
        return {
            "=": lambda: bool(left == right),
            "<>": lambda: bool(left != right),
            "<": lambda: bool(left < right),
            "<=": lambda: bool(left <= right),
            ">": lambda: bool(left > right),
            ">=": lambda: bool(left >= right),
        }[op]()
    except TypeError:  # (different types: DynamoDB finds the condition false)
        return False


@dataclass
class _Parser:
    tokens: list[str]
    names: Mapping[str, str]
    values: Mapping[str, Any]
    at: int = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        word = self.peek()
        if word is None or (expected is not None and word.upper() != expected):
            raise UnreadableCondition(f"expected {expected or 'more'}, found {word!r}")
        self.at += 1
        return word

    def condition(self) -> Predicate:
        left = self.conjunction()
        while (self.peek() or "").upper() == "OR":
            self.take()
            a, b = left, self.conjunction()
            left = functools.partial(lambda a, b, i, d, n: a(i, d, n) or b(i, d, n), a, b)
        return left

    def conjunction(self) -> Predicate:
        left = self.negation()
        while (self.peek() or "").upper() == "AND":
            self.take()
            a, b = left, self.negation()
            left = functools.partial(lambda a, b, i, d, n: a(i, d, n) and b(i, d, n), a, b)
        return left

    def negation(self) -> Predicate:
        if (self.peek() or "").upper() == "NOT":
            self.take()
            inner = self.negation()
            return lambda i, d, n: not inner(i, d, n)
        return self.primary()

    def primary(self) -> Predicate:
        word = self.peek()
        if word == "(":
            self.take()
            inner = self.condition()
            self.take(")")
            return inner
        if word in _FUNCTIONS:
            return self.function()
        left = self.operand()
        op = self.take()
        if op in ("=", "<>", "<", "<=", ">", ">="):
            right = self.operand()
            return lambda i, d, n: _compare(op, left(i, d, n), right(i, d, n))
        if op.upper() == "IN":
            self.take("(")
            options = [self.operand()]
            while self.peek() == ",":
                self.take()
                options.append(self.operand())
            self.take(")")
            return lambda i, d, n: any(_compare("=", left(i, d, n), o(i, d, n)) for o in options)
        if op.upper() == "BETWEEN":
            low = self.operand()
            self.take("AND")
            high = self.operand()
            return lambda i, d, n: (
                _compare(">=", left(i, d, n), low(i, d, n))
                and _compare("<=", left(i, d, n), high(i, d, n))
            )
        raise UnreadableCondition(f"cannot read {op!r}")

    def function(self) -> Predicate:
        name = self.take()
        self.take("(")
        path = self.operand()
        argument = None
        if self.peek() == ",":
            self.take()
            argument = self.operand()
        self.take(")")
        if name == "attribute_exists":
            return lambda i, d, n: path(i, d, n) is not _MISSING
        if name == "attribute_not_exists":
            return lambda i, d, n: path(i, d, n) is _MISSING
        assert argument is not None
        operand = argument
        if name == "contains":

            def contains(i: Mapping[str, Any], d: Mapping[str, Any], n: str) -> bool:
                whole, part = path(i, d, n), operand(i, d, n)
                return whole is not _MISSING and part is not _MISSING and part in whole

            return contains

        def begins_with(i: Mapping[str, Any], d: Mapping[str, Any], n: str) -> bool:
            whole, part = path(i, d, n), operand(i, d, n)
            return isinstance(whole, str) and isinstance(part, str) and whole.startswith(part)

        return begins_with

    def operand(self) -> Operand:
        word = self.take()
        if word.upper() in _KEYWORDS or word in "(),":
            raise UnreadableCondition(f"expected an attribute or a value, found {word!r}")
        if word.startswith(":"):
            if word in self.values:
                typed = self.values[word]
                return lambda i, d, n: _typed(typed, d, n)
            if word + ".$" in self.values:
                path = self.values[word + ".$"]
                return lambda i, d, n: _path(d, path, n)
            raise UnreadableCondition(f"the value {word} is not given")
        if word.startswith("#"):
            if word not in self.names:
                raise UnreadableCondition(f"the name {word} is not given")
            word = self.names[word]
        attribute = word
        return lambda i, d, n: i.get(attribute, _MISSING)


@dataclass(frozen=True)
class Gate:
    """The condition of one conditional write of the state machine."""

    state: str
    #: The table's placeholder in the file (``RunsTable``, ``JobsTable``).
    table: str
    expression: str
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def _predicate(self) -> Predicate:
        parser = _Parser(_tokens(self.expression), self.names, self.values)
        predicate = parser.condition()
        if parser.peek() is not None:
            raise UnreadableCondition(f"cannot read {self.expression!r} past {parser.peek()!r}")
        return predicate

    def allows(
        self,
        item: Mapping[str, Any] | None,
        document: Mapping[str, Any] | None = None,
        now: str = "",
    ) -> bool:
        """Would DynamoDB accept the write on ``item`` (None: no item), the state's input
        being ``document``?"""
        present = {k: v for k, v in (item or {}).items() if v is not None}
        return self._predicate(present, document or {}, now)


def load_definition() -> dict[str, Any]:
    """The run state machine as the file holds it (placeholders unfilled)."""
    definition: dict[str, Any] = json.loads(machines.STATE_MACHINE.path.read_text())
    return definition


def gates_of(definition: Mapping[str, Any]) -> dict[str, Gate]:
    """Every DynamoDB write of ``definition`` that has a condition, by state name (each
    condition is read once here: one it cannot read fails now, not at its first use)."""
    found = {}
    for name, state in definition["States"].items():
        resource = str(state.get("Resource", ""))
        parameters = state.get("Parameters", {})
        if not resource.startswith("arn:aws:states:::dynamodb:"):
            continue
        if "ConditionExpression" not in parameters:
            continue
        gate = Gate(
            state=name,
            table=str(parameters["TableName"]).removeprefix("${").removesuffix("}"),
            expression=parameters["ConditionExpression"],
            names=parameters.get("ExpressionAttributeNames", {}),
            values=parameters.get("ExpressionAttributeValues", {}),
        )
        gate._predicate  # noqa: B018 - read it now
        found[name] = gate
    return found


@functools.cache
def gates() -> dict[str, Gate]:
    """The conditional writes of the run state machine's file."""
    return gates_of(load_definition())


def gate(state: str) -> Gate | None:
    """The condition of ``state``'s write; None when the file gives it none (the write then
    always happens)."""
    return gates().get(state)
