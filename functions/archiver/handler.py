"""Archiver: the runs table's stream in long batches (filtered to the writes of ended runs:
see chronoq.aws.fanout), each batch kept in the archive as one object per owner and day
(chronoq.usecases.archive; the layout is chronoq.domain.archive's); and the audit table's
stream the same way (filtered to the entries added), as the owners' audit objects.

A record whose object could not be written (or that cannot be read) is reported as a partial
batch failure: the mapping hands the batch over again from the first of them, and writes the
same objects again under the same names. After its retries, a record goes to the archiver's
dead-letter queue (docs/runbook.md: ArchiverDeadLetters)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq import resources as r
from chronoq.aws.codecs import audit_from_item, load, run_from_item
from chronoq.domain.archive import Archived, ArchivedEntry, version
from chronoq.domain.runs import TERMINAL_STATUSES
from chronoq.origin import refuse_client_context
from chronoq.settings import ArchiverSettings
from chronoq.settings import load as load_settings

logger = Logger(service="chronoq-archiver")
archiver = compose.archiver(load_settings(ArchiverSettings))
_FINAL = frozenset(s.value for s in TERMINAL_STATUSES)


def archived(record: dict[str, Any]) -> Archived | ArchivedEntry | None:
    """The version of an ended run a record writes, or the audit entry it adds (None: a
    record of anything else)."""
    change = record.get("dynamodb", {})
    image = change.get("NewImage")
    if image and r.AUDIT_TABLE.sort_key in image:  # (the audit table's stream)
        if record.get("eventName") != "INSERT":
            return None
        return ArchivedEntry(
            version=version(str(change["SequenceNumber"])), entry=audit_from_item(image)
        )
    if not image or image.get("status", {}).get("S") not in _FINAL:
        return None
    kept = load({k: v for k, v in image.items() if k in ("logs", "log_objects")})
    return Archived(
        version=version(str(change["SequenceNumber"])),
        run=run_from_item(image),
        logs=tuple(kept.get("logs", ())),
        log_objects=tuple(kept.get("log_objects", ())),
    )


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not its event source
    batch: list[Archived | ArchivedEntry] = []
    unreadable: list[str] = []
    sequence: dict[str, str] = {}
    for record in event.get("Records") or []:
        number = str(record.get("dynamodb", {}).get("SequenceNumber", ""))
        try:
            found = archived(record)
        except Exception:
            logger.exception("a stream record could not be read", extra={"sequence": number})
            unreadable.append(number)
            continue
        if found is not None:
            batch.append(found)
            sequence[found.version] = number
    done = archiver.archive_batch(batch)
    logger.info(
        "archived",
        extra={"versions": len(batch), "objects": len(done.written), "failed": len(done.failed)},
    )
    failed = sorted({sequence[v] for v in done.failed} | set(unreadable), key=lambda n: n.zfill(40))
    return {"batchItemFailures": [{"itemIdentifier": number} for number in failed]}
