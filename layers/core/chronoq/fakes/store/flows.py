"""The FlowStore port in memory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from chronoq.domain.flow import FlowState
from chronoq.domain.inflight import InFlight
from chronoq.fakes.store._tables import FakeTables


class FakeFlows(FakeTables):
    def get_flow(self, key: str) -> FlowState:
        return self.flows.get(key, FlowState())

    def save_flow(self, key: str, before: FlowState, after: FlowState, now: datetime) -> bool:
        with self._lock:
            kept = self.flows.get(key, FlowState())
            if kept.version != before.version:
                return False
            # (holders released meanwhile stay released: only added and removed ones change)
            added = {k: v for k, v in after.holders.items() if before.holders.get(k) != v}
            removed = set(before.holders) - set(after.holders)
            holders = {k: v for k, v in kept.holders.items() if k not in removed} | added
            self.flows[key] = FlowState(
                holders, after.frontier, after.starts, before.version + 1, after.max_running
            )
            return True

    def release_flow(self, key: str, run_id: str) -> None:
        with self._lock:
            kept = self.flows.get(key)
            if kept is not None and run_id in kept.holders:
                holders = {k: v for k, v in kept.holders.items() if k != run_id}
                self.flows[key] = FlowState(
                    holders, kept.frontier, kept.starts, kept.version, kept.max_running
                )

    # --- runs in flight -------------------------------------------------------------------

    def get_in_flight(self, key: str) -> InFlight:
        return self.in_flight.get(key, InFlight())

    def take_in_flight(
        self, key: str, buckets: Mapping[str, int], limit: int, now: datetime
    ) -> InFlight | None:
        with self._lock:
            kept = self.in_flight.get(key, InFlight())
            wanted = sum(buckets.values())
            if kept.total + wanted > limit:
                return None
            self.in_flight[key] = _added(kept, buckets, 1)
            return self.in_flight[key]

    def give_in_flight(self, key: str, buckets: Mapping[str, int]) -> InFlight:
        with self._lock:
            kept = self.in_flight.get(key)
            if kept is None:
                return InFlight()
            self.in_flight[key] = _added(kept, buckets, -1)
            return self.in_flight[key]

    def heal_in_flight(self, key: str, expired: Mapping[str, int]) -> None:
        with self._lock:
            kept = self.in_flight.get(key)
            if kept is None or any(kept.buckets.get(b) != n for b, n in expired.items()):
                return
            buckets = {b: n for b, n in kept.buckets.items() if b not in expired}
            self.in_flight[key] = InFlight(
                kept.total - sum(expired.values()), buckets, kept.parked_at
            )

    def mark_in_flight_parked(self, key: str, now: datetime) -> None:
        with self._lock:
            kept = self.in_flight.get(key)
            if kept is not None:
                self.in_flight[key] = replace(kept, parked_at=int(now.timestamp()))

    def clear_in_flight_parked(self, key: str, parked_at: int) -> None:
        with self._lock:
            kept = self.in_flight.get(key)
            if kept is not None and kept.parked_at == parked_at:
                self.in_flight[key] = replace(kept, parked_at=0)


def _added(kept: InFlight, buckets: Mapping[str, int], sign: int) -> InFlight:
    counts = dict(kept.buckets)
    for bucket, n in buckets.items():
        counts[bucket] = counts.get(bucket, 0) + sign * n
    return InFlight(kept.total + sign * sum(buckets.values()), counts, kept.parked_at)
