"""The RunStore port in memory."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronoq.domain import ids
from chronoq.domain.flow import wait_order
from chronoq.domain.runs import Attempt, Run, RunStatus, Trigger
from chronoq.domain.time import utc_second
from chronoq.fakes.store._tables import FakeTables, page
from chronoq.usecases.ports import Page, Position, RunFilter


class FakeRuns(FakeTables):
    def create_run(self, run: Run, now: datetime) -> bool:
        with self._lock:
            key = (run.job_id, run.id)
            if key in self.runs:
                return False
            self.runs[key] = Run(
                id=run.id,
                job_id=run.job_id,
                owner=run.owner,
                status=run.status,
                priority=run.priority,
                trigger=run.trigger,
                generation=run.generation,
                scheduled_at=run.scheduled_at,
                queued_at=run.queued_at,
                notify=run.notify,
                rerun_of=run.rerun_of,
                backfill_id=run.backfill_id,
                held_at=run.held_at,
                start_deadline_seconds=run.start_deadline_seconds,
                triggered_by=run.triggered_by,
                cascade=run.cascade,
                parameters=run.parameters,
            )
            return True

    def hold_run(self, run: Run, held_at: datetime, reason: str, now: datetime) -> bool:
        with self._lock:
            kept = self.runs.get((run.job_id, run.id))
            if kept is None:
                self.create_run(
                    run.model_copy(update={"status": RunStatus.SCHEDULED, "held_at": held_at}),
                    now,
                )
                kept = self.runs[(run.job_id, run.id)]
            elif kept.status is not RunStatus.SCHEDULED or kept.held_at is not None:
                return False
            self.runs[(run.job_id, run.id)] = kept.model_copy(
                update={"held_at": held_at, "wait_reason": reason}
            )
            return True

    def park_run(
        self, run: Run, held_at: datetime, flow_key: str, reason: str, now: datetime
    ) -> bool:
        with self._lock:
            kept = self.runs.get((run.job_id, run.id))
            if kept is None:
                self.create_run(run.model_copy(update={"status": RunStatus.SCHEDULED}), now)
                kept = self.runs[(run.job_id, run.id)]
            if kept.status is not RunStatus.SCHEDULED:
                return False
            held = kept.held_at or run.held_at or held_at
            self.runs[(run.job_id, run.id)] = kept.model_copy(
                update={"held_at": held, "wait_reason": reason}
            )
            order = wait_order(kept.priority.value, held, run.id)
            _, order = self.parked.get((run.job_id, run.id), (flow_key, order))
            self.parked[(run.job_id, run.id)] = (flow_key, order)
            return True

    def count_waiting_triggers(self, job_id: str, since: datetime, most: int) -> int:
        with self._lock:
            start = ids.run_id(job_id, utc_second(since))
            newest = sorted(
                (run for (j, rid), run in self.runs.items() if j == job_id and rid >= start),
                key=lambda run: run.id,
                reverse=True,
            )[:most]
            return sum(
                1
                for run in newest
                if run.trigger is Trigger.MANUAL
                and run.status in (RunStatus.SCHEDULED, RunStatus.QUEUED)
            )

    def waiting_runs(self, flow_key: str, limit: int) -> list[Run]:
        with self._lock:
            found = sorted(
                (order, self.runs[key])
                for key, (flow, order) in self.parked.items()
                if flow == flow_key and key in self.runs
            )
            waiting = [run for _, run in found if run.status is RunStatus.SCHEDULED]
            return waiting[:limit]

    def get_run(self, job_id: str, run_id: str) -> Run | None:
        return self.runs.get((job_id, run_id))

    def list_runs(self, job_id: str, limit: int) -> list[Run]:
        mine = sorted((r for (j, _), r in self.runs.items() if j == job_id), key=lambda r: r.id)
        return mine[::-1][:limit]

    def page_runs(
        self,
        job_id: str,
        owner: str,
        limit: int,
        after: Position | None = None,
        where: RunFilter | None = None,
    ) -> Page[Run]:
        newest_first = sorted(
            (run for (j, _), run in self.runs.items() if j == job_id and run.owner == owner),
            key=lambda run: run.id,
            reverse=True,
        )
        candidates = [
            ((run.id,), run) for run in newest_first if after is None or (run.id,) < after
        ]
        return page(candidates, limit, (where or RunFilter()).matches)

    def end_run(
        self,
        run: Run,
        status: RunStatus,
        now: datetime,
        reason: str,
        only_from: Iterable[RunStatus],
        attempt: Attempt | None = None,
    ) -> bool:
        with self._lock:
            kept = self.runs.get((run.job_id, run.id))
            if kept is None or kept.status not in set(only_from):
                return False
            attempts = [*kept.attempts, attempt] if attempt is not None else kept.attempts
            self.parked.pop((run.job_id, run.id), None)
            self.runs[(run.job_id, run.id)] = kept.model_copy(
                update={
                    "wait_reason": None,
                    "status": status,
                    "finished_at": now,
                    "reason": reason,
                    "attempts": attempts,
                }
            )
            return True

    def delete_pending_run(self, job_id: str, run_id: str) -> bool:
        with self._lock:
            kept = self.runs.get((job_id, run_id))
            if kept is None or kept.status is not RunStatus.SCHEDULED:
                return False
            del self.runs[(job_id, run_id)]
            return True

    def note_notification(self, job_id: str, run_id: str, channel: str, outcome: str) -> None:
        with self._lock:
            silence = self.silences.get((job_id, run_id))
            if silence is not None:  # (a silence's record: in the same table on AWS)
                notes = {**silence.notifications, channel: outcome}
                self.silences[(job_id, run_id)] = silence.model_copy(
                    update={"notifications": notes}
                )
                return
            kept = self.runs.get((job_id, run_id))
            if kept is not None:
                notes = {**kept.notifications, channel: outcome}
                self.runs[(job_id, run_id)] = kept.model_copy(update={"notifications": notes})

    def update_run(self, job_id: str, run_id: str, **changes: object) -> None:
        """What the run state machine writes (MarkRunning, MarkSucceeded, ...): for tests
        that play its part."""
        with self._lock:
            kept = self.runs[(job_id, run_id)]
            self.runs[(job_id, run_id)] = kept.model_copy(update=changes)
