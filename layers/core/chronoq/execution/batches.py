"""The EXPRESS state machine, made from the run state machine's one ASL file: the runs of a
batch (runs due in the same second, started together by a worker) each go through the run
states, side by side, in one execution. An EXPRESS execution is billed per start and per
100 ms of its duration: a batch pays for one start and for its slowest run, not for each.

Pure (no chronoq imports): ``chronoq.execution.machines`` builds both definitions with it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

#: The input of an EXPRESS execution: ``{"runs": [<ExecutionInput document>, ...]}``.
RUNS = "runs"
#: The largest input Step Functions accepts is 256 KiB: a batch stays under this.
MAX_INPUT_BYTES = 240 * 1024
#: An inline Map runs at most 40 iterations at once: a larger batch would make its last
#: runs wait for the first ones. A batch holds at most this many runs.
MAX_RUNS = 40
#: The Map state that holds the runs of a batch, and the first state of each run in it.
MAP_STATE = "Runs"
WAIT_STATE = "OnItsSecond"
#: The runner's request to collect a container's attempt (see execution.contract).
COLLECT_CONTAINER = "collect_container"


def in_batches(run: dict[str, Any]) -> dict[str, Any]:
    """The EXPRESS definition from the run (STANDARD) definition ``run``: a Map over
    ``$.runs`` whose iterations are the run's states. A run's end is not the execution's:
    the run's Fail states become Succeed states (in a Map a failed iteration would stop the
    others; each run's outcome is in its record, not in the execution's status). And the
    runner hands back an attempt's log lines for MarkSucceeded to write with the outcome (an
    EXPRESS execution is never stopped: it gets there)."""
    states: dict[str, Any] = {}
    for name, state in copy.deepcopy(run["States"]).items():
        payload = state.get("Parameters", {}).get("Payload", {})
        for request in (payload, payload.get(COLLECT_CONTAINER)):
            if isinstance(request, dict) and "attempt.$" in request:
                request["logs_with_outcome"] = True  # never stopped: MarkSucceeded writes them
        if state["Type"] == "Fail":
            comment = state.get("Comment") or state.get("Cause") or f"the run ends: {name}"
            state = {"Type": "Succeed", "Comment": comment}
        states[name] = state
    states = {
        WAIT_STATE: {
            "Type": "Wait",
            "Comment": "The worker starts a batch in the second before its runs are due: each "
            "run waits here for its second, its planned start (an EXPRESS execution waits at "
            "half the price of the worker)",
            "TimestampPath": "$.starts_at",
            "Next": run["StartAt"],
        },
        **states,
    }
    return {
        "Comment": "chronoq: the runs of a batch, each as in the STANDARD run state machine",
        "StartAt": MAP_STATE,
        "States": {
            MAP_STATE: {
                "Type": "Map",
                "ItemsPath": f"$.{RUNS}",
                "MaxConcurrency": 0,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": WAIT_STATE,
                    "States": states,
                },
                "ResultPath": None,
                "End": True,
            }
        },
    }


def chunks(documents: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The runs' input documents in batches of at most ``MAX_RUNS`` whose input stays under
    ``MAX_INPUT_BYTES``."""
    batch: list[dict[str, Any]] = []
    size = len(json.dumps({RUNS: []}))
    for document in documents:
        weight = len(json.dumps(document).encode()) + 2
        if batch and (size + weight > MAX_INPUT_BYTES or len(batch) == MAX_RUNS):
            yield batch
            batch, size = [], len(json.dumps({RUNS: []}))
        batch.append(document)
        size += weight
    if batch:
        yield batch
