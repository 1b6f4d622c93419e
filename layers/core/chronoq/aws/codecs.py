"""One codec per stored record: how a job, a schedule item and a run look in DynamoDB. Every
Python writer goes through these; the run state machine writes run items too, and
tests/unit/test_contracts.py holds its writes to ``RUN_ATTRIBUTES``.

Why this module is long: it is one codec per stored record (jobs, schedule items, packs and
deadlines, runs and attempts, flows, owners' runs in flight, backfills, expectations and
silence events, usage, audit entries) over the same attribute conventions; the state machine's
writes are held to its names (RUN_ATTRIBUTES), so the item formats stay in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from chronoq import resources as r
from chronoq.domain import ids, inflight, keys
from chronoq.domain.audit import AuditEntry
from chronoq.domain.backfills import ITEM_PREFIX as BACKFILL_PREFIX
from chronoq.domain.backfills import Backfill
from chronoq.domain.base import STORED
from chronoq.domain.flow import FlowState
from chronoq.domain.inflight import InFlight
from chronoq.domain.jobs import Job, JobSpec, OnComplete
from chronoq.domain.limits import Usage
from chronoq.domain.parameters import stored as stored_parameters
from chronoq.domain.runs import Attempt, Occurrence, Run
from chronoq.domain.silence import Deadline, Expectation, SilenceEvent, check_minute
from chronoq.domain.time import format_instant
from chronoq.execution.contract import describe_error

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def dump(item: Mapping[str, Any]) -> dict[str, Any]:
    """Python values to DynamoDB's typed values (None values left out)."""
    return {k: _typed(v) for k, v in item.items() if v is not None}


#: The largest integer DynamoDB's numbers hold exactly (38 digits).
_MAX_EXACT = 10**38


def _typed(value: Any) -> Any:
    """A value as TypeSerializer types it: strings, booleans, integers, maps and lists
    directly (most of what chronoq writes), anything else by TypeSerializer itself."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int and -_MAX_EXACT < value < _MAX_EXACT:
        return {"N": str(value)}
    if kind is dict:
        return {"M": {k: _typed(v) for k, v in value.items()}}
    if kind is list:
        return {"L": [_typed(v) for v in value]}
    return _serializer.serialize(value)


def load(item: Mapping[str, Any]) -> dict[str, Any]:
    """DynamoDB's typed values to Python values."""
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def instant(value: datetime | None) -> str | None:
    return format_instant(value) if value is not None else None


def millis(value: datetime) -> int:
    """An instant as milliseconds since the epoch (for attributes compared in conditions:
    ISO strings with and without fractions do not sort in time order)."""
    return round(value.timestamp() * 1000)


# --- jobs -------------------------------------------------------------------------------------


def job_item(job: Job) -> dict[str, Any]:
    """A job's attributes (Python values; ``dump`` them to write)."""
    return {
        "job_id": job.id,
        "owner": job.owner,
        "state": job.state.value,
        "next_run_at": instant(job.next_run_at),
        "version": job.version,
        "created_at": format_instant(job.created_at),
        "updated_at": format_instant(job.updated_at),
        "spec": spec_json(job),
        "generation": job.generation,
        "active_runs": set(job.active_runs) or None,
        # limited runs (written only for jobs with max_runs)
        "runs_before": job.runs_before or None,
        "final_run_at": instant(job.final_run_at),
        # completion triggers: the after jobs following it (see domain.after)
        "followed_by": set(job.followed_by) or None,
    }


#: A job's attributes of limited runs (absent for jobs without max_runs).
LIMIT_ATTRIBUTES = ("runs_before", "final_run_at")


#: Fields of a job's spec not stored while they hold their default: the item of a job that
#: uses none of them is what it was before they existed (not a byte more to read per run).
UNSTORED_DEFAULTS: dict[str, Any] = {
    "max_runs": None,
    "on_complete": OnComplete.KEEP,
    "labels": {},
    "flow": None,
    "expect": None,
    "parameters": {},
}


def spec_json(job: Job) -> str:
    """The job's spec as stored: JSON, without the fields that hold their default (nor a
    schedule's ``window_seconds`` of 0)."""
    spec = job.spec()
    unset: dict[str, Any] = {
        k: True for k, default in UNSTORED_DEFAULTS.items() if getattr(spec, k) == default
    }
    if getattr(spec.schedule, "window_seconds", None) == 0:
        unset["schedule"] = {"window_seconds"}
    return spec.model_dump_json(exclude=unset)


_SPEC_FIELDS = tuple(JobSpec.model_fields)


def job_from_item(item: Mapping[str, Any]) -> Job:
    data = load(item)
    spec = JobSpec.model_validate_json(data.pop("spec"), context=STORED)
    return Job.model_validate(
        {
            # (the spec's fields as validated: its models are taken as they are, not
            # dumped and validated again)
            **{name: getattr(spec, name) for name in _SPEC_FIELDS},
            **data,
            "id": data["job_id"],
            "version": int(data["version"]),
            "generation": int(data.get("generation", 1)),
            "runs_before": int(data.get("runs_before", 0)),
            "active_runs": frozenset(data.get("active_runs", ())),
        },
        context=STORED,
    )


# --- schedule items ---------------------------------------------------------------------------


def occurrence_item(o: Occurrence, shards: int, now: datetime) -> dict[str, Any]:
    """The time index's item of an occurrence: partition = minute bucket + shard, sort = due
    time (its planned start) + run id; it expires some time after it was due."""
    return {
        "bucket": ids.bucket(o.starts_at, ids.shard_of(o.job_id, shards)),
        "due": f"{format_instant(o.starts_at)}#{o.run_id}",
        "job_id": o.job_id,
        "run_id": o.run_id,
        "scheduled_at": format_instant(o.scheduled_at),
        "priority": o.priority.value,
        "generation": o.generation,
        "expires_at": schedule_expiry([o], now),
    }


#: The most occurrences one pack item holds (about 150 bytes each: a write unit per ~7).
PACK_SIZE = 100


def pack_item(
    occurrences: list[Occurrence], shards: int, now: datetime, key: str
) -> dict[str, Any]:
    """The time index's item of many occurrences of one bucket (``key`` and the first of
    them name it, so the same occurrences packed again are the same item, while another
    page of the minute being chained on is another): what the dispatcher writes when it
    chains jobs on, a write unit per few occurrences rather than one each."""
    first = min(occurrences, key=lambda o: (o.starts_at, o.run_id))
    return {
        "bucket": ids.bucket(first.starts_at, ids.shard_of(first.job_id, shards)),
        "due": f"{format_instant(first.starts_at)}#pack#{key}#{first.run_id}",
        "occurrences": [
            {
                "job_id": o.job_id,
                "run_id": o.run_id,
                "scheduled_at": format_instant(o.scheduled_at),
                "priority": o.priority.value,
                "generation": o.generation,
            }
            for o in occurrences
        ],
        "expires_at": schedule_expiry(occurrences, now),
    }


def schedule_expiry(occurrences: list[Occurrence], now: datetime) -> int:
    """When a time-index item expires (TTL): SCHEDULE_RETENTION_SECONDS after the latest of
    its planned starts, or after ``now`` if that is later; never before a run it plans is
    due, however far ahead (a weekly or yearly schedule's next run)."""
    latest = max([now, *(o.starts_at for o in occurrences)])
    return int(latest.timestamp()) + r.SCHEDULE_RETENTION_SECONDS


def deadline_item(deadline: Deadline, shards: int, now: datetime) -> dict[str, Any]:
    """The time index's item of a job's success deadline: in the bucket of the minute the
    dispatcher checks it at (domain.silence.check_minute), sort key ``<deadline>#expect#<job
    id>``; it expires some time after that minute."""
    minute = check_minute(deadline.at, now)
    kind = keys.expect_key(deadline.job_id)
    if deadline.instant is not None:  # (an after job's fan-in wait: ``#fanin#<job>#<instant>``)
        kind = keys.fanin_key(deadline.job_id, ids.run_stamp(deadline.instant))
    return {
        "bucket": ids.bucket(minute, ids.shard_of(deadline.job_id, shards)),
        "due": f"{format_instant(deadline.at)}#{kind}",
        "job_id": deadline.job_id,
        DEADLINE: format_instant(deadline.at),
        "instant": instant(deadline.instant),
        "expires_at": int(minute.timestamp()) + r.SCHEDULE_RETENTION_SECONDS,
    }


#: The attribute of a deadline's item in the time index (occurrences' items never have it).
DEADLINE = "deadline"


def is_deadline_item(item: Mapping[str, Any]) -> bool:
    return DEADLINE in item


def deadline_from_item(item: Mapping[str, Any]) -> Deadline:
    data = load(item)
    return Deadline(job_id=data["job_id"], at=data[DEADLINE], instant=data.get("instant"))


def occurrences_from_item(item: Mapping[str, Any]) -> list[Occurrence]:
    """The occurrences a time index item holds: one, or a pack's."""
    loaded = load(item)
    if "occurrences" in loaded:
        return [Occurrence.model_validate(o) for o in loaded["occurrences"]]
    return [Occurrence.model_validate(loaded)]


# --- runs -------------------------------------------------------------------------------------

#: Every attribute a run item may hold, and its DynamoDB type. ``notified_<channel>`` notes
#: how each notification went; ``logs``/``log_bytes``/``log_objects`` hold its log lines.
RUN_ATTRIBUTES: dict[str, str] = {
    "job_id": "S",
    "run_id": "S",
    "owner": "S",
    "status": "S",
    "priority": "S",
    "trigger": "S",
    "generation": "N",
    "scheduled_at": "S",
    "expires_at": "N",
    "queued_at": "S",
    #: When the run was last claimed (epoch milliseconds): the claim lasts CLAIM_LEASE_SECONDS.
    "claimed_at": "N",
    "started_at": "S",
    "finished_at": "S",
    "output": "S",
    "output_location": "S",
    "error": "S",
    "error_cause": "S",
    "reason": "S",
    "attempts": "L",
    "logs": "L",
    "log_bytes": "N",
    "log_objects": "L",
    #: true when its job asked to be notified, or its end is counted (``counted``): the runs
    #: stream filter lets its end through whatever the status; absent otherwise.
    "notify": "BOOL",
    #: true when ``notify`` is there only for its end to be counted (its job asked for
    #: nothing); absent otherwise.
    "quiet": "BOOL",
    #: a re-run's original run, a backfill's id, when a run first waited for its flow
    #: (absent unless so).
    "rerun_of": "S",
    "backfill_id": "S",
    "start_deadline_seconds": "N",
    "held_at": "S",
    #: the flow items the run holds slots in, space-separated ("" for none), written as it
    #: starts: its end wakes the runs parked on them (see chronoq.usecases.wake).
    "slots": "S",
    #: a parked run's flow item and place among its runs (the waiting index's keys; absent
    #: once it starts or ends).
    "waits_on": "S",
    "wait_order": "S",
    #: why it waits (absent once it starts or ends).
    "wait_reason": "S",
    #: a backfill's or re-run's run: false until its end is counted (on its backfill, and in
    #: its owner's usage: usecases.progress), then true; absent for other runs.
    "counted": "BOOL",
    #: a run of an ``after`` job: the upstream runs that made it (absent for other runs).
    "triggered_by": "L",
    #: true when its end triggers its job's followers again (a cascading re-run, backfill's
    #: run, or a run they made); absent otherwise.
    "cascade": "BOOL",
    #: the parameters of a run asked for with some, or of a job with defaults (compact JSON;
    #: absent when there are none).
    "parameters": "S",
}
#: The attributes of each element of ``attempts`` (a map).
ATTEMPT_ATTRIBUTES: dict[str, str] = {
    "attempt": "N",
    "started_at": "S",
    "finished_at": "S",
    "outcome": "S",
    "error": "S",
}
#: Prefix of the attributes noting how each notification went (notified_sns, ...).
NOTIFIED = "notified_"
RUN_KEY = ("job_id", "run_id")


def attempt_item(attempt: Attempt) -> dict[str, Any]:
    """One element of a run's ``attempts`` (as the state machine writes them too)."""
    item = {
        "attempt": attempt.attempt,
        "started_at": format_instant(attempt.started_at),
        "finished_at": format_instant(attempt.finished_at),
        "outcome": attempt.outcome,
        "error": attempt.error,
    }
    return {k: v for k, v in item.items() if v is not None}


def run_key(job_id: str, run_id: str) -> dict[str, Any]:
    return dump({"job_id": job_id, "run_id": run_id})


#: The attribute marking a backfill's or re-run's run whose end has been counted.
COUNTED = "counted"
#: The attribute of a run marked ``notify`` only for its end to be counted.
QUIET = "quiet"


def counts_end(run: Run) -> bool:
    """Is the run's end counted (a run of a backfill, or a re-run)?"""
    return bool(run.backfill_id or run.rerun_of)


def new_run_item(run: Run, now: datetime) -> dict[str, Any]:
    """The item of a run just created (``queued_at``: when it is sent at once, as a manual
    run is)."""
    return {
        "job_id": run.job_id,
        "run_id": run.id,
        "owner": run.owner,
        "status": run.status.value,
        "priority": run.priority.value,
        "trigger": run.trigger.value,
        "generation": run.generation,
        "scheduled_at": format_instant(run.scheduled_at),
        "queued_at": format_instant(run.queued_at) if run.queued_at else None,
        "expires_at": int(now.timestamp()) + r.RUN_RETENTION_SECONDS,
        # written only when true: the notifier hears of its end (its job asked, or its end
        # is counted: see aws.streams); QUIET when it is only for the count
        "notify": True if run.notify or counts_end(run) else None,
        QUIET: True if counts_end(run) and not run.notify else None,
        "rerun_of": run.rerun_of,
        "backfill_id": run.backfill_id,
        "held_at": instant(run.held_at),
        "start_deadline_seconds": run.start_deadline_seconds,
        COUNTED: False if counts_end(run) else None,
        "triggered_by": list(run.triggered_by) if run.triggered_by else None,
        "cascade": True if run.cascade else None,
        "parameters": stored_parameters(run.parameters),
    }


def run_from_item(item: Mapping[str, Any]) -> Run:
    """A run from its item as DynamoDB (or its stream) shows it, whoever wrote it."""
    data = load(item)
    error = describe_error(data.pop("error", None), data.pop("error_cause", None))
    attempts = [
        {
            **a,
            "attempt": int(a["attempt"]),
            "error": (
                describe_error(a["outcome"], a["error"])
                if str(a.get("error", "")).startswith("{")
                else a.get("error")
            ),
        }
        for a in data.pop("attempts", [])
    ]
    return Run.model_validate(
        {
            **data,
            "id": data["run_id"],
            "error": error,
            "attempts": attempts,
            "notifications": {
                k.removeprefix(NOTIFIED): v for k, v in data.items() if k.startswith(NOTIFIED)
            },
            # (what its job asked for: not a notify mark there only for the count)
            "notify": bool(data.get("notify")) and not data.get(QUIET),
            # the state machine writes "" for "kept elsewhere" / "none"
            "output": data.get("output") or None,
            "output_location": data.get("output_location") or None,
        }
    )


# --- flows ------------------------------------------------------------------------------------


def flow_from_item(item: Mapping[str, Any] | None) -> FlowState:
    """A flow's state from its item in the jobs table (none yet: version 0)."""
    if not item:
        return FlowState()
    data = load(item)
    return FlowState(
        holders={k: int(v) for k, v in data.get("holders", {}).items()},
        frontier=int(data.get("frontier", 0)),
        starts=int(data.get("starts", 0)),
        version=int(data.get("version", 0)),
        max_running=int(data["max_running"]) if data.get("max_running") is not None else None,
    )


def in_flight_from_item(item: Mapping[str, Any] | None) -> InFlight:
    """An owner's count of runs in flight from its item in the jobs table (none: empty)."""
    if not item:
        return InFlight()
    data = load(item)
    return InFlight(
        total=int(data.get("total", 0)),
        buckets={k: int(v) for k, v in data.items() if inflight.is_bucket(k)},
        parked_at=int(data.get("parked_at", 0)),
    )


# --- backfills --------------------------------------------------------------------------------


def backfill_key(job_id: str, backfill_id: str) -> dict[str, Any]:
    """A backfill's key: its job's partition of the runs table, sort key ``backfill#<id>``."""
    return dump({"job_id": job_id, "run_id": BACKFILL_PREFIX + backfill_id})


#: A backfill's counters: its runs ended, and ended in each status (``ended_SUCCEEDED``, ...).
ENDED = "ended"
ENDED_IN = "ended_"


def backfill_item(backfill: Backfill) -> dict[str, Any]:
    """A backfill's item (no ``status``: the runs stream's filter never lets it through).
    What changes is kept apart from the rest: its state, when it ended, its counters."""
    return {
        "job_id": backfill.job_id,
        "run_id": BACKFILL_PREFIX + backfill.id,
        "owner": backfill.owner,
        "backfill": backfill.model_dump_json(
            exclude={"state", "finished_at", "ended", "runs"}
            | ({"parameters"} if backfill.parameters is None else set())
        ),
        "state": backfill.state.value,
        "finished_at": instant(backfill.finished_at),
        "expires_at": int(backfill.created_at.timestamp()) + r.RUN_RETENTION_SECONDS,
        ENDED: backfill.ended,
        **{ENDED_IN + status: count for status, count in backfill.runs.items()},
    }


def backfill_from_item(item: Mapping[str, Any]) -> Backfill:
    data = load(item)
    counts = {k.removeprefix(ENDED_IN): int(v) for k, v in data.items() if k.startswith(ENDED_IN)}
    return Backfill.model_validate(
        {
            **json.loads(data["backfill"]),
            "state": data["state"],
            "finished_at": data.get("finished_at"),
            "ended": int(data[ENDED]) if ENDED in data else None,
            "runs": dict(sorted(counts.items())),
        }
    )


# --- silence ----------------------------------------------------------------------------------


def fixed_instant(value: datetime) -> str:
    """An instant as text that sorts in time order (ISO 8601 in UTC, milliseconds always):
    what an expectation's instants are compared and indexed as."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def expectation_key(job_id: str) -> dict[str, Any]:
    """A job's expectation item: in the jobs table, with no ``owner`` nor ``created_at`` (the
    owner index never holds it); ``silent_owner`` and ``silent_since`` only while it is silent
    (the silent index)."""
    return dump({"job_id": keys.expect_key(job_id)})


def expectation_from_item(item: Mapping[str, Any]) -> Expectation:
    data = load(item)
    return Expectation(
        job_id=str(data["job_id"]).removeprefix(keys.EXPECT),
        within=int(data["within"]),
        since=data["since"],
        last_success_at=data.get("last_success_at"),
        silent_since=data.get("silent_since"),
        owner=data.get("silent_owner", ""),
    )


def silence_event_item(event: SilenceEvent, now: datetime) -> dict[str, Any]:
    """A silence's record in its job's partition of the runs table (its ``status``, SILENT or
    RECOVERED, lets it through the notifier's stream filter as it is written)."""
    return {
        "job_id": event.job_id,
        "run_id": event.key,
        "owner": event.owner,
        "status": event.status.value,
        "within": event.within,
        "silent_since": format_instant(event.silent_since),
        "last_success_at": instant(event.last_success_at),
        "recovered_at": instant(event.recovered_at),
        "recovered_by": event.run_id,
        "expires_at": int(now.timestamp()) + r.RUN_RETENTION_SECONDS,
    }


def silence_event_from_item(item: Mapping[str, Any]) -> SilenceEvent:
    data = load(item)
    return SilenceEvent(
        job_id=data["job_id"],
        owner=data["owner"],
        status=data["status"],
        within=int(data["within"]),
        silent_since=data["silent_since"],
        last_success_at=data.get("last_success_at"),
        recovered_at=data.get("recovered_at"),
        run_id=data.get("recovered_by"),
        notifications={
            k.removeprefix(NOTIFIED): v for k, v in data.items() if k.startswith(NOTIFIED)
        },
    )


# --- an owner's usage -------------------------------------------------------------------------

#: The usage item's attributes: the ids of the owner's RUNNING backfills of each job
#: (``running#<job id>``, a string set), its re-runs' runs not ended, its version.
RUNNING = "running#"
RERUNS = "reruns"
VERSION = "version"


def usage_key(owner: str) -> dict[str, Any]:
    """An owner's usage item: in the jobs table, with no ``owner`` attribute (the owner index
    never holds it)."""
    return dump({"job_id": keys.usage_key(owner)})


def usage_from_item(item: Mapping[str, Any] | None) -> Usage:
    """An owner's usage as its item keeps it (none yet: nothing held, version 0)."""
    data = load(item or {})
    return Usage(
        running={
            k.removeprefix(RUNNING): frozenset(v) for k, v in data.items() if k.startswith(RUNNING)
        },
        reruns=int(data.get(RERUNS, 0)),
        version=int(data.get(VERSION, 0)),
    )


# --- audit entries ----------------------------------------------------------------------------


def audit_item(entry: AuditEntry) -> dict[str, Any]:
    """An audit entry's item (the audit table): keyed by its job and ``entry`` (its instant to
    the millisecond, then its request id: time order); its changes and detail as JSON text;
    kept as long as a run (RUN_RETENTION_SECONDS), its job gone or not."""
    return {
        "job_id": entry.job_id,
        "entry": entry.key,
        "owner": entry.owner,
        "at": format_instant(entry.at),
        "request_id": entry.request_id,
        "action": entry.action.value,
        "by": entry.by,
        "by_name": entry.by_name,
        "source": entry.source.value,
        "changes": json.dumps(
            [c.model_dump(mode="json") for c in entry.changes],
            separators=(",", ":"),
            ensure_ascii=False,
        ),
        "detail": (
            json.dumps(entry.detail, separators=(",", ":"), ensure_ascii=False)
            if entry.detail
            else None
        ),
        "expires_at": int(entry.at.timestamp()) + r.RUN_RETENTION_SECONDS,
    }


def audit_from_item(item: Mapping[str, Any]) -> AuditEntry:
    data = load(item)
    return AuditEntry.model_validate(
        {
            "job_id": data["job_id"],
            "owner": data["owner"],
            "at": data["at"],
            "request_id": data["request_id"],
            "action": data["action"],
            "by": data["by"],
            "by_name": data.get("by_name"),
            "source": data["source"],
            "changes": json.loads(data["changes"]),
            "detail": json.loads(data["detail"]) if "detail" in data else {},
        }
    )
