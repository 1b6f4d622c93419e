"""A backfill's progress, and its owner's re-runs not ended, counted as runs end: the
notifier hands over the ends of backfills' runs and re-runs that the runs stream shows
(filtered: aws.streams), a batch at a time, and each end is counted exactly once however
often, and in whatever order, the stream delivers it.

Each run of a backfill or re-run is made with ``counted`` false (aws.codecs). Counting ends
is one transaction per backfill (per re-runs of one owner) in a batch: each run marked
counted, if it is not yet and still has the status seen; the backfill's counters moved on
(``ended``, and ``ended_<status>``) at the counters read; and when they reach its total, the
backfill COMPLETED and taken out of its owner's usage. A duplicate end finds its run marked
and is dropped; a counter that moved meanwhile (another batch) is read again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from chronoq.domain.backfills import Backfill, BackfillState
from chronoq.domain.errors import Conflict
from chronoq.usecases.ports import BackfillStore, Clock, RunEnd, Tally

#: How often one tally is tried again when its backfill's counters moved meanwhile.
ATTEMPTS = 5
#: Runs per transaction: DynamoDB writes 100 items at most in one, and a tally adds a
#: backfill's item and its owner's usage item to its runs.
RUNS_PER_TALLY = 98


@dataclass
class Progress:
    store: BackfillStore
    clock: Clock

    def count(self, ends: Iterable[RunEnd]) -> int:
        """Count each end not counted yet (a run seen twice in the batch: its last record);
        answers how many were counted now. Raises when a backfill kept changing: the batch
        is delivered again, and what was counted is not counted twice."""
        latest = {(end.job_id, end.run_id): end for end in ends}
        groups: dict[tuple[str, str, str | None], list[RunEnd]] = defaultdict(list)
        for end in latest.values():
            groups[(end.owner, end.job_id, end.backfill_id)].append(end)
        counted = 0
        for (owner, job_id, backfill_id), group in sorted(groups.items(), key=_order):
            for start in range(0, len(group), RUNS_PER_TALLY):
                chunk = group[start : start + RUNS_PER_TALLY]
                counted += self._count(owner, job_id, backfill_id, chunk)
        return counted

    def _count(self, owner: str, job_id: str, backfill_id: str | None, ends: list[RunEnd]) -> int:
        for _ in range(ATTEMPTS):
            backfill = self.store.get_backfill(job_id, backfill_id) if backfill_id else None
            refused = self.store.count_ends(
                tally(owner, ends, backfill, backfill_id is None, self.clock())
            )
            if refused is None:
                return len(ends)
            ends = [end for end in ends if end.run_id not in refused.runs]
            if not ends:
                return 0
        raise Conflict(f"backfill {backfill_id} of job {job_id} kept changing; counted later")


def tally(
    owner: str, ends: list[RunEnd], backfill: Backfill | None, reruns: bool, now: datetime
) -> Tally:
    """What counting ``ends`` writes: re-runs (``reruns``) count the owner's re-runs down; a
    backfill's runs move its counters on and complete it when they reach its total. Runs of a
    backfill that is gone, or whose ends were never counted (made before counting was), are
    only marked."""
    if reruns:
        return Tally(owner, tuple(ends), reruns=len(ends))
    if backfill is None or backfill.ended is None:
        return Tally(owner, tuple(ends))
    done = backfill.state is BackfillState.RUNNING and backfill.ended + len(ends) >= backfill.total
    return Tally(owner, tuple(ends), backfill, completed_at=now if done else None)


def _order(group: tuple[tuple[str, str, str | None], list[RunEnd]]) -> tuple[str, str, str]:
    (owner, job_id, backfill_id), _ = group
    return owner, job_id, backfill_id or ""
