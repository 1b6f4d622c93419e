"""The AfterStore port in memory, with the conditional writes of the DynamoDB adapter."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronoq.domain.after import FanIn, Graph
from chronoq.fakes.store._tables import FakeTables


class FakeAfter(FakeTables):
    def get_graph(self, owner: str) -> Graph:
        return self.graphs.get(owner) or Graph(owner=owner)

    def save_graph(self, graph: Graph) -> bool:
        with self._lock:
            stored = self.graphs.get(graph.owner)
            if (stored.version if stored else 0) != graph.version:
                return False
            self.graphs[graph.owner] = graph.model_copy(update={"version": graph.version + 1})
            return True

    def follow(self, job_id: str, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return
            followers = (job.followed_by | set(add)) - set(remove)
            self.jobs[job_id] = job.model_copy(update={"followed_by": frozenset(followers)})

    def arrive(
        self, job_id: str, instant: datetime, upstream_id: str, run_id: str, now: datetime
    ) -> FanIn:
        with self._lock:
            key = (job_id, instant)
            kept = self.fanins.get(key) or FanIn(job_id=job_id, instant=instant, first_at=now)
            kept = kept.model_copy(
                update={"arrived": kept.arrived | {upstream_id}, "runs": kept.runs | {run_id}}
            )
            self.fanins[key] = kept
            return kept

    def get_fanin(self, job_id: str, instant: datetime) -> FanIn | None:
        return self.fanins.get((job_id, instant))

    def job_named(self, owner: str, name: str) -> str | None:
        held = self.names.get((owner, name))
        return held[0] if held else None
