"""chronoq local keeps each parsed state machine definition in the user's cache directory
(chronoq.local.parsed): read back at the next start instead of parsed again, but only from a
directory no one else may write in, and parsed again when what is kept cannot be read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from chronoq.local import parsed


class Parser:
    """A parse that counts its calls: (program, tree)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, definition: str) -> tuple[Any, Any]:
        self.calls.append(definition)
        return {"states": definition}, object()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(parsed.CACHE_ENV, str(tmp_path))
    return tmp_path / "chronoq" / "asl"


def test_given_a_definition_parsed_once_when_parsed_at_the_next_start_then_its_program_is_read_back(
    cache: Path,
) -> None:
    parse = Parser()

    first = parsed.program('{"StartAt": "A"}', parse)
    again = parsed.program('{"StartAt": "A"}', parse)

    assert parse.calls == ['{"StartAt": "A"}']
    assert again == (first[0], None)
    assert oct(cache.stat().st_mode & 0o777) == oct(0o700)


def test_given_two_definitions_when_parsed_then_each_is_kept_under_its_own_name(
    cache: Path,
) -> None:
    parse = Parser()

    parsed.program('{"StartAt": "A"}', parse)
    other = parsed.program('{"StartAt": "B"}', parse)

    assert parse.calls == ['{"StartAt": "A"}', '{"StartAt": "B"}']
    assert other[0] == {"states": '{"StartAt": "B"}'}
    assert len(list(cache.iterdir())) == 2


def test_given_a_cache_directory_others_may_write_in_when_parsed_then_nothing_is_read_from_it(
    cache: Path,
) -> None:
    parse = Parser()
    parsed.program('{"StartAt": "A"}', parse)
    cache.chmod(0o777)

    parsed.program('{"StartAt": "A"}', parse)

    assert len(parse.calls) == 2


def test_given_a_kept_program_that_cannot_be_read_when_parsed_then_it_is_parsed_and_kept_again(
    cache: Path,
) -> None:
    parse = Parser()
    parsed.program('{"StartAt": "A"}', parse)
    (kept,) = cache.iterdir()
    kept.write_bytes(b"not a program")

    program, _ = parsed.program('{"StartAt": "A"}', parse)
    again, tree = parsed.program('{"StartAt": "A"}', parse)

    assert len(parse.calls) == 2
    assert program == again == {"states": '{"StartAt": "A"}'}
    assert tree is None


def test_given_no_cache_directory_can_be_made_when_parsed_then_it_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(parsed.CACHE_ENV, str(blocked))
    parse = Parser()

    parsed.program('{"StartAt": "A"}', parse)
    parsed.program('{"StartAt": "A"}', parse)

    assert len(parse.calls) == 2
    assert os.path.isfile(blocked)
