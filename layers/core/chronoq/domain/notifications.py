"""Notifications of finished runs and silent jobs: who hears of them, what they say and how
webhooks are signed. Pure.

A webhook request carries ``X-Chronoq-Signature: t=<unix seconds>,v1=<hex>``, where ``<hex>``
is HMAC-SHA256 over ``"<t>.<body>"`` keyed with the owner's signing secret
(``GET /notifications/secret``). Receivers recompute it, compare in constant time and refuse
old timestamps (replays); ``verify`` does all three.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

from chronoq.domain.jobs import Job
from chronoq.domain.runs import TERMINAL_STATUSES, Run, RunStatus
from chronoq.domain.silence import SilenceEvent, SilenceStatus
from chronoq.domain.time import format_instant

#: Signatures older than this are refused by ``verify`` (replay protection).
DEFAULT_TOLERANCE_SECONDS = 300


def signing_secret(master: str, owner: str) -> str:
    """The owner's webhook signing secret, derived from the deployment's master secret."""
    return hmac.new(
        master.encode(), f"chronoq-webhook:{owner}".encode(), hashlib.sha256
    ).hexdigest()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(
    secret: str,
    header: str,
    body: bytes,
    now: float,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """Is ``header`` a valid, recent signature of ``body``?"""
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (ValueError, KeyError):
        return False
    if abs(now - timestamp) > tolerance_seconds:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)


def has_just_finished(old_status: str | None, new_status: str | None) -> bool:
    """Does this change of a run record end the run? (Later changes of an ended run, such as
    a note of how its notifications went, do not.)"""
    return (
        new_status in TERMINAL_STATUSES
        and old_status != new_status
        and old_status not in TERMINAL_STATUSES
    )


def topic_statuses(value: str | Iterable[str]) -> frozenset[RunStatus]:
    """The statuses a deployment publishes to its SNS topic, as it names them (comma-separated
    text, or a list): at least one, each a final status (in any case). Anything else raises
    ValueError, naming the statuses allowed."""
    names = value.split(",") if isinstance(value, str) else list(value)
    wanted = [name.strip().upper() for name in names if name.strip()]
    final = sorted(s.value for s in TERMINAL_STATUSES)
    unknown = [name for name in wanted if name not in final]
    if unknown or not wanted:
        problem = f"not a final status: {', '.join(unknown)}" if unknown else "no status named"
        raise ValueError(f"{problem} (final statuses: {', '.join(final)})")
    return frozenset(RunStatus(name) for name in wanted)


def wants(job: Job | None, status: RunStatus) -> bool:
    """Did the job's owner ask to hear of runs ending so?"""
    return bool(job and job.notify and status in job.notify.on)


def message(run: Run, job: Job | None) -> dict[str, Any]:
    """The notification's JSON document (SNS message and webhook body alike)."""
    return {
        "type": "run.finished",
        "job_id": run.job_id,
        "job_name": job.name if job else None,
        "run_id": run.id,
        "owner": run.owner,
        "status": run.status.value,
        "trigger": run.trigger.value,
        "scheduled_at": format_instant(run.scheduled_at),
        "started_at": format_instant(run.started_at) if run.started_at else None,
        "finished_at": format_instant(run.finished_at) if run.finished_at else None,
        "attempts": len(run.attempts),
        "error": run.error,
        "reason": run.reason,
    }


def silence_message(event: SilenceEvent, job: Job | None) -> dict[str, Any]:
    """The notification of a silence (``job.silent``) or of its end (``job.recovered``): what
    the SNS message and the webhook body say (``status`` SILENT or RECOVERED, as the topic's
    message attribute says too)."""
    return {
        "type": "job.silent" if event.status is SilenceStatus.SILENT else "job.recovered",
        "job_id": event.job_id,
        "job_name": job.name if job else None,
        "owner": event.owner,
        "status": event.status.value,
        "success_within_seconds": event.within,
        "last_success_at": _instant(event.last_success_at),
        "silent_since": format_instant(event.silent_since),
        "recovered_at": _instant(event.recovered_at),
        "run_id": event.run_id,
    }


def _instant(value: Any) -> str | None:
    return format_instant(value) if value is not None else None


def body(document: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def email_text(document: dict[str, Any]) -> tuple[str, str]:
    """Subject and plain-text body of the notification e-mail."""
    name = document["job_name"] or document["job_id"]
    subject = f"[chronoq] {name}: run {document['status']}"
    if document["type"] != "run.finished":  # (a silence, or its end: the job's, no run's)
        subject = f"[chronoq] {name}: {document['status']}"
    lines = [f"{key}: {value}" for key, value in document.items() if value is not None]
    return subject, "\n".join(lines) + "\n"
