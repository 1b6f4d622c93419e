"""The store ports in memory, with the conditional writes of the DynamoDB adapter (one module
per port, as chronoq.aws.store)."""

from __future__ import annotations

from dataclasses import dataclass

from chronoq.fakes.store.after import FakeAfter
from chronoq.fakes.store.backfills import FakeBackfills
from chronoq.fakes.store.calendars import FakeCalendars
from chronoq.fakes.store.erasure import FakeErasure
from chronoq.fakes.store.expect import FakeExpect
from chronoq.fakes.store.flows import FakeFlows
from chronoq.fakes.store.idempotency import FakeKeys
from chronoq.fakes.store.jobs import FakeJobs
from chronoq.fakes.store.runs import FakeRuns
from chronoq.fakes.store.schedule import FakeSchedule
from chronoq.fakes.store.secrets import FakeSecrets
from chronoq.fakes.store.usage import FakeUsage

__all__ = [
    "FakeAfter",
    "FakeBackfills",
    "FakeCalendars",
    "FakeErasure",
    "FakeExpect",
    "FakeFlows",
    "FakeJobs",
    "FakeKeys",
    "FakeRuns",
    "FakeSchedule",
    "FakeSecrets",
    "FakeStore",
    "FakeUsage",
]


@dataclass
class FakeStore(
    FakeAfter,
    FakeJobs,
    FakeRuns,
    FakeSchedule,
    FakeKeys,
    FakeFlows,
    FakeBackfills,
    FakeUsage,
    FakeSecrets,
    FakeErasure,
    FakeExpect,
    FakeCalendars,
):
    """Every store port over the same tables in memory."""
