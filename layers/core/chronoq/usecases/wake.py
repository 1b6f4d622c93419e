"""Waking the runs a flow parked: when runs that held ``max_running`` slots end, the runs
parked on those flows that the free slots let start are sent again, in their flow's order
(chronoq.domain.flow.wait_order). The notifier does it, as it hears of runs that end (the
runs table's stream; the state machine notes each run's slots on its record as it starts).

A woken run asks its flow for a slot as any run does: if another run took the slot first, it
is parked again; a wake lost on the way costs the parked run a wait until it looks again
(FLOW_RELOOK_SECONDS, or its start deadline). Cost per slot given back while runs wait: one
read of the flow's item, one query of the parked runs, one SQS send."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from chronoq.domain import flow
from chronoq.domain.runs import RunMessage
from chronoq.usecases.ports import Clock, JobRunStore, Queues


@dataclass(frozen=True)
class Ended:
    """A run that ended and the flow items it held slots in (its record's ``slots``)."""

    run_id: str
    slots: tuple[str, ...]

    @classmethod
    def of(cls, run_id: str, slots: str) -> Ended:
        return cls(run_id, tuple(slots.split()))


@dataclass
class SlotWaker:
    store: JobRunStore
    queues: Queues
    clock: Clock

    def runs_ended(self, ended: Iterable[Ended]) -> int:
        """Wake, for each flow the ``ended`` runs held slots in, as many of its parked runs
        as it has slots free (the ended runs' counted free: the state machine gives them
        back after recording the end). Answers how many were sent."""
        by_flow: dict[str, set[str]] = defaultdict(set)
        for run in ended:
            for key in run.slots:
                by_flow[key].add(run.run_id)
        now = self.clock()
        messages = []
        for key, runs in sorted(by_flow.items()):
            free = flow.free_slots(self.store.get_flow(key), runs)
            if free == 0:
                continue
            for parked in self.store.waiting_runs(key, free):
                message = RunMessage.of(parked, parked.scheduled_at).model_copy(
                    update={"held_at": parked.held_at, "woken": True}
                )
                messages.append((parked.priority, message))
        if messages:
            self.queues.send(messages, now)
        return len(messages)
