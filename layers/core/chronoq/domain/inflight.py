"""An owner's runs in flight: how many of its runs have started and not ended, whatever
started them (schedule, trigger, re-run, backfill), held to the deployment's
``max_runs_in_flight``. A run over it is not refused: it waits, parked, for one of them to end.

The count is one item per owner (in the jobs table), kept without naming the runs: a total and
one counter per *bucket*. A run is counted in the bucket of its worst-case end (every attempt
to its timeout, every retry wait: ``end_bucket``) and given back in the same bucket when it
ends. A count that is never given back (a worker that died between counting a run and starting
it, an end heard twice or never) is therefore wrong only until that run's worst-case end: a
bucket past its end (and BUCKET_GRACE_SECONDS) is ``expired`` and taken out of the total, as
whoever next writes the item finds it. So the count is exact while nothing fails, and heals by
itself when something does, at one write per start and one per end (not per run: the worker
counts a batch's runs of one owner together, and the notifier gives back a stream batch's).

Buckets are rounded up to the minute for ends within the hour, to the hour within the day, and
to the day beyond: an item holds at most about a hundred of them (under 2 KB).

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from chronoq.domain import keys

#: A bucket is taken out of the count this long after its worst-case end (a container's
#: provisioning, a late first state, clocks apart).
BUCKET_GRACE_SECONDS = 300
#: Prefix of a bucket's attribute on the item (its worst-case end, epoch seconds, follows).
BUCKET_PREFIX = "b"
#: Between an in-flight item's key and a run's bucket, in a run's ``slots``.
SEPARATOR = "@"


def item_key(owner: str) -> str:
    """The item counting the owner's runs in flight (no owner in clear). A flow item's
    prefix: a run's ``slots`` naming it passes the notifier's stream filter as flows' do."""
    digest = hashlib.sha256(f"in-flight\0{owner}".encode()).hexdigest()[:40]
    return keys.FLOW + "n" + digest


def is_item_key(key: str) -> bool:
    return key.startswith(keys.FLOW + "n") and len(key) == len(keys.FLOW) + 41


def end_bucket(now: datetime, worst_case_seconds: float) -> str:
    """The bucket of a run that starts about ``now`` and lasts at most
    ``worst_case_seconds``: its worst-case end, rounded up to the minute (within the hour),
    the hour (within the day) or the day."""
    seconds = max(0.0, worst_case_seconds)
    step = 60 if seconds < 3600 else 3600 if seconds < 86400 else 86400
    end = math.ceil((now.timestamp() + seconds) / step) * step
    return f"{BUCKET_PREFIX}{end}"


def bucket_end(bucket: str) -> int:
    """A bucket's worst-case end (epoch seconds)."""
    return int(bucket[len(BUCKET_PREFIX) :])


def is_bucket(name: str) -> bool:
    return (
        name.startswith(BUCKET_PREFIX)
        and name[len(BUCKET_PREFIX) :].isascii()
        and (name[len(BUCKET_PREFIX) :].isdigit())
    )


def slot(key: str, bucket: str) -> str:
    """How a counted run's ``slots`` names its count: the item and its bucket."""
    return f"{key}{SEPARATOR}{bucket}"


def parse_slot(token: str) -> tuple[str, str] | None:
    """(item key, bucket) of a ``slots`` token naming a count (None: a flow's slot)."""
    key, separator, bucket = token.partition(SEPARATOR)
    if not separator or not is_item_key(key) or not is_bucket(bucket):
        return None
    return key, bucket


@dataclass(frozen=True)
class InFlight:
    """An owner's count as stored: the total and each bucket's part of it."""

    total: int = 0
    buckets: Mapping[str, int] = field(default_factory=dict)
    #: When a run was last parked on the count (epoch seconds; 0: none since the last
    #: wake found none left): a run's end looks for parked runs only then.
    parked_at: int = 0

    def expired(self, now: datetime) -> dict[str, int]:
        """The buckets past their worst-case end (and the grace): their counts are of runs
        that have ended whatever the item says, to take out of the total."""
        limit = now.timestamp() - BUCKET_GRACE_SECONDS
        return {name: n for name, n in self.buckets.items() if bucket_end(name) < limit}

    def live(self, now: datetime) -> int:
        """The runs in flight: the total without the expired buckets."""
        return self.total - sum(self.expired(now).values())


def grouped(buckets: Iterable[str]) -> dict[str, int]:
    """How many runs each bucket counts, of ``buckets`` (one per run)."""
    return dict(Counter(buckets))


def admitted(wanted: int, in_flight: int, limit: int) -> int:
    """How many of ``wanted`` runs may start with ``in_flight`` runs under way."""
    return max(0, min(wanted, limit - in_flight))
