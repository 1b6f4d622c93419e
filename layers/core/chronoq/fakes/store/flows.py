"""The FlowStore port in memory."""

from __future__ import annotations

from datetime import datetime

from chronoq.domain.flow import FlowState
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
