"""The console's words for a job's audit trail (console/assets/console/audit.js), run here in
Node: each change as ``field: before → after``, a field made as ``field = value``, what a
change made (a run, a backfill) as ``key=value``, values that are not text as their JSON.
(tests/browser/test_console_run_features.py shows the trail on a job's page.)"""

from __future__ import annotations

import json
from typing import Any

from chronoq import console

from tests.support import run_node

MODULE = (console.ASSETS_DIR / "console" / "audit.js").as_uri()


def _node(expression: str) -> Any:
    """What ``expression`` (with the module as ``audit``) is, through JSON."""
    script = (
        f"import * as audit from {json.dumps(MODULE)};\nconsole.log(JSON.stringify({expression}));"
    )
    return run_node(script)


ENTRY = {
    "action": "change",
    "by": "3f1c",
    "by_name": "alice",
    "source": "console",
    "request_id": "req-1",
    "changes": [
        {"field": "priority", "before": "normal", "after": "high"},
        {"field": "labels.team", "before": None, "after": "data"},
        {"field": "target.headers.X-Key", "before": {"secret": "a"}, "after": "***"},
        {"field": "state", "before": "ACTIVE", "after": None},
    ],
    "detail": {"run_id": "run-1", "runs": 3},
}


def test_given_an_entry_when_shown_then_each_change_reads_before_and_after() -> None:
    words = _node(f"audit.entryWords({json.dumps(ENTRY)})")

    assert words == {
        "action": "change",
        "by": "alice",
        "source": "console",
        "request": "req-1",
        "changes": "priority: normal → high; labels.team = data; target.headers.X-Key:"
        ' {"secret":"a"} → ***; state: ACTIVE → -; run_id=run-1; runs=3',
    }


def test_given_an_entry_without_a_name_when_shown_then_its_subject_is_who() -> None:
    entry = {**ENTRY, "by_name": None, "changes": [], "detail": {}}

    assert _node(f"audit.entryWords({json.dumps(entry)})")["by"] == "3f1c"
    assert _node(f"audit.changeWords({json.dumps(entry)})") == ""
