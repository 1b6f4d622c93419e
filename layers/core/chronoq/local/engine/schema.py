"""The engine's databases migrate themselves on start.

Each database keeps the version of its layout in ``PRAGMA user_version`` and its module lists
the steps that build it: step 1 makes a new database, step n takes version n-1 to version n.
Opening a database applies, in order, every step from the version it holds to the last,
each in the transaction that records its version: a start interrupted mid-way leaves the
database at the last version completed, and the next start goes on from there. A database
written by a newer chronoq (a version past the last step) is refused, naming both versions,
and left untouched."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

#: One step of a database's layout (DDL and data changes; no COMMIT of its own).
Step = Callable[[sqlite3.Connection], None]


class NewerSchema(RuntimeError):
    """A database written by a newer chronoq than this one."""


def statements(script: str) -> Step:
    """A step made of SQL statements separated by semicolons (none inside a statement)."""

    def step(db: sqlite3.Connection) -> None:
        for statement in script.split(";"):
            if statement.strip():
                db.execute(statement)

    return step


def version_of(db: sqlite3.Connection) -> int:
    (version,) = db.execute("PRAGMA user_version").fetchone()
    return int(version)


def connect(path: Path | None, steps: Sequence[Step], what: str) -> sqlite3.Connection:
    """The database at ``path`` (None: in memory), in WAL mode, for any thread (callers keep
    their own lock), migrated to its last step; refused, and closed, if a newer chronoq
    wrote it."""
    db = sqlite3.connect(
        ":memory:" if path is None else str(path), isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")  # (a backup or another reader may hold a lock)
    try:
        migrate(db, steps, what)
    except NewerSchema:
        db.close()
        raise
    return db


def migrate(db: sqlite3.Connection, steps: Sequence[Step], what: str) -> tuple[int, int]:
    """Bring ``db`` (opened with ``isolation_level=None``) to version ``len(steps)``.
    Answers the version found and the version now."""
    target = len(steps)
    found = version_of(db)
    if found > target:
        raise NewerSchema(
            f"{what} holds schema version {found}; this chronoq reads up to version "
            f"{target}: open it with a newer chronoq, or use another data directory"
        )
    for version in range(found, target):
        db.execute("BEGIN IMMEDIATE")
        try:
            steps[version](db)
            db.execute(f"PRAGMA user_version={version + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return found, target
