"""chronoq local keeps its tables in its data directory: every kind of write survives a kill
(no clean stop) and a clean stop; items past their TTL are dropped, as DynamoDB expires them;
and a restart gives back what the stop lost (persist.recover)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chronoq import resources as r
from chronoq.aws.queues import SqsQueues
from chronoq.aws.store import DynamoStore
from chronoq.domain import ids
from chronoq.domain import limits as lim
from chronoq.local import persist
from chronoq.local.aws import LocalAWS

JOBS = "chronoq-local-jobs"
RUNS = "chronoq-local-runs"


@contextmanager
def local_aws(state_dir: Path, *, kill: bool = False) -> Iterator[LocalAWS]:
    """LocalAWS keeping its tables in ``state_dir``; ``kill``: ended without its last
    snapshot, as by ``kill -9`` (only what the journal holds is left)."""
    saved = dict(os.environ)
    aws = LocalAWS(shards=2, state_dir=state_dir, signing_secret="s" * 64).start()
    try:
        yield aws
    finally:
        if kill and aws.state is not None:
            aws.state._journal_fd = None  # (the journal is closed with the process)
            aws.state = None
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


def _items(aws: LocalAWS, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = aws.client("dynamodb").scan(TableName=table)["Items"]
    return sorted(items, key=lambda i: sorted(i.items()).__repr__())


def _job(job_id: str, **extra: Any) -> dict[str, Any]:
    return {"job_id": {"S": job_id}, **extra}


def _write_every_kind(aws: LocalAWS) -> None:
    db = aws.client("dynamodb")
    db.put_item(TableName=JOBS, Item=_job("put", n={"N": "1"}))
    db.put_item(TableName=JOBS, Item=_job("updated", n={"N": "1"}))
    db.update_item(
        TableName=JOBS,
        Key=_job("updated"),
        UpdateExpression="SET n = n + :one, tags = :tags",
        ExpressionAttributeValues={":one": {"N": "1"}, ":tags": {"SS": ["a", "b"]}},
    )
    db.put_item(TableName=JOBS, Item=_job("deleted"))
    db.delete_item(TableName=JOBS, Key=_job("deleted"))
    db.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": JOBS, "Item": _job("in-a-transaction")}},
            {
                "Update": {
                    "TableName": JOBS,
                    "Key": _job("put"),
                    "UpdateExpression": "SET m = :m",
                    "ExpressionAttributeValues": {":m": {"S": "x"}},
                }
            },
        ]
    )
    # a transaction that fails changes nothing, and leaves nothing in the journal
    with suppress(db.exceptions.TransactionCanceledException):
        db.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": JOBS, "Item": _job("never")}},
                {
                    "ConditionCheck": {
                        "TableName": JOBS,
                        "Key": _job("absent"),
                        "ConditionExpression": "attribute_exists(job_id)",
                    }
                },
            ]
        )
    db.batch_write_item(
        RequestItems={
            RUNS: [
                {
                    "PutRequest": {
                        "Item": {
                            "job_id": {"S": "j"},
                            "run_id": {"S": f"r{i}"},
                            "b": {"B": b"\x00"},
                        }
                    }
                }
                for i in range(3)
            ]
        }
    )
    expired = int(time.time()) - 10
    db.put_item(
        TableName=RUNS,
        Item={"job_id": {"S": "j"}, "run_id": {"S": "old"}, "expires_at": {"N": str(expired)}},
    )


def test_given_writes_of_every_kind_when_killed_then_a_restart_has_them_all(
    tmp_path: Path,
) -> None:
    with local_aws(tmp_path, kill=True) as aws:
        _write_every_kind(aws)
        jobs, runs = _items(aws, JOBS), _items(aws, RUNS)
        assert (tmp_path / persist.JOURNAL_FILE).stat().st_size != 0

    with local_aws(tmp_path) as again:
        assert again.restored
        assert _items(again, JOBS) == jobs
        assert _items(again, RUNS) == [i for i in runs if i["run_id"]["S"] != "old"]


def test_given_a_clean_stop_when_started_again_then_everything_is_there_and_the_journal_empty(
    tmp_path: Path,
) -> None:
    with local_aws(tmp_path) as aws:
        assert not aws.restored
        _write_every_kind(aws)
        jobs = _items(aws, JOBS)
    assert (tmp_path / persist.JOURNAL_FILE).stat().st_size == 0

    with local_aws(tmp_path) as again:
        assert again.restored
        assert _items(again, JOBS) == jobs
        again.client("dynamodb").delete_item(TableName=JOBS, Key=_job("put"))

    with local_aws(tmp_path, kill=True) as third:
        assert {i["job_id"]["S"] for i in _items(third, JOBS)} == {
            "updated",
            "in-a-transaction",
        }


def test_given_runs_in_flight_when_recovered_then_running_ones_fail_and_unstarted_ones_are_sent(
    tmp_path: Path,
) -> None:
    with local_aws(tmp_path) as aws:
        db = aws.client("dynamodb")
        at = datetime.now(UTC).replace(microsecond=0)
        for run_id, status in (("a", "RUNNING"), ("b", "QUEUED"), ("c", "SUCCEEDED")):
            db.put_item(
                TableName=RUNS,
                Item={
                    "job_id": {"S": "job"},
                    "run_id": {"S": run_id},
                    "owner": {"S": "alice"},
                    "status": {"S": status},
                    "priority": {"S": "normal"},
                    "trigger": {"S": "manual"},
                    "generation": {"N": "1"},
                    "scheduled_at": {"S": at.isoformat()},
                },
            )
        env = aws.env
        store = DynamoStore(db, env[r.ENV_JOBS_TABLE], RUNS, env[r.ENV_SCHEDULE_TABLE])
        for shard in range(2):
            store.close_minute(shard, ids.minute_of(at) + timedelta(minutes=1))

        counts = persist.recover(
            db, store, SqsQueues(aws.client("sqs"), aws.queue_urls), RUNS, 2, at, at
        )

        assert counts == {"resent": 1, "interrupted": 1}
        assert store.get_run("job", "a").status.value == "FAILED"  # type: ignore[union-attr]
        assert store.get_run("job", "a").reason == persist.INTERRUPTED  # type: ignore[union-attr]
        messages = aws.client("sqs").receive_message(
            QueueUrl=aws.queue_urls["normal"], MaxNumberOfMessages=10
        )["Messages"]
        assert ['"run_id":"b"' in m["Body"] for m in messages] == [True]
        since = ids.minute_of(at) - timedelta(seconds=lim.DEFAULT_START_DEADLINE_SECONDS)
        assert store.checkpoints(2) == {
            0: since - timedelta(minutes=1),
            1: since - timedelta(minutes=1),
        }


def test_given_the_state_the_moto_engine_kept_when_the_engine_first_starts_then_its_items_move_there(
    tmp_path: Path,
) -> None:
    from chronoq.local.backup import ENGINE_DIR
    from chronoq.local.system import LocalSystem

    with local_aws(tmp_path / persist.STATE_DIR, kill=True) as aws:
        _write_every_kind(aws)
        jobs = _items(aws, JOBS)
        runs = [i for i in _items(aws, RUNS) if i["run_id"]["S"] != "old"]  # (expired)

    saved = dict(os.environ)
    system = LocalSystem(port=0, data_dir=tmp_path, aws_port=None, heartbeat=False).start()
    try:
        assert _items(system.aws, JOBS) == jobs
        assert _items(system.aws, RUNS) == runs
    finally:
        system.stop()
        os.environ.clear()
        os.environ.update(saved)
    assert not (tmp_path / persist.STATE_DIR).exists()
    assert (tmp_path / f"{persist.STATE_DIR}.migrated" / persist.SNAPSHOT_FILE).exists()
    assert (tmp_path / ENGINE_DIR / "tables.db").exists()
