"""chronoq local's ASL interpreter: runs the run state machine (and its EXPRESS variant, a Map
over a batch of runs) from the same ASL file CDK deploys to Step Functions, as the Amazon
States Language specifies (JSONPath flavour).

A definition is compiled once (``Interpreter``): each state becomes an object holding
ready-made closures for its paths, payload templates, intrinsic functions and Choice rules, so
an execution does not read JSON structure as it goes. Documents are never changed in place
(ResultPath copies what it changes), so a state's input stays as it was entered.

Task work is delegated to handlers picked by the resource ARN's longest matching prefix
(``TaskHandler``). Time is the clock's (chronoq.local.clock.LocalClock's interface): Wait
states and retry intervals wait on it; a task's timeout and heartbeat race the task's own
work, so they follow the clock too, except on a clock that skips its waits, where they follow
the wall clock (a skipping clock runs at the wall's pace between skips).

Why this module is long: it is one interpreter of one language: the ASL's states, paths,
payload templates, intrinsic functions, Choice rules, Retry and Catch, Map and its batches. Its
parts share the compiled states, the execution's scope and the clock; split, one
specification's semantics would be spread over modules reaching into each other's internals.
"""

from __future__ import annotations

import base64
import hashlib
import json
import queue
import random as _random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from chronoq.local.clock import Waits

# --- What handlers and callers see --------------------------------------------------------


class Clock(Protocol):
    """The time an interpreter runs on (chronoq.local.clock.LocalClock)."""

    def now(self) -> datetime: ...

    def wait(
        self,
        seconds: float,
        woken: threading.Event | None = None,
        running: Callable[[], bool] = ...,
        announced: bool = True,
    ) -> None: ...


class StatesFailure(Exception):
    """A state failed with an ASL error name (catchable and retriable per Retry and Catch)."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


class TaskFailed(StatesFailure):
    """What a task handler raises when its task failed (``error`` as Step Functions names it,
    e.g. ``DynamoDB.ConditionalCheckFailedException``)."""


class RuntimeFailure(StatesFailure):
    """States.Runtime: the interpreter could not process a state (a path that does not
    resolve, a value of the wrong type). Neither retried nor caught: the execution fails."""

    def __init__(self, cause: str) -> None:
        super().__init__("States.Runtime", cause)


class Stopped(Exception):
    """The execution was stopped: every state it is in ends at once."""


RUNTIME = "States.Runtime"
TIMEOUT = "States.Timeout"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
TASK_FAILED = "States.TaskFailed"
ALL = "States.ALL"


class Scope:
    """Whether a part of an execution still runs: the execution, a Map's iterations, one
    task's wait. Stopping a scope stops those within it and wakes their waits."""

    __slots__ = ("_children", "_lock", "event", "stopped")

    def __init__(self, parent: Scope | None = None) -> None:
        self.event = threading.Event()
        self.stopped = False
        self._children: set[Scope] = set()
        self._lock = threading.Lock()
        if parent is not None:
            parent._adopt(self)

    def _adopt(self, child: Scope) -> None:
        with self._lock:
            if self.stopped:
                child.stop()
            else:
                self._children.add(child)

    def leave(self, child: Scope) -> None:
        """Forget ``child`` (its part ended)."""
        with self._lock:
            self._children.discard(child)

    def running(self) -> bool:
        return not self.stopped

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            children = list(self._children)
            self._children.clear()
        self.event.set()
        for child in children:
            child.stop()


class Elapse:
    """How a task's timeout, heartbeat and polls measure time passing: by the clock, or by the
    wall clock when the clock skips its waits."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.wall = getattr(clock, "waits", None) is Waits.SKIP

    def now(self) -> float:
        if self.wall:
            return time.monotonic()
        return self.clock.now().timestamp()

    def wait(self, seconds: float, event: threading.Event, running: Callable[[], bool]) -> None:
        """(Not announced: a task running is at work, not waiting for a time to come.)"""
        if not self.wall:
            self.clock.wait(seconds, event, running, announced=False)
            return
        deadline = time.monotonic() + seconds
        while running() and (left := deadline - time.monotonic()) > 0:
            event.wait(left)


class TaskContext:
    """What a task handler gets besides its parameters: who runs it, and how to report
    heartbeats, see that it should stop (the execution was stopped, or the task timed out:
    Step Functions abandons it) and wait between polls."""

    __slots__ = (
        "_elapse",
        "_scope",
        "_watch",
        "execution_arn",
        "state_machine_arn",
        "state_name",
        "task_token",
    )

    def __init__(
        self,
        execution_arn: str,
        state_machine_arn: str,
        state_name: str,
        task_token: str | None,
        scope: Scope,
        elapse: Elapse,
        watch: _Watch | None = None,
    ) -> None:
        self.execution_arn = execution_arn
        self.state_machine_arn = state_machine_arn
        self.state_name = state_name
        self.task_token = task_token
        self._scope = scope
        self._elapse = elapse
        self._watch = watch

    def heartbeat(self) -> None:
        """The task is alive (restarts its HeartbeatSeconds)."""
        if self._watch is not None:
            self._watch.beat()

    def stopped(self) -> bool:
        """Should the task stop (its result is no longer wanted)?"""
        return self._scope.stopped

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass while work goes on elsewhere (ends early when stopped)."""
        self._elapse.wait(seconds, self._scope.event, self._scope.running)


TaskHandler = Callable[[str, dict[str, Any], TaskContext], Any]
#: Runs a task's call (its result), telling ``spend`` its modeled milliseconds, also when it
#: fails (see Interpreter).
TaskCost = Callable[[Callable[[], Any], Callable[[float], None]], Any]


@dataclass
class Execution:
    """One execution as the interpreter runs it: who it is (the context object's Execution
    and StateMachine), its input, whether it still runs, and what it records."""

    arn: str
    name: str
    state_machine_arn: str
    state_machine_name: str
    input: Any
    start_time: datetime
    role_arn: str = ""
    input_text: str | None = None
    #: History events as (type, timestamp, details), appended as they happen (None: none).
    events: list[tuple[str, datetime, dict[str, Any]]] | None = None
    #: Task tokens of the tasks running now, to their contexts (SendTaskHeartbeat).
    tokens: dict[str, TaskContext] | None = None
    scope: Scope = field(default_factory=Scope)
    #: States entered so far (how AWS bills STANDARD executions).
    transitions: int = 0
    #: What AWS would bill for its duration once it has ended (EXPRESS), in milliseconds,
    #: as the interpreter's cost model has it (see Interpreter).
    billed_ms: float = 0.0
    _context: dict[str, Any] | None = None

    def context(self) -> dict[str, Any]:
        """The context object's Execution and StateMachine parts (made once)."""
        if self._context is None:
            text = self.input_text if self.input_text is not None else _json(self.input)
            self._context = {
                "Execution": {
                    "Id": self.arn,
                    "Name": self.name,
                    "StartTime": iso(self.start_time),
                    "Input": self.input,
                    "RoleArn": self.role_arn,
                    "RedriveCount": 0,
                },
                "StateMachine": {"Id": self.state_machine_arn, "Name": self.state_machine_name},
                "_input_text": text,
            }
        return self._context

    def record(self, kind: str, at: datetime, details: dict[str, Any]) -> None:
        if self.events is not None:
            self.events.append((kind, at, details))


@dataclass(frozen=True)
class Outcome:
    """How an execution ended: SUCCEEDED (with its output), FAILED (error, cause) or ABORTED."""

    status: str
    output: Any = None
    error: str | None = None
    cause: str | None = None


def iso(instant: datetime) -> str:
    """An instant as Step Functions writes them: ``2024-01-02T03:04:05.678Z``."""
    instant = instant.astimezone(UTC)
    return f"{instant:%Y-%m-%dT%H:%M:%S}.{instant.microsecond // 1000:03d}Z"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- JSONPath -------------------------------------------------------------------------------

_MISSING: Any = object()

_STEP = re.compile(
    r"""\.(?P<name>[^.\[\]]+)"""
    r"""|\[\s*(?:(?P<index>-?\d+)|'(?P<sq>(?:[^'\\]|\\.)*)'|"(?P<dq>(?:[^"\\]|\\.)*)"""
    r"""|(?P<star>\*)|(?P<slice>-?\d*:-?\d*))\s*\]"""
)


class Path:
    """A compiled JSONPath (``$...`` over the document, ``$$...`` over the context object):
    definite paths give one value, paths with wildcards or slices a list of matches."""

    __slots__ = ("context", "definite", "keys", "steps", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.context = text.startswith("$$")
        rest = text[2:] if self.context else text[1:]
        if not text.startswith("$"):
            raise ValueError(f"{text!r} is not a JSONPath")
        self.steps: list[tuple[str, Any]] = []
        position = 0
        while position < len(rest):
            found = _STEP.match(rest, position)
            if found is None:
                raise ValueError(f"unsupported JSONPath {text!r}")
            self.steps.append(_step(found))
            position = found.end()
        self.definite = all(kind in ("key", "index") for kind, _ in self.steps)
        self.keys = (
            tuple(value for _, value in self.steps)
            if all(kind == "key" for kind, _ in self.steps)
            else None
        )

    def find(self, document: Any) -> Any:
        """The value at this path in ``document``, or ``_MISSING``."""
        if self.keys is not None:
            for key in self.keys:
                if type(document) is not dict:
                    return _MISSING
                document = document.get(key, _MISSING)
                if document is _MISSING:
                    return _MISSING
            return document
        matches = [document]
        for kind, value in self.steps:
            matches = [found for match in matches for found in _apply(kind, value, match)]
            if self.definite and not matches:
                return _MISSING
        return matches[0] if self.definite else matches


def _step(found: re.Match[str]) -> tuple[str, Any]:
    if found["name"] is not None:
        return ("all", None) if found["name"] == "*" else ("key", found["name"])
    if found["index"] is not None:
        return ("index", int(found["index"]))
    if found["sq"] is not None or found["dq"] is not None:
        quoted = found["sq"] if found["sq"] is not None else found["dq"]
        return ("key", re.sub(r"\\(.)", r"\1", quoted))
    if found["star"] is not None:
        return ("all", None)
    start, _, stop = found["slice"].partition(":")
    return ("slice", (int(start) if start else None, int(stop) if stop else None))


def _apply(kind: str, value: Any, document: Any) -> list[Any]:
    if kind == "key":
        return [document[value]] if type(document) is dict and value in document else []
    if kind == "index":
        if type(document) is list and -len(document) <= value < len(document):
            return [document[value]]
        return []
    if kind == "all":
        if type(document) is dict:
            return list(document.values())
        return list(document) if type(document) is list else []
    if type(document) is list:
        return document[value[0] : value[1]]
    return []


def _reference(text: str) -> Path:
    path = Path(text)
    if path.context or path.keys is None:
        raise ValueError(f"{text!r} is not a reference path (a ResultPath)")
    return path


# --- Frames: where a state runs ------------------------------------------------------------


class Frame:
    """One thread of control through states: the top of an execution, or one Map iteration.
    Keeps the context object's State (and Map) parts for the state being run."""

    __slots__ = (
        "entered",
        "execution",
        "item_index",
        "item_value",
        "retry_count",
        "scope",
        "spent",
        "state",
        "task_token",
        "transitions",
    )

    def __init__(
        self, execution: Execution, scope: Scope, item: tuple[int, Any] | None = None
    ) -> None:
        self.execution = execution
        self.scope = scope
        self.item_index: int | None = None if item is None else item[0]
        self.item_value: Any = None if item is None else item[1]
        self.state = ""
        self.entered = execution.start_time
        self.retry_count = 0
        self.task_token: str | None = None
        self.transitions = 0
        #: Its modeled milliseconds so far (see Interpreter).
        self.spent = 0.0

    def context(self) -> dict[str, Any]:
        """The context object, as ``$$`` paths see it."""
        base = self.execution.context()
        context: dict[str, Any] = {
            "Execution": base["Execution"],
            "StateMachine": base["StateMachine"],
            "State": {
                "Name": self.state,
                "EnteredTime": iso(self.entered),
                "RetryCount": self.retry_count,
            },
        }
        if self.task_token is not None:
            context["Task"] = {"Token": self.task_token}
        if self.item_index is not None:
            context["Map"] = {"Item": {"Index": self.item_index, "Value": self.item_value}}
        return context


Getter = Callable[[Any, Frame], Any]


def _getter(text: str, what: str) -> Getter:
    """A path or intrinsic function, evaluated over (document, frame)."""
    if text.startswith("States."):
        return _Intrinsics(text).parse()
    path = Path(text)

    def get(document: Any, frame: Frame) -> Any:
        found = path.find(frame.context() if path.context else document)
        if found is _MISSING:
            raise RuntimeFailure(
                f"The JSONPath '{text}' specified for the field '{what}' could not be found"
                f" in the input '{_json(document)}'"
            )
        return found

    if path.keys == () and not path.context:
        return lambda document, frame: document
    return get


# --- Payload templates ----------------------------------------------------------------------


def template(value: Any) -> Getter:
    """A payload template (Parameters, ResultSelector, ItemSelector): fields ending in ``.$``
    take a path's or an intrinsic function's value; every container is made anew."""
    if isinstance(value, dict):
        fields: list[tuple[str, Getter]] = []
        for key, item in value.items():
            if key.endswith(".$"):
                if not isinstance(item, str):
                    raise ValueError(f"{key!r} must be a path or an intrinsic function")
                fields.append((key[:-2], _getter(item, key)))
            else:
                fields.append((key, template(item)))

        def build(document: Any, frame: Frame) -> Any:
            return {key: get(document, frame) for key, get in fields}

        return build
    if isinstance(value, list):
        items = [template(item) for item in value]
        return lambda document, frame: [get(document, frame) for get in items]
    return lambda document, frame: value


# --- Intrinsic functions ----------------------------------------------------------------------


class _Intrinsics:
    """Parses ``States.Name(arg, ...)`` (arguments: quoted strings, numbers, booleans, null,
    paths, intrinsic functions) into a getter."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def parse(self) -> Getter:
        getter = self._function()
        self._space()
        if self.at != len(self.text):
            raise ValueError(f"unexpected text after the intrinsic function: {self.text!r}")
        return getter

    def _space(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def _function(self) -> Getter:
        found = re.compile(r"States\.([A-Za-z0-9]+)\(").match(self.text, self.at)
        if found is None:
            raise ValueError(f"not an intrinsic function at {self.text[self.at :]!r}")
        name = found[1]
        if name not in INTRINSICS:
            raise ValueError(f"unknown intrinsic function States.{name}")
        self.at = found.end()
        arguments: list[Getter] = []
        self._space()
        if self.text.startswith(")", self.at):
            self.at += 1
        else:
            while True:
                arguments.append(self._argument())
                self._space()
                if self.at >= len(self.text):
                    raise ValueError(f"unclosed intrinsic function {self.text!r}")
                separator = self.text[self.at]
                self.at += 1
                if separator == ")":
                    break
                if separator != ",":
                    raise ValueError(f"expected , or ) in {self.text!r}")
        function = INTRINSICS[name]

        def call(document: Any, frame: Frame) -> Any:
            values = [argument(document, frame) for argument in arguments]
            try:
                return function(*values)
            except StatesFailure:
                raise
            except (TypeError, ValueError, IndexError, KeyError) as error:
                raise StatesFailure(
                    "States.IntrinsicFailure", f"States.{name} failed: {error}"
                ) from error

        return call

    def _argument(self) -> Getter:
        self._space()
        text, at = self.text, self.at
        if text.startswith("States.", at):
            return self._function()
        if text.startswith("'", at):
            return self._string()
        if text.startswith("$", at):
            end = self._path_end()
            path = text[at:end]
            self.at = end
            return _getter(path.strip(), path)
        found = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null").match(text, at)
        if found is None:
            raise ValueError(f"unexpected argument at {text[at:]!r}")
        self.at = found.end()
        literal = json.loads(found[0])
        return lambda document, frame: literal

    def _string(self) -> Getter:
        out: list[str] = []
        self.at += 1
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "\\" and self.at + 1 < len(self.text):
                following = self.text[self.at + 1]
                out.append(following if following in "'\\" else char + following)
                self.at += 2
                continue
            self.at += 1
            if char == "'":
                literal = "".join(out)
                return lambda document, frame: literal
            out.append(char)
        raise ValueError(f"unclosed string in {self.text!r}")

    def _path_end(self) -> int:
        depth, quote, at = 0, "", self.at
        while at < len(self.text):
            char = self.text[at]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif depth == 0 and char in ",)":
                return at
            at += 1
        return at


def _format(template_text: str, *values: Any) -> str:
    if not isinstance(template_text, str):
        raise TypeError("the template must be a string")
    parts = re.split(r"(?<!\\)\{\}", template_text)
    if len(parts) - 1 != len(values):
        raise ValueError(f"{len(parts) - 1} placeholders for {len(values)} values")
    out = [parts[0]]
    for value, part in zip(values, parts[1:], strict=True):
        out += [_format_value(value), part]
    return "".join(out).replace("\\{", "{").replace("\\}", "}")


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_format_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _integer(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise TypeError(f"{value!r} is not an integer")


def _math_add(a: Any, b: Any) -> int:
    return _integer(a) + _integer(b)


def _split(text: Any, delimiters: Any) -> list[str]:
    if not isinstance(text, str) or not isinstance(delimiters, str):
        raise TypeError("States.StringSplit takes two strings")
    pattern = "|".join(re.escape(c) for c in delimiters)
    return [part for part in re.split(pattern, text) if part] if pattern else [text]


def _get_item(array: Any, index: Any) -> Any:
    if not isinstance(array, list):
        raise TypeError(f"{array!r} is not an array")
    return array[_integer(index)]


def _length(array: Any) -> int:
    if not isinstance(array, list):
        raise TypeError(f"{array!r} is not an array")
    return len(array)


def _partition(array: Any, size: Any) -> list[list[Any]]:
    step = _integer(size)
    if not isinstance(array, list) or step <= 0:
        raise ValueError("States.ArrayPartition takes an array and a positive size")
    return [array[i : i + step] for i in range(0, len(array), step)]


def _range(first: Any, last: Any, step: Any) -> list[int]:
    increment = _integer(step)
    if increment == 0:
        raise ValueError("States.ArrayRange's step may not be 0")
    return list(range(_integer(first), _integer(last) + (1 if increment > 0 else -1), increment))


def _unique(array: Any) -> list[Any]:
    seen: list[Any] = []
    for value in array:
        if value not in seen:
            seen.append(value)
    return seen


def _merge(first: Any, second: Any, deep: Any) -> dict[str, Any]:
    if deep is not False:
        raise ValueError("States.JsonMerge supports shallow merges only (false)")
    if not isinstance(first, dict) or not isinstance(second, dict):
        raise TypeError("States.JsonMerge takes two objects")
    return {**first, **second}


def _hash(data: Any, algorithm: Any) -> str:
    names = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384"}
    names["SHA-512"] = "sha512"
    text = data if isinstance(data, str) else _json(data)
    return hashlib.new(names[algorithm], text.encode()).hexdigest()


def _math_random(low: Any, high: Any, *seed: Any) -> int:
    chooser = _random.Random(seed[0]) if seed else _random  # noqa: S311 - not for secrets
    return chooser.randint(_integer(low), _integer(high) - 1)


INTRINSICS: dict[str, Callable[..., Any]] = {
    "Format": _format,
    "JsonToString": _json,
    "StringToJson": json.loads,
    "MathAdd": _math_add,
    "MathRandom": _math_random,
    "StringSplit": _split,
    "Array": lambda *values: list(values),
    "ArrayGetItem": _get_item,
    "ArrayLength": _length,
    "ArrayContains": lambda array, value: value in array,
    "ArrayPartition": _partition,
    "ArrayRange": _range,
    "ArrayUnique": _unique,
    "JsonMerge": _merge,
    "Base64Encode": lambda text: base64.b64encode(text.encode()).decode(),
    "Base64Decode": lambda text: base64.b64decode(text).decode(),
    "Hash": _hash,
    "UUID": lambda: str(uuid.uuid4()),
}


# --- Choice rules -----------------------------------------------------------------------------

Rule = Callable[[Any, Frame], bool]


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _compare(kind: str, op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(value: Any, other: Any) -> bool:
        if kind == "String":
            return isinstance(value, str) and isinstance(other, str) and op(value, other)
        if kind == "Numeric":
            return _number(value) and _number(other) and op(value, other)
        if kind == "Boolean":
            return type(value) is bool and type(other) is bool and op(value, other)
        left, right = _timestamp(value), _timestamp(other)
        return left is not None and right is not None and op(left, right)

    return compare


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "Equals": lambda a, b: a == b,
    "LessThan": lambda a, b: a < b,
    "GreaterThan": lambda a, b: a > b,
    "LessThanEquals": lambda a, b: a <= b,
    "GreaterThanEquals": lambda a, b: a >= b,
}
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    kind + name: _compare(kind, op)
    for kind in ("String", "Numeric", "Timestamp")
    for name, op in _OPERATORS.items()
}
COMPARISONS["BooleanEquals"] = _compare("Boolean", _OPERATORS["Equals"])
TESTS: dict[str, Callable[[Any], bool]] = {
    "IsNull": lambda value: value is None,
    "IsNumeric": _number,
    "IsString": lambda value: isinstance(value, str),
    "IsBoolean": lambda value: type(value) is bool,
    "IsTimestamp": lambda value: _timestamp(value) is not None,
}


def _string_matches(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\\\\|\\\*|\*)", pattern)
    regex = "".join(
        ".*" if part == "*" else re.escape(part[1:] if part in ("\\\\", "\\*") else part)
        for part in parts
    )
    return re.compile(regex, re.DOTALL)


def rule(definition: Mapping[str, Any]) -> Rule:
    """A Choice rule (or a nested one of And, Or, Not)."""
    if "And" in definition:
        rules = [rule(r) for r in definition["And"]]
        return lambda document, frame: all(r(document, frame) for r in rules)
    if "Or" in definition:
        rules = [rule(r) for r in definition["Or"]]
        return lambda document, frame: any(r(document, frame) for r in rules)
    if "Not" in definition:
        negated = rule(definition["Not"])
        return lambda document, frame: not negated(document, frame)
    variable = Path(definition["Variable"])

    def value_of(document: Any, frame: Frame) -> Any:
        return variable.find(frame.context() if variable.context else document)

    return _condition(definition, variable.text, value_of)


def _condition(definition: Mapping[str, Any], variable: str, value_of: Getter) -> Rule:
    operators = [k for k in definition if k not in ("Variable", "Next", "Comment")]
    if len(operators) != 1:
        raise ValueError(f"a Choice rule needs one comparison, not {operators}")
    (operator,) = operators
    expected = definition[operator]
    if operator == "IsPresent":
        return lambda document, frame: (value_of(document, frame) is not _MISSING) == expected
    if operator in TESTS:
        test = TESTS[operator]

        def is_of_type(document: Any, frame: Frame) -> bool:
            value = value_of(document, frame)
            return value is not _MISSING and test(value) == expected

        return is_of_type
    if operator == "StringMatches":
        pattern = _string_matches(expected)
        return _present(
            variable, value_of, lambda v: isinstance(v, str) and bool(pattern.fullmatch(v))
        )
    by_path = operator.endswith("Path")
    compare = COMPARISONS.get(operator[:-4] if by_path else operator)
    if compare is None:
        raise ValueError(f"unknown Choice comparison {operator}")
    if not by_path:
        return _present(variable, value_of, lambda v: compare(v, expected))
    other = _getter(expected, operator)

    def against_path(document: Any, frame: Frame) -> bool:
        value = _required(variable, value_of(document, frame))
        return compare(value, other(document, frame))

    return against_path


def _required(variable: str, value: Any) -> Any:
    if value is _MISSING:
        raise RuntimeFailure(
            f"Invalid path '{variable}': the choice state's condition path"
            " references an invalid value"
        )
    return value


def _present(variable: str, value_of: Getter, test: Callable[[Any], bool]) -> Rule:
    return lambda document, frame: test(_required(variable, value_of(document, frame)))


# --- Retry and Catch --------------------------------------------------------------------------


def _matches(names: list[str], error: str) -> bool:
    if error == RUNTIME:
        return False
    for name in names:
        if name in (error, ALL):
            return True
        if name == TASK_FAILED and error != TIMEOUT:
            return True
        if name == TIMEOUT and error == HEARTBEAT_TIMEOUT:
            return True
    return False


@dataclass(frozen=True)
class Retrier:
    """One Retry entry: the errors it retries, and the waits between attempts."""

    errors: list[str]
    interval: float = 1.0
    max_attempts: int = 3
    backoff: float = 2.0
    max_delay: float | None = None
    full_jitter: bool = False

    @classmethod
    def of(cls, definition: Mapping[str, Any]) -> Retrier:
        return cls(
            errors=list(definition["ErrorEquals"]),
            interval=float(definition.get("IntervalSeconds", 1)),
            max_attempts=int(definition.get("MaxAttempts", 3)),
            backoff=float(definition.get("BackoffRate", 2.0)),
            max_delay=definition.get("MaxDelaySeconds"),
            full_jitter=definition.get("JitterStrategy", "NONE") == "FULL",
        )

    def delay(self, attempt: int, random: Callable[[], float]) -> float:
        """The wait before retry number ``attempt + 1`` (0-based)."""
        seconds = self.interval * self.backoff**attempt
        if self.max_delay is not None:
            seconds = min(seconds, float(self.max_delay))
        return seconds * random() if self.full_jitter else seconds


@dataclass(frozen=True)
class Catcher:
    errors: list[str]
    next: str
    result_path: Callable[[Any, Any], Any]


# --- States ---------------------------------------------------------------------------------


def _result_path(
    definition: Mapping[str, Any], key: str = "ResultPath"
) -> Callable[[Any, Any], Any]:
    """ResultPath: how a result is put into the state's input (a copy of what it changes)."""
    if key in definition and definition[key] is None:
        return lambda state_input, result: state_input
    path = _reference(definition.get(key, "$"))
    keys = path.keys or ()
    if not keys:
        return lambda state_input, result: result

    def put(state_input: Any, result: Any) -> Any:
        return _put(state_input, keys, result, path.text)

    return put


def _put(document: Any, keys: tuple[str, ...], value: Any, text: str) -> Any:
    if document is None:
        document = {}
    if type(document) is not dict:
        raise RuntimeFailure(f"Unable to apply ResultPath '{text}' to input {_json(document)}")
    copied = dict(document)
    copied[keys[0]] = (
        value if len(keys) == 1 else _put(document.get(keys[0]), keys[1:], value, text)
    )
    return copied


def _selecting_path(definition: Mapping[str, Any], key: str) -> Getter | None:
    """InputPath, OutputPath, ItemsPath: None for ``$``; null selects ``{}``."""
    if key not in definition:
        return None
    text = definition[key]
    if text is None:
        return lambda document, frame: {}
    path = Path(text)
    if not path.context and path.keys == ():
        return None
    return _getter(text, key)


class State:
    """What every state has: its name, type, next state and input and output paths."""

    kind = ""

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        self.name = name
        self.next: str | None = definition.get("Next")
        self.end = bool(definition.get("End", False))
        self.input_path = _selecting_path(definition, "InputPath")
        self.output_path = _selecting_path(definition, "OutputPath")
        self.entered_event = f"{self.kind}StateEntered"
        self.exited_event = f"{self.kind}StateExited"

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        """(the next state, or None at the end; the state's output)."""
        raise NotImplementedError

    def effective_input(self, document: Any, frame: Frame) -> Any:
        return document if self.input_path is None else self.input_path(document, frame)

    def output(self, document: Any, frame: Frame) -> Any:
        return document if self.output_path is None else self.output_path(document, frame)


class PassState(State):
    kind = "Pass"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.parameters = template(definition["Parameters"]) if "Parameters" in definition else None
        self.result = template(definition["Result"]) if "Result" in definition else None
        self.result_path = _result_path(definition)

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        effective = self.effective_input(document, frame)
        if self.parameters is not None:
            effective = self.parameters(effective, frame)
        result = effective if self.result is None else self.result(effective, frame)
        return self.next, self.output(self.result_path(document, result), frame)


class SucceedState(State):
    kind = "Succeed"

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        return None, self.output(self.effective_input(document, frame), frame)


class FailState(State):
    kind = "Fail"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.error = self._field(definition, "Error")
        self.cause = self._field(definition, "Cause")

    @staticmethod
    def _field(definition: Mapping[str, Any], key: str) -> Getter:
        if f"{key}Path" in definition:
            get = _getter(definition[f"{key}Path"], f"{key}Path")

            def text(document: Any, frame: Frame) -> Any:
                value = get(document, frame)
                if not isinstance(value, str):
                    raise RuntimeFailure(f"The {key}Path value {_json(value)} is not a string")
                return value

            return text
        value = definition.get(key, "")
        return lambda document, frame: value

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        raise _Ended(self.error(document, frame), self.cause(document, frame))


class _Ended(Exception):
    """A Fail state was reached: the (sub)machine fails, whatever catches are around."""

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(error)
        self.error = error
        self.cause = cause


class ChoiceState(State):
    kind = "Choice"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.choices = [(rule(c), c["Next"]) for c in definition["Choices"]]
        self.default: str | None = definition.get("Default")

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        effective = self.effective_input(document, frame)
        for matches, following in self.choices:
            if matches(effective, frame):
                return following, self.output(effective, frame)
        if self.default is None:
            raise StatesFailure("States.NoChoiceMatched", f"No Choice matched in {self.name}")
        return self.default, self.output(effective, frame)


class WaitState(State):
    kind = "Wait"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.clock = interpreter.clock
        self.seconds: Getter
        if "Seconds" in definition:
            seconds = definition["Seconds"]
            self.seconds = lambda document, frame: seconds
        elif "SecondsPath" in definition:
            self.seconds = self._seconds_path(definition["SecondsPath"])
        elif "Timestamp" in definition:
            self.seconds = self._until(lambda document, frame: definition["Timestamp"])
        else:
            self.seconds = self._until(_getter(definition["TimestampPath"], "TimestampPath"))

    @staticmethod
    def _seconds_path(text: str) -> Getter:
        get = _getter(text, "SecondsPath")

        def seconds(document: Any, frame: Frame) -> Any:
            value = get(document, frame)
            if not _number(value) or value < 0:
                raise RuntimeFailure(f"The SecondsPath value {_json(value)} is not a number >= 0")
            return value

        return seconds

    def _until(self, get: Getter) -> Getter:
        def seconds(document: Any, frame: Frame) -> float:
            value = get(document, frame)
            instant = _timestamp(value)
            if instant is None:
                raise RuntimeFailure(f"The Timestamp {_json(value)} is not an ISO-8601 instant")
            return (instant - self.clock.now()).total_seconds()

        return seconds

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        effective = self.effective_input(document, frame)
        seconds = float(self.seconds(effective, frame))
        scope = frame.scope
        if seconds > 0:
            frame.spent += seconds * 1000
            self.clock.wait(seconds, scope.event, scope.running)
        if scope.stopped:
            raise Stopped
        return self.next, self.output(effective, frame)


class _Retrying(State):
    """A state with Retry and Catch (Task, Map): runs its attempts, retries, catches."""

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.interpreter = interpreter
        self.retriers = [Retrier.of(r) for r in definition.get("Retry", [])]
        self.catchers = [
            Catcher(list(c["ErrorEquals"]), c["Next"], _result_path(c))
            for c in definition.get("Catch", [])
        ]
        self.result_selector = (
            template(definition["ResultSelector"]) if "ResultSelector" in definition else None
        )
        self.result_path = _result_path(definition)

    def attempt(self, effective: Any, frame: Frame) -> Any:
        """The state's result (raises StatesFailure when the attempt fails)."""
        raise NotImplementedError

    def run(self, document: Any, frame: Frame) -> tuple[str | None, Any]:
        counts = [0] * len(self.retriers)
        while True:
            try:
                effective = self.effective_input(document, frame)
                result = self.attempt(effective, frame)
                if self.result_selector is not None:
                    result = self.result_selector(result, frame)
                return self.next, self.output(self.result_path(document, result), frame)
            except RuntimeFailure:
                raise
            except StatesFailure as failure:
                self._failed(frame, failure)
                if not self._retry(failure, counts, frame):
                    return self._catch(failure, document)

    def _failed(self, frame: Frame, failure: StatesFailure) -> None:
        if frame.execution.events is not None:
            kind = "TaskTimedOut" if failure.error in (TIMEOUT, HEARTBEAT_TIMEOUT) else "TaskFailed"
            if self.kind == "Map":
                kind = "MapStateFailed"
            details = {"error": failure.error, "cause": failure.cause}
            frame.execution.record(kind, self.interpreter.clock.now(), details)

    def _retry(self, failure: StatesFailure, counts: list[int], frame: Frame) -> bool:
        for index, retrier in enumerate(self.retriers):
            if _matches(retrier.errors, failure.error):
                if counts[index] >= retrier.max_attempts:
                    return False
                seconds = retrier.delay(counts[index], self.interpreter.random)
                counts[index] += 1
                frame.retry_count += 1
                scope = frame.scope
                if seconds > 0:
                    frame.spent += seconds * 1000
                    self.interpreter.clock.wait(seconds, scope.event, scope.running)
                if scope.stopped:
                    raise Stopped
                return True
        return False

    def _catch(self, failure: StatesFailure, document: Any) -> tuple[str | None, Any]:
        for catcher in self.catchers:
            if _matches(catcher.errors, failure.error):
                error = {"Error": failure.error, "Cause": failure.cause}
                return catcher.next, catcher.result_path(document, error)
        raise failure


class TaskState(_Retrying):
    kind = "Task"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.resource: str = definition["Resource"]
        self.handler = interpreter.handler_for(self.resource)
        self.parameters = template(definition["Parameters"]) if "Parameters" in definition else None
        self.timeout = self._seconds(definition, "TimeoutSeconds")
        self.heartbeat = self._seconds(definition, "HeartbeatSeconds")
        self.uses_token = "$$.Task.Token" in json.dumps(definition.get("Parameters"))

    @staticmethod
    def _seconds(definition: Mapping[str, Any], key: str) -> Getter | None:
        if key in definition:
            value = definition[key]
            return lambda document, frame: value
        if f"{key}Path" not in definition:
            return None
        get = _getter(definition[f"{key}Path"], f"{key}Path")

        def seconds(document: Any, frame: Frame) -> Any:
            value = get(document, frame)
            if type(value) is not int or value <= 0:
                raise RuntimeFailure(
                    f"The {key}Path value {_json(value)} is not a positive integer"
                )
            return value

        return seconds

    def attempt(self, effective: Any, frame: Frame) -> Any:
        frame.task_token = uuid.uuid4().hex + uuid.uuid4().hex if self.uses_token else None
        parameters = effective if self.parameters is None else self.parameters(effective, frame)
        timeout = None if self.timeout is None else self.timeout(effective, frame)
        heartbeat = None if self.heartbeat is None else self.heartbeat(effective, frame)
        execution = frame.execution
        if execution.events is not None:
            details = {"resource": self.resource, "parameters": parameters}
            execution.record("TaskScheduled", self.interpreter.clock.now(), details)
        if self.handler is None:
            raise StatesFailure(TASK_FAILED, f"No handler for the resource {self.resource}")
        if timeout is None and heartbeat is None:
            result = self._call(parameters, frame, frame.scope, None)
        else:
            result = self._race(parameters, frame, timeout, heartbeat)
        if frame.scope.stopped:
            raise Stopped
        if execution.events is not None:
            execution.record("TaskSucceeded", self.interpreter.clock.now(), {"output": result})
        return result

    def _context(self, frame: Frame, scope: Scope, watch: _Watch | None) -> TaskContext:
        execution = frame.execution
        return TaskContext(
            execution.arn,
            execution.state_machine_arn,
            self.name,
            frame.task_token,
            scope,
            self.interpreter.elapse,
            watch,
        )

    def _call(self, parameters: Any, frame: Frame, scope: Scope, watch: _Watch | None) -> Any:
        assert self.handler is not None
        context = self._context(frame, scope, watch)
        tokens = frame.execution.tokens
        if tokens is not None and context.task_token is not None:
            tokens[context.task_token] = context
        try:
            cost = self.interpreter.task_cost
            if cost is None:
                return self.handler(self.resource, parameters, context)
            handler = self.handler

            def spend(milliseconds: float) -> None:
                frame.spent += milliseconds

            return cost(lambda: handler(self.resource, parameters, context), spend)
        except StatesFailure:
            raise
        except Exception as error:  # a handler's own failure: the task failed
            raise TaskFailed(TASK_FAILED, f"{type(error).__name__}: {error}") from error
        finally:
            if tokens is not None and context.task_token is not None:
                tokens.pop(context.task_token, None)

    def _race(self, parameters: Any, frame: Frame, timeout: Any, heartbeat: Any) -> Any:
        """Run the handler on a thread of its own and wait for it up to the timeout and from
        heartbeat to heartbeat; a task that overruns is abandoned (its context stopped)."""
        watch = _Watch(frame.scope)
        started = self.interpreter.elapse.now()  # (the task's time counts from before it starts)
        WORKERS.run(lambda: watch.run(lambda: self._call(parameters, frame, watch.scope, watch)))
        try:
            return watch.outcome(self.interpreter.elapse, timeout, heartbeat, frame.scope, started)
        finally:
            frame.scope.leave(watch.scope)


class _Watch:
    """A task running on a thread of its own: its outcome, its heartbeats, and the scope its
    context sees (stopped when the task is abandoned)."""

    def __init__(self, parent: Scope) -> None:
        self.scope = Scope(parent)
        self.wake = threading.Event()
        self.done = False
        self.beats = 0
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self, call: Callable[[], Any]) -> None:
        try:
            self.result = call()
        except BaseException as error:  # handed to the execution's thread
            self.error = error
        self.done = True
        self.wake.set()

    def beat(self) -> None:
        self.beats += 1
        self.wake.set()

    def outcome(
        self, elapse: Elapse, timeout: Any, heartbeat: Any, scope: Scope, started: float
    ) -> Any:
        beaten = started
        seen = self.beats
        while not self.done:
            if scope.stopped:
                raise Stopped
            now = elapse.now()
            if self.beats != seen:
                seen, beaten = self.beats, now
            limits = []
            if timeout is not None:
                limits.append((started + timeout - now, TIMEOUT))
            if heartbeat is not None:
                limits.append((beaten + heartbeat - now, HEARTBEAT_TIMEOUT))
            left, error = min(limits)
            if left <= 0:
                self.scope.stop()  # abandoned, as Step Functions abandons it
                raise StatesFailure(error, "")
            self.wake.clear()
            if self.done or self.beats != seen:
                continue
            count = seen
            running = self._running(count, scope)
            elapse.wait(left, self.wake, running)
        if self.error is not None:
            raise self.error
        return self.result

    def _running(self, count: int, scope: Scope) -> Callable[[], bool]:
        return lambda: not self.done and self.beats == count and not scope.stopped


class MapState(_Retrying):
    kind = "Map"

    def __init__(self, name: str, definition: Mapping[str, Any], interpreter: Interpreter):
        super().__init__(name, definition, interpreter)
        self.items_path = _selecting_path(definition, "ItemsPath")
        selector = definition.get("ItemSelector", definition.get("Parameters"))
        self.selector = None if selector is None else template(selector)
        processor = definition.get("ItemProcessor", definition.get("Iterator"))
        if processor is None:
            raise ValueError(f"the Map state {name} has no ItemProcessor")
        self.machine = Machine(processor, interpreter)
        self.max_concurrency = int(definition.get("MaxConcurrency", 0))

    def attempt(self, effective: Any, frame: Frame) -> Any:
        items = effective if self.items_path is None else self.items_path(effective, frame)
        if not isinstance(items, list):
            raise RuntimeFailure(f"The ItemsPath of {self.name} does not select an array")
        execution = frame.execution
        if execution.events is not None:
            execution.record(
                "MapStateStarted", self.interpreter.clock.now(), {"length": len(items)}
            )
        results: list[Any] = [None] * len(items)
        spent = [0.0] * len(items)
        scope = Scope(frame.scope)
        try:
            self._iterate(effective, items, results, spent, frame, scope)
        finally:
            frame.scope.leave(scope)
            frame.spent += self._makespan(spent)
        if frame.scope.stopped:
            raise Stopped
        if execution.events is not None:
            execution.record("MapStateSucceeded", self.interpreter.clock.now(), {})
        return results

    def _makespan(self, spent: list[float]) -> float:
        """How long iterations of these durations take side by side, up to MaxConcurrency
        at once, each started, in order, as soon as one ends."""
        width = len(spent) if self.max_concurrency <= 0 else self.max_concurrency
        lanes = [0.0] * max(1, min(width, len(spent)))
        for milliseconds in spent:
            lanes[lanes.index(min(lanes))] += milliseconds
        return max(lanes)

    def _iterate(
        self,
        effective: Any,
        items: list[Any],
        results: list[Any],
        spent: list[float],
        frame: Frame,
        scope: Scope,
    ) -> None:
        """Iterations side by side, up to MaxConcurrency (0: all at once): this thread runs
        some too, so a busy pool never holds a Map up. The first failure stops the rest."""
        pending = iter(range(len(items)))
        lock = threading.Lock()
        failures: list[BaseException] = []

        def work() -> None:
            while not scope.stopped:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                try:
                    results[index] = self._iteration(
                        effective, index, items[index], frame, scope, spent
                    )
                except BaseException as error:  # the Map fails with its first failure
                    with lock:
                        failures.append(error)
                    scope.stop()
                    return

        width = len(items) if self.max_concurrency <= 0 else self.max_concurrency
        helpers = [self.interpreter.spawn(work) for _ in range(max(0, min(width, len(items)) - 1))]
        work()
        for helper in helpers:
            helper.join()
        if failures:
            first = failures[0]
            if isinstance(first, _Ended):
                raise StatesFailure(first.error, first.cause)
            raise first

    def _iteration(
        self,
        effective: Any,
        index: int,
        value: Any,
        frame: Frame,
        scope: Scope,
        spent: list[float],
    ) -> Any:
        execution = frame.execution
        inner = Frame(execution, scope, (index, value))
        inner.state, inner.entered = frame.state, frame.entered
        document = value if self.selector is None else self.selector(effective, inner)
        if execution.events is not None:
            now = self.interpreter.clock.now()
            execution.record("MapIterationStarted", now, {"name": self.name, "index": index})
        try:
            output = self.machine.run(document, inner)
        finally:
            spent[index] = inner.spent
            with _COUNTING:
                frame.transitions += inner.transitions
        if execution.events is not None:
            now = self.interpreter.clock.now()
            execution.record("MapIterationSucceeded", now, {"name": self.name, "index": index})
        return output


_COUNTING = threading.Lock()

STATE_TYPES: dict[str, type[State]] = {
    "Task": TaskState,
    "Pass": PassState,
    "Choice": ChoiceState,
    "Wait": WaitState,
    "Succeed": SucceedState,
    "Fail": FailState,
    "Map": MapState,
}


class Machine:
    """A compiled StartAt and States (the definition, or a Map's ItemProcessor)."""

    def __init__(self, definition: Mapping[str, Any], interpreter: Interpreter) -> None:
        self.start_at: str = definition["StartAt"]
        self.states: dict[str, State] = {}
        for name, state in definition["States"].items():
            kind = STATE_TYPES.get(state.get("Type", ""))
            if kind is None:
                raise ValueError(f"the state {name} has an unsupported Type {state.get('Type')}")
            self.states[name] = kind(name, state, interpreter)
        self.clock = interpreter.clock
        self.state_ms = interpreter.state_ms
        self._check()

    def _check(self) -> None:
        targets = [self.start_at]
        for state in self.states.values():
            targets += [state.next] if state.next else []
            if isinstance(state, ChoiceState):
                targets += [n for _, n in state.choices] + (
                    [state.default] if state.default else []
                )
            if isinstance(state, _Retrying):
                targets += [c.next for c in state.catchers]
        missing = sorted({t for t in targets if t not in self.states})
        if missing:
            raise ValueError(f"the definition names states it does not define: {missing}")

    def run(self, document: Any, frame: Frame) -> Any:
        """Run from StartAt to the end: the output (raises StatesFailure, _Ended, Stopped)."""
        name: str | None = self.start_at
        execution = frame.execution
        recording = execution.events is not None
        while name is not None:
            if frame.scope.stopped:
                raise Stopped
            state = self.states[name]
            frame.state, frame.entered, frame.retry_count = name, self.clock.now(), 0
            frame.transitions += 1
            frame.spent += self.state_ms
            if recording:
                execution.record(
                    state.entered_event, frame.entered, {"name": name, "input": document}
                )
            following, document = state.run(document, frame)
            if recording:
                now = self.clock.now()
                execution.record(state.exited_event, now, {"name": name, "output": document})
            if following is None and not state.end and not isinstance(state, SucceedState):
                raise RuntimeFailure(f"The state {name} has neither Next nor End")
            name = following
        return document


class Interpreter:
    """A definition compiled once, run for any number of executions (``execute``), with task
    handlers picked by resource ARN prefix (the longest that matches)."""

    def __init__(
        self,
        definition: str | Mapping[str, Any],
        tasks: Mapping[str, TaskHandler],
        clock: Clock,
        random: Callable[[], float] = _random.random,
        spawn: Callable[[Callable[[], None]], _Piece | threading.Thread] | None = None,
        task_cost: TaskCost | None = None,
        state_ms: float = 0.0,
    ) -> None:
        """``random`` draws FULL jitter (in [0, 1)); ``spawn`` starts a Map iteration's thread
        (default: a new daemon thread). The cost model of an execution's duration (what AWS
        bills EXPRESS executions for, in milliseconds: Execution.billed_ms): ``state_ms`` per
        state entered, ``task_cost`` of each task's call (None: nothing), the seconds of its
        waits, and a Map's longest iteration."""
        self.task_cost = task_cost
        self.state_ms = state_ms
        document = json.loads(definition) if isinstance(definition, str) else definition
        self.clock = clock
        self.elapse = Elapse(clock)
        self.random = random
        self.spawn = spawn or _thread
        self._prefixes = sorted(tasks.items(), key=lambda item: -len(item[0]))
        self.machine = Machine(document, self)
        self.timeout_seconds: float | None = document.get("TimeoutSeconds")

    def handler_for(self, resource: str) -> TaskHandler | None:
        for prefix, handler in self._prefixes:
            if resource.startswith(prefix):
                return handler
        return None

    def execute(self, execution: Execution) -> Outcome:
        """Run the execution to its end (or until its scope is stopped: ABORTED)."""
        frame = Frame(execution, execution.scope)
        try:
            output = self.machine.run(execution.input, frame)
        except Stopped:
            return Outcome("ABORTED")
        except _Ended as ended:
            return Outcome("FAILED", error=ended.error, cause=ended.cause)
        except StatesFailure as failure:
            return Outcome("FAILED", error=failure.error, cause=failure.cause)
        finally:
            execution.transitions += frame.transitions
            execution.billed_ms += frame.spent
        if execution.scope.stopped:
            return Outcome("ABORTED")
        return Outcome("SUCCEEDED", output=output)


class _Piece:
    """One piece of work handed to the workers: ``join`` waits for its end."""

    __slots__ = ("_ended", "work")

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self._ended = threading.Event()

    def run(self) -> None:
        try:
            self.work()
        finally:
            self._ended.set()

    def join(self, timeout: float | None = None) -> None:
        self._ended.wait(timeout)


class _Workers:
    """Daemon threads that run tasks and Map iterations, each taking more work once done: a
    burst of executions reuses them instead of starting a thread per task and iteration. A
    new one starts when none is idle (a task abandoned at its timeout keeps its thread), and
    one idle for ``idle_seconds`` ends."""

    def __init__(self, idle_seconds: float = 30.0) -> None:
        self._pieces: queue.SimpleQueue[_Piece] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()
        self._idle_seconds = idle_seconds

    def run(self, work: Callable[[], None]) -> _Piece:
        piece = _Piece(work)
        with self._lock:  # (a piece is put where an idle thread is counted, or one starts)
            self._pieces.put(piece)
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, daemon=True, name="engine-worker").start()
        return piece

    def _serve(self) -> None:
        while True:
            try:
                piece = self._pieces.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    try:
                        piece = self._pieces.get_nowait()  # (put for this thread meanwhile)
                    except queue.Empty:
                        self._idle -= 1
                        return
            piece.run()
            with self._lock:
                self._idle += 1


#: The workers of every interpreter of this process.
WORKERS = _Workers()


def _thread(work: Callable[[], None]) -> _Piece:
    return WORKERS.run(work)


def states_of(definition: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every state of a definition, those of its Maps' processors included."""
    for name, state in definition["States"].items():
        yield name, state
        processor = state.get("ItemProcessor", state.get("Iterator"))
        if processor is not None:
            yield from states_of(processor)


__all__ = [
    "Execution",
    "Interpreter",
    "Outcome",
    "RuntimeFailure",
    "Scope",
    "StatesFailure",
    "TaskContext",
    "TaskFailed",
    "TaskHandler",
    "iso",
]
