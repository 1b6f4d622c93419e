"""The engine's databases migrate themselves on start (chronoq.local.engine.schema)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from chronoq.local.engine import inflight, queues, tables
from chronoq.local.engine.schema import NewerSchema, migrate, statements, version_of

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

#: A layout in three steps: a table, a column with a value for existing rows, an index.
STEPS = (
    statements("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)"),
    statements("ALTER TABLE notes ADD COLUMN kind TEXT; UPDATE notes SET kind = 'plain'"),
    statements("CREATE INDEX notes_kind ON notes (kind)"),
)


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_given_a_new_database_when_migrated_then_every_step_is_applied_in_order(
    tmp_path: Path,
) -> None:
    db = _open(tmp_path / "db")

    assert migrate(db, STEPS, "db") == (0, 3)

    assert version_of(db) == 3
    assert db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall() == [
        ("notes_kind",)
    ]


def test_given_a_database_at_an_older_version_when_migrated_then_its_data_is_carried_forward(
    tmp_path: Path,
) -> None:
    db = _open(tmp_path / "db")
    migrate(db, STEPS[:1], "db")
    db.execute("INSERT INTO notes (text) VALUES ('kept')")

    assert migrate(_open(tmp_path / "db"), STEPS, "db") == (1, 3)

    assert _open(tmp_path / "db").execute("SELECT text, kind FROM notes").fetchall() == [
        ("kept", "plain")
    ]


def test_given_a_database_at_the_current_version_when_opened_again_then_nothing_is_applied(
    tmp_path: Path,
) -> None:
    migrate(_open(tmp_path / "db"), STEPS, "db")
    applied: list[int] = []

    def step(db: sqlite3.Connection) -> None:
        applied.append(1)

    assert migrate(_open(tmp_path / "db"), (step, step, step), "db") == (3, 3)
    assert applied == []


def test_given_a_step_that_fails_when_migrated_then_the_database_stays_at_the_last_version_done(
    tmp_path: Path,
) -> None:
    db = _open(tmp_path / "db")
    broken = (*STEPS[:2], statements("CREATE INDEX notes_x ON notes (kind); SELECT * FROM nowhere"))

    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        migrate(db, broken, "db")

    assert version_of(db) == 2
    assert db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall() == []
    assert migrate(db, STEPS, "db") == (2, 3)  # the next start goes on from there


def test_given_a_database_of_a_newer_chronoq_when_opened_then_refused_naming_both_versions(
    tmp_path: Path,
) -> None:
    db = _open(tmp_path / "db")
    migrate(db, STEPS, "db")

    with pytest.raises(NewerSchema, match=r"the db holds schema version 3; .* up to version 1"):
        migrate(db, STEPS[:1], "the db")

    assert version_of(db) == 3


def test_given_each_engine_database_when_made_then_it_is_at_the_version_of_its_steps(
    tmp_path: Path,
) -> None:
    for module in (tables, queues, inflight):
        assert len(module.STEPS) == module.SCHEMA_VERSION
    inflight.InFlight(tmp_path / "executions.db")
    queues.SqliteQueues(tmp_path / "queues.db", lambda: NOW)

    assert version_of(_open(tmp_path / "executions.db")) == inflight.SCHEMA_VERSION
    assert version_of(_open(tmp_path / "queues.db")) == queues.SCHEMA_VERSION
