"""The executions under way, kept on disk: what a ``kill -9`` of chronoq local takes with it.

Queued messages and every table survive a kill (they are on disk), but an execution of the run
state machine lives in the process. Each execution's runs are noted here when it starts and
forgotten when it ends, so that the next start finds the runs whose execution was lost, and
nothing else, without reading the history (see chronoq.local.engine.services: ``recover``)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from chronoq.execution import batches
from chronoq.local.engine.schema import Step, connect, statements

#: The schema this code writes, kept in PRAGMA user_version: one per step of STEPS (see
#: chronoq.local.engine.schema).
SCHEMA_VERSION = 1
STEPS: tuple[Step, ...] = (
    statements("CREATE TABLE executions (arn TEXT PRIMARY KEY, runs TEXT NOT NULL)"),
)


class InFlight:
    """Executions started and not yet ended: ARN -> the run documents of their input."""

    def __init__(self, path: Path | None) -> None:
        self._db = connect(path, STEPS, f"{path or 'the executions database'}")
        self._lock = threading.Lock()
        #: Executions that ended before their start was noted (a fast one).
        self._ended_early: set[str] = set()

    def started(self, arn: str, execution_input: str) -> None:
        document = json.loads(execution_input)
        runs = document.get(batches.RUNS, [document]) if isinstance(document, dict) else []
        with self._lock:
            if arn in self._ended_early:
                self._ended_early.discard(arn)
                return
            self._db.execute(
                "INSERT OR REPLACE INTO executions VALUES (?, ?)", (arn, json.dumps(runs))
            )

    def ended(self, arn: str) -> None:
        with self._lock:
            if self._db.execute("DELETE FROM executions WHERE arn = ?", (arn,)).rowcount == 0:
                self._ended_early.add(arn)

    def lost(self) -> list[dict[str, Any]]:
        """The run documents of every execution noted and not ended, and forgets them."""
        with self._lock:
            rows = self._db.execute("SELECT runs FROM executions").fetchall()
            self._db.execute("DELETE FROM executions")
            self._ended_early.clear()
        return [run for (runs,) in rows for run in json.loads(runs)]

    def close(self) -> None:
        with self._lock:
            self._db.close()
