"""The DynamoDB adapter of the store ports, one module per port (see usecases.ports):
``jobs`` (JobStore), ``runs`` (RunStore), ``schedule`` (ScheduleStore), ``idempotency``
(KeyStore), ``flows`` (FlowStore), ``backfills`` (BackfillStore), ``usage`` (UsageStore),
``secrets`` (SecretStore), ``expect`` (ExpectStore) and ``calendars`` (CalendarStore). The
key layout they share is domain.keys. chronoq local's engine serves the same calls from SQLite
(chronoq.local.engine.tables), so these modules are its adapters too."""

from __future__ import annotations

from chronoq.aws.store.after import DynamoAfter
from chronoq.aws.store.backfills import DynamoBackfills
from chronoq.aws.store.calendars import DynamoCalendars
from chronoq.aws.store.erasure import DynamoErasure
from chronoq.aws.store.expect import DynamoExpect
from chronoq.aws.store.flows import DynamoFlows
from chronoq.aws.store.idempotency import DynamoKeys
from chronoq.aws.store.jobs import DynamoJobs
from chronoq.aws.store.runs import DynamoRuns
from chronoq.aws.store.schedule import DynamoSchedule
from chronoq.aws.store.secrets import DynamoSecrets
from chronoq.aws.store.usage import DynamoUsage

__all__ = [
    "DynamoAfter",
    "DynamoBackfills",
    "DynamoCalendars",
    "DynamoErasure",
    "DynamoExpect",
    "DynamoFlows",
    "DynamoJobs",
    "DynamoKeys",
    "DynamoRuns",
    "DynamoSchedule",
    "DynamoSecrets",
    "DynamoStore",
    "DynamoUsage",
]


class DynamoStore(
    DynamoAfter,
    DynamoJobs,
    DynamoRuns,
    DynamoSchedule,
    DynamoKeys,
    DynamoFlows,
    DynamoBackfills,
    DynamoUsage,
    DynamoSecrets,
    DynamoErasure,
    DynamoExpect,
    DynamoCalendars,
):
    """Every store port over the jobs, runs and schedule tables, for a function that uses
    several (any table may be left unnamed by a function that does not use it)."""
