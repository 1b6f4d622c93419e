"""A restart of the engine: the runs whose execution the last stop took with it.

Tables and queues are on disk and lose nothing a caller saw succeed; an execution of the run
state machine does not outlive its process. Its runs were noted when it started
(chronoq.local.engine.inflight); each one that has not ended is given back as a stop of the
moto engine gives back its runs (chronoq.local.persist.give_back): a run that was RUNNING ends
FAILED (its target may have been called: it is not called again), one that had not started
yet is sent again, and so is one that has no record yet (a worker starts a run without writing
one: its first state does), from what its execution's input says of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from chronoq.aws.queues import SqsQueues
from chronoq.aws.store import DynamoStore
from chronoq.domain.runs import ACTIVE_STATUSES, Priority, Run, RunMessage
from chronoq.execution.contract import ExecutionInput
from chronoq.local.persist import give_back


def recover(
    lost: Iterable[Mapping[str, Any]], store: DynamoStore, queues: SqsQueues, now: datetime
) -> dict[str, int]:
    """``lost``: the input documents of the runs of executions that never ended."""
    unfinished: list[Run] = []
    unrecorded: dict[str, ExecutionInput] = {}
    for document in lost:
        execution = ExecutionInput.model_validate(document)
        run = store.get_run(execution.job_id, execution.run_id)
        if run is None:
            unrecorded[execution.run_id] = execution
        elif run.status in ACTIVE_STATUSES and run not in unfinished:
            unfinished.append(run)
    counts = give_back(store, queues, unfinished, now)
    queues.send(
        (
            (
                Priority(execution.priority),
                RunMessage(
                    job_id=execution.job_id,
                    run_id=execution.run_id,
                    scheduled_at=datetime.fromisoformat(execution.scheduled_at),
                    queued_at=datetime.fromisoformat(execution.queued_at or execution.scheduled_at),
                    generation=execution.generation,
                    trigger=execution.trigger,
                    owner=execution.owner,
                ),
            )
            for execution in unrecorded.values()
        ),
        now,
    )
    return {**counts, "resent": counts["resent"] + len(unrecorded)}
