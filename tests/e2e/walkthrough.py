"""The getting-started walk-through as the page shows it, and how an answer is compared with
the one shown (tests/e2e/test_walkthrough.py runs it).

The step files, ``NN-name.sh``, run in order. In them, a line that does not start with ``#``
is a command (continued on the next line after a trailing ``\\``); the ``# `` lines right
after it are what it prints (stdout and stderr, as a terminal shows them), compared line by
line, runs of spaces counting as one; a command followed by none may print anything. Each
command must exit 0. ``NN-name.json``, if there is one, is the JSON answer the step's last
command prints first (curl's body; the ``# `` lines are then what follows it, the status).

What the page cannot know is matched by its shape: a job id or run id (the example id stands
for the real one from then on, in the answers and in the commands that use it: a reader
copies it from the answer above), a time (``2026-11-25T21:48:15.006Z``, ``2026-11-25
21:48:15Z``), a span (``4 ms``, ``1.2 s``), ``...`` (any text; a line of its own: any lines).
In JSON answers every key must be there and no other (recursively), and every value equal
except those (and the numbers of VARYING_NUMBERS). Everything else must be as shown.

The page's addresses stand for the test's: chronoq local's, ``http://127.0.0.1:8080`` (where
``make run`` listens; the page's commands find it as a reader's do, ``login --local`` and its
``API=`` line in the ``local.json`` chronoq local keeps in ``.chronoq/``), in the answers;
the web server's port 9000, in the commands, the answers and the files they use, by a free
port."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "getting-started"
PAGE = ROOT / "docs" / "getting-started.md"
SECTION = "## A walk-through"

#: Longest wait for one command (the longest waits for a run due 15 s after it is created),
#: bounded for a loaded two-core machine.
COMMAND_TIMEOUT_SECONDS = 120.0
#: The web server's port on the page, and chronoq local's address.
PAGE_WEB_PORT = 9000
PAGE_API = "http://127.0.0.1:8080"
#: What would point the command line elsewhere than the page says.
READER_UNSETS = frozenset(
    {
        "CHRONOQ_URL",
        "CHRONOQ_API",
        "CHRONOQ_TOKEN",
        "CHRONOQ_PROFILE",
        "CHRONOQ_CONFIG",
        "CHRONOQ_DATA_DIR",
    }
)
#: JSON numbers that differ from run to run: compared by type only.
VARYING_NUMBERS = frozenset({"lag_ms"})

# --- what the page shows ----------------------------------------------------------------------


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Step:
    path: Path
    commands: list[Command]
    #: The JSON answer the last command prints first.
    answer: Path | None


def read_steps(directory: Path) -> list[Step]:
    steps = []
    for path in sorted(directory.glob("[0-9][0-9]-*.sh")):
        answer = path.with_suffix(".json")
        steps.append(
            Step(path, parse_commands(path.read_text()), answer if answer.exists() else None)
        )
    return steps


def parse_commands(text: str) -> list[Command]:
    commands: list[Command] = []
    continued = answering = False
    for line in text.splitlines():
        if continued:
            commands[-1].text += "\n" + line
        elif line.startswith("#"):
            assert answering, f"a comment line not right after a command: {line!r}"
            commands[-1].expected.append(line[2:] if line.startswith("# ") else line[1:])
        elif line.strip():
            commands.append(Command(line))
        continued = line.endswith("\\")
        answering = bool(line.strip()) and bool(commands)
    return commands


def included(page: Path, section: str) -> list[str]:
    """The files the section of the page includes, in order; every code block in it must be
    made of includes only (nothing shown that does not run)."""
    text = page.read_text()
    start = text.index(section + "\n")
    end = text.find("\n## ", start + len(section))
    body = text[start : end if end >= 0 else len(text)]
    names = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```$", body, flags=re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            match = re.fullmatch(r'--8<-- "([^"]+)"', line)
            assert match, f"{page.name}, {section}: a code block shows {line!r}, not an include"
            names.append(match.group(1))
    return names


# --- matching answers -------------------------------------------------------------------------

_RUN_SUFFIX = r"_\d{8}T\d{6}Z(?:-[0-9a-z]+)?"
_JOB = r"job_[0-9a-f]{16}"
_SPAN = r"(?:\d+ ms|\d+\.\d s|\d+m\d\ds|\d+h\d\dm|\d+d\d+h)"
_SHAPES = {
    "iso": (
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z",
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z",
    ),
    "short": (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ"),
    # (how far a time is from now: "in" it may have become "ago" by the time it is printed)
    "relative": (r"in (?:\d+ ms|\d+\.\d s)", rf"in {_SPAN}|{_SPAN} ago"),
    "span": (r"\d+ ms|\d+\.\d s", _SPAN),
}
_TOKEN = re.compile(
    rf"(?P<run>(?P<runjob>{_JOB}){_RUN_SUFFIX})|(?P<job>{_JOB})"
    + "".join(f"|(?P<{name}>{shown})" for name, (shown, _) in _SHAPES.items())
    + r"|(?P<any>\.\.\.)"
)


@dataclass
class Ids:
    """The example ids of the page and the real ones they stand for."""

    real: dict[str, str] = field(default_factory=dict)

    def pattern(self, text: str, groups: dict[str, str], *, one_line: bool) -> str:
        """A regular expression matching what ``text`` shows; the example ids it meets for
        the first time get a group each, added to ``groups`` (name -> example id), and
        back-references where they come again."""

        def id_pattern(example: str, shape: str) -> str:
            if example in self.real:
                return re.escape(self.real[example])
            name = next((g for g, e in groups.items() if e == example), None)
            if name is not None:
                return f"(?P={name})"
            name = f"id{len(groups)}"
            groups[name] = example
            return f"(?P<{name}>{shape})"

        parts: list[str] = []
        at = 0
        for match in _TOKEN.finditer(text):
            parts.append(re.escape(text[at : match.start()]))
            at = match.end()
            kind = match.lastgroup
            if match.group("run") is not None:
                job_part = id_pattern(match.group("runjob"), _JOB)
                parts.append(id_pattern(match.group("run"), job_part + _RUN_SUFFIX))
            elif kind == "job":
                parts.append(id_pattern(match.group(), _JOB))
            elif kind == "any":
                parts.append(".*" if one_line else "(?s:.*)")
            else:
                assert kind is not None
                parts.append(f"(?:{_SHAPES[kind][1]})")
        parts.append(re.escape(text[at:]))
        return "".join(parts)

    def learn(self, match: re.Match[str], groups: dict[str, str]) -> str | None:
        """Take the real ids of a match; a complaint if two examples stand for one id."""
        for name, example in groups.items():
            real = match.group(name)
            others = [e for e, r in self.real.items() if r == real and e != example]
            if others:
                return f"{example} and {others[0]} on the page are both {real}"
            self.real[example] = real
        return None

    def substitute(self, command: str) -> str:
        """The command with each example id replaced by the real one (longest first: a run
        id holds its job's)."""
        for example in sorted(self.real, key=len, reverse=True):
            command = command.replace(example, self.real[example])
        known = set(self.real.values())
        for found in re.finditer(_JOB + f"(?:{_RUN_SUFFIX})?", command):
            assert found.group() in known, f"{command!r} uses {found.group()}, not shown before"
        return command


def normalized(line: str) -> str:
    return " ".join(line.split())


def compare_lines(ids: Ids, expected: list[str], actual: str) -> str | None:
    """None if ``actual`` is what the lines show (``...`` alone: any lines); else what
    differs."""
    groups: dict[str, str] = {}
    parts = [
        r"(?:[^\n]*\n)*?"
        if normalized(line) == "..."
        else ids.pattern(normalized(line), groups, one_line=True) + r"\n"
        for line in expected
    ]
    text = "".join(normalized(line) + "\n" for line in actual.splitlines())
    match = re.fullmatch("".join(parts), text)
    if match is None:
        return "shown:\n" + "\n".join(expected) + "\n--- printed:\n" + actual
    return ids.learn(match, groups)


def compare_json(ids: Ids, expected: Any, actual: Any, where: str = "$") -> list[str]:
    """What differs between the answer shown and the one given (keys recursively; values
    where they do not vary from run to run)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not an object"]
        problems = [f"{where}.{k}: shown, not answered" for k in expected if k not in actual]
        problems += [f"{where}.{k}: answered, not shown" for k in actual if k not in expected]
        for key in expected.keys() & actual.keys():
            if key in VARYING_NUMBERS and _number(expected[key]):
                if not _number(actual[key]):
                    problems.append(f"{where}.{key}: {actual[key]!r} is not a number")
                continue
            problems += compare_json(ids, expected[key], actual[key], f"{where}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} is not a list of {len(expected)}"]
        return [
            p
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in compare_json(ids, e, a, f"{where}[{i}]")
        ]
    if isinstance(expected, str) and isinstance(actual, str):
        groups: dict[str, str] = {}
        pattern = ids.pattern(expected, groups, one_line=False)
        match = re.fullmatch(pattern, actual)
        if match is None:
            return [f"{where}: {actual!r}, shown as {expected!r}"]
        complaint = ids.learn(match, groups)
        return [f"{where}: {complaint}"] if complaint else []
    if expected != actual or type(expected) is not type(actual):
        return [f"{where}: {actual!r}, shown as {expected!r}"]
    return []


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def split_answer(output: str) -> tuple[Any, str]:
    """The JSON document ``output`` begins with, and what follows it (from its next line)."""
    document, end = json.JSONDecoder().raw_decode(output)
    return document, output[end:].removeprefix("\n")


# --- running it -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Addresses:
    """The test's web server port and chronoq local's URL, for the page's."""

    web_port: int
    api: str = PAGE_API

    def localized(self, text: str) -> str:
        """``text`` with the page's addresses replaced by the test's."""
        return (
            text.replace(PAGE_API, self.api)
            .replace(f"127.0.0.1:{PAGE_WEB_PORT}", f"127.0.0.1:{self.web_port}")
            .replace(f"http.server {PAGE_WEB_PORT}", f"http.server {self.web_port}")
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Shell:
    """One bash session, the commands typed into it one after another (variables and
    background jobs carry over, as in a terminal); each command's output (stdout and stderr
    together) and exit status kept in a file of its own."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.kept = cwd / ".walkthrough"
        self.kept.mkdir()
        self.count = 0
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            cwd=cwd,
            env=env,
            text=True,
            start_new_session=True,  # its own process group: the web server goes with it
        )

    def run(self, command: str) -> tuple[int, str]:
        """Run ``command``; its exit status and what it printed."""
        self.count += 1
        out, status = self.kept / f"{self.count}.out", self.kept / f"{self.count}.status"
        assert self.process.stdin is not None
        self.process.stdin.write(
            f"{{\n{command}\n}} > {out} 2>&1 < /dev/null\n"
            f"echo $? > {status}.part && mv {status}.part {status}\n"
        )
        self.process.stdin.flush()
        try:
            wait_for(
                lambda: status.exists() or self.process.poll() is not None,
                timeout=COMMAND_TIMEOUT_SECONDS,
                interval=0.05,
            )
        except AssertionError:
            printed = out.read_text(errors="replace") if out.exists() else ""
            raise AssertionError(
                f"{command!r} did not end within {COMMAND_TIMEOUT_SECONDS:.0f} s;"
                f" it printed:\n{printed}"
            ) from None
        assert status.exists(), f"bash ended ({self.process.returncode}) running {command!r}"
        return int(status.read_text()), out.read_text(errors="replace")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        with contextlib.suppress(ProcessLookupError):  # (ended already)
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)
