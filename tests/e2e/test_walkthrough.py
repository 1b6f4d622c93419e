"""The getting-started walk-through, run as the page shows it: the commands and the answers
of docs/getting-started.md ("A walk-through") are files under examples/getting-started, which
the page includes as they are (pymdownx.snippets). This test runs those commands in one bash
session, against a chronoq local of its own, from a directory laid out as the repository is
(``.venv/bin/chronoq``, ``.chronoq/``, ``examples/``), and compares each answer with the one
the page shows.

The page's format and the matching rules: tests/e2e/walkthrough.py."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import CHRONOQ, log_tail, start_local
from tests.e2e.walkthrough import (
    EXAMPLES,
    PAGE,
    READER_UNSETS,
    ROOT,
    SECTION,
    Addresses,
    Command,
    Ids,
    Shell,
    compare_json,
    compare_lines,
    free_port,
    included,
    parse_commands,
    read_steps,
    split_answer,
)


@pytest.fixture
def reader_dir(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A directory laid out as the repository is for a reader of the page (``.venv/bin/
    chronoq``, ``.chronoq/`` for chronoq local's data, ``examples/getting-started``, the
    latter with the test's web server port); and that port."""
    web_port = free_port()
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "chronoq").symlink_to(CHRONOQ)
    copied = tmp_path / "examples" / "getting-started"
    copied.mkdir(parents=True)
    for source in EXAMPLES.iterdir():
        (copied / source.name).write_text(Addresses(web_port).localized(source.read_text()))
    (tmp_path / ".chronoq").mkdir()
    (tmp_path / "tmp").mkdir()
    yield tmp_path, web_port
    shutil.rmtree(tmp_path / "tmp", ignore_errors=True)


def reader_env(directory: Path) -> dict[str, str]:
    """The environment of a reader who has set none of chronoq's variables (the command line
    finds chronoq local as the page says), with a profile file of the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in READER_UNSETS}
    return {
        **env,
        "CHRONOQ_CONFIG": str(directory / "config" / "profile.json"),
        "TMPDIR": str(directory / "tmp"),
        "PYTHONUNBUFFERED": "1",  # (stdout and stderr interleaved as on a terminal)
    }


# --- the tests --------------------------------------------------------------------------------


def test_given_the_getting_started_page_then_its_walk_through_shows_the_example_files_in_order_and_nothing_else() -> (
    None
):
    shown = included(PAGE, SECTION)
    steps = read_steps(EXAMPLES)
    assert steps, f"no steps in {EXAMPLES}"
    in_order = [
        str(path.relative_to(ROOT))
        for step in steps
        for path in (step.path, step.answer)
        if path is not None
    ]
    assert [name for name in shown if name in in_order] == in_order
    others = sorted(
        str(p.relative_to(ROOT))
        for p in EXAMPLES.iterdir()
        if str(p.relative_to(ROOT)) not in in_order
    )
    assert sorted(set(shown) - set(in_order)) == others, "every file the steps use is shown"


def test_given_chronoq_local_when_the_walk_through_runs_as_the_page_shows_then_each_answer_is_the_one_shown(
    reader_dir: tuple[Path, int],
) -> None:
    directory, web_port = reader_dir
    steps = read_steps(EXAMPLES)
    ids = Ids()
    with start_local(directory / ".chronoq") as local:
        addresses = Addresses(web_port, local.url)
        shell = Shell(directory, reader_env(directory))
        try:
            for step in steps:
                for number, command in enumerate(step.commands, start=1):
                    text = ids.substitute(addresses.localized(command.text))
                    where = f"{step.path.name}, command {number}: {text}"
                    status, output = shell.run(text)
                    assert status == 0, (
                        f"{where}\nexited {status}:\n{output}\n{log_tail(local.data_dir)}"
                    )
                    if step.answer is not None and number == len(step.commands):
                        shown = json.loads(addresses.localized(step.answer.read_text()))
                        answer, output = split_answer(output)
                        problems = compare_json(ids, shown, answer)
                        assert not problems, (
                            f"{where}\nthe answer is not the one {step.answer.name} shows:\n"
                            + "\n".join(problems)
                        )
                    if command.expected:
                        expected = [addresses.localized(line) for line in command.expected]
                        complaint = compare_lines(ids, expected, output)
                        assert complaint is None, f"{where}\n{complaint}"
        finally:
            shell.close()


def readme_taste() -> list[str]:
    """The commands of the README's "A taste" (continued lines joined)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## A taste") :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("\n```", start)]
    return [c.strip() for c in block.replace("\\\n", " ").split("\n") if c.strip()]


def test_given_chronoq_local_when_the_readmes_taste_runs_as_shown_then_each_command_succeeds(
    reader_dir: tuple[Path, int],
) -> None:
    directory, _ = reader_dir
    commands = readme_taste()
    assert len(commands) >= 3, commands
    with start_local(directory / ".chronoq") as local:
        shell = Shell(directory, reader_env(directory))
        try:
            printed = []
            for command in commands:
                status, output = shell.run(command)
                assert status == 0, f"{command}\nexited {status}:\n{output}"
                printed.append(output)
            # the job the taste creates is among the jobs it lists last
            assert "nightly" in printed[-1], printed
            assert local.call("GET", "/jobs", user="alice")[1]["jobs"][0]["name"] == "nightly"
        finally:
            shell.close()


# --- the comparison itself (no chronoq local) -------------------------------------------------

SHOWN_JOB = {
    "id": "job_5f0c1a2b3c4d5e6f",
    "state": "ACTIVE",
    "lag_ms": 4,
    "created_at": "2026-11-25T21:48:26.120Z",
    "output": "<!DOCTYPE HTML>...",
}


def test_given_an_answer_with_a_field_more_or_less_than_shown_then_it_differs() -> None:
    real = {
        **SHOWN_JOB,
        "id": "job_0123456789abcdef",
        "lag_ms": 1200,
        "created_at": "2027-01-02T03:04:05Z",
        "output": "<!DOCTYPE HTML><html>",
    }
    assert compare_json(Ids(), SHOWN_JOB, real) == []
    assert compare_json(Ids(), SHOWN_JOB, {**real, "flow": None}) == ["$.flow: answered, not shown"]
    fewer = {k: v for k, v in real.items() if k != "state"}
    assert compare_json(Ids(), SHOWN_JOB, fewer) == ["$.state: shown, not answered"]
    assert compare_json(Ids(), SHOWN_JOB, {**real, "state": "PAUSED"}) == [
        "$.state: 'PAUSED', shown as 'ACTIVE'"
    ]
    assert compare_json(Ids(), SHOWN_JOB, {**real, "created_at": "yesterday"})


def test_given_an_example_id_when_it_stands_for_a_real_one_then_it_stands_for_it_everywhere() -> (
    None
):
    ids = Ids()
    shown = [
        "ID NAME",
        "job_5f0c1a2b3c4d5e6f hello",
        "...",
        "-- job_5f0c1a2b3c4d5e6f_20261125T214815Z SUCCEEDED (lag 4 ms)",
    ]
    printed = "ID    NAME\njob_0123456789abcdef  hello\nmore\n-- job_0123456789abcdef_20270102T030405Z SUCCEEDED (lag 1.0 s)\n"
    assert compare_lines(ids, shown, printed) is None
    assert ids.substitute("runs list job_5f0c1a2b3c4d5e6f_20261125T214815Z") == (
        "runs list job_0123456789abcdef_20270102T030405Z"
    )
    assert compare_lines(ids, ["job_5f0c1a2b3c4d5e6f"], "job_fedcba9876543210\n") is not None
    assert compare_lines(ids, ["job_9a8b7c6d5e4f3a2b"], "job_0123456789abcdef\n") is not None
    with pytest.raises(AssertionError, match="not shown before"):
        ids.substitute("jobs get job_7e1d2c3b4a596877")


def test_given_printed_lines_when_one_is_missing_more_or_changed_then_they_differ() -> None:
    shown = ["exit 3", "timeout 60 s"]
    assert compare_lines(Ids(), shown, "exit  3\ntimeout 60 s\n") is None
    assert compare_lines(Ids(), shown, "exit 3\n") is not None
    assert compare_lines(Ids(), shown, "exit 3\ntimeout 60 s\nmore\n") is not None
    assert compare_lines(Ids(), shown, "exit 0\ntimeout 60 s\n") is not None
    assert compare_lines(Ids(), shown, "exit 3\ntimeout 61 s\n") is not None


def test_given_a_time_shown_as_in_some_seconds_when_it_has_passed_by_the_printing_then_ago_matches() -> (
    None
):
    shown = ["next run 2026-11-25 21:49:00Z (in 36.8 s)"]
    assert compare_lines(Ids(), shown, "next run 2027-01-02 03:04:00Z (in 12 ms)\n") is None
    assert compare_lines(Ids(), shown, "next run 2027-01-02 03:04:00Z (120 ms ago)\n") is None
    assert compare_lines(Ids(), shown, "next run 2027-01-02 03:04:00Z (soon)\n") is not None


def test_given_a_step_file_then_the_lines_after_a_command_are_its_answer_and_a_backslash_continues_it() -> (
    None
):
    commands = parse_commands("a \\\n  --flag\n# one\n#\nb  # a remark\n")
    assert commands == [Command("a \\\n  --flag", ["one", ""]), Command("b  # a remark")]
    with pytest.raises(AssertionError, match="not right after a command"):
        parse_commands("a\n\n# stray\n")
