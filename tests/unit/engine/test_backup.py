"""``chronoq local backup FILE`` and ``restore``: an online copy of the engine's databases and
the data directory's secrets, and its return into a stopped chronoq local's directory."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from chronoq import resources as r
from chronoq.cli.main import main
from chronoq.local import tokens
from chronoq.local.backup import ENGINE_DIR, BackupError, backup, restore, running
from chronoq.local.engine.queues import SqliteQueues
from chronoq.local.engine.tables import SqliteTables

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
ITEM = {"job_id": {"S": "job_kept"}, "name": {"S": "kept"}}


def _engine(data_dir: Path) -> tuple[SqliteTables, SqliteQueues]:
    folder = data_dir / ENGINE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return (
        SqliteTables(folder / "tables.db", r.TABLES, clock=lambda: NOW),
        SqliteQueues(folder / "queues.db", lambda: NOW),
    )


def test_given_a_running_engine_when_backed_up_and_restored_elsewhere_then_its_data_and_secrets_are_there(
    tmp_path: Path,
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    tables, queues = _engine(source)  # (kept open and writing: an online backup)
    tables.put_item(TableName=r.JOBS_TABLE.id, Item=ITEM)
    url = queues.create_queue(QueueName="runs")["QueueUrl"]
    queues.send_message(QueueUrl=url, MessageBody="a run")
    secret = tokens.secret(source)

    names = backup(source, tmp_path / "backup.tar")
    tables.put_item(TableName=r.JOBS_TABLE.id, Item={"job_id": {"S": "job_after"}})
    restore(tmp_path / "backup.tar", target)

    assert f"{ENGINE_DIR}/tables.db" in names
    again, queued = _engine(target)
    assert again.get_item(TableName=r.JOBS_TABLE.id, Key={"job_id": ITEM["job_id"]})["Item"] == ITEM
    assert "Item" not in again.get_item(
        TableName=r.JOBS_TABLE.id, Key={"job_id": {"S": "job_after"}}
    )
    assert queued.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "a run"
    assert tokens.secret(target) == secret
    assert (tmp_path / "backup.tar").stat().st_mode & 0o077 == 0


def test_given_a_running_chronoq_local_when_restored_into_its_directory_then_it_is_refused(
    tmp_path: Path,
) -> None:
    tables, _ = _engine(tmp_path / "source")
    tables.close()
    backup(tmp_path / "source", tmp_path / "backup.tar")

    with running(tmp_path / "live"), pytest.raises(BackupError, match="stop it first"):
        restore(tmp_path / "backup.tar", tmp_path / "live")


def test_given_a_directory_with_data_when_restored_then_what_it_held_is_kept_aside(
    tmp_path: Path,
) -> None:
    tables, _ = _engine(tmp_path / "source")
    tables.put_item(TableName=r.JOBS_TABLE.id, Item=ITEM)
    tables.close()
    backup(tmp_path / "source", tmp_path / "backup.tar")
    before, _ = _engine(tmp_path / "live")
    before.put_item(TableName=r.JOBS_TABLE.id, Item={"job_id": {"S": "job_before"}})
    before.close()

    restore(tmp_path / "backup.tar", tmp_path / "live")

    (aside,) = tmp_path.joinpath("live").glob(f"{ENGINE_DIR}.before-restore-*")
    kept = SqliteTables(aside / "tables.db", r.TABLES)
    assert "Item" in kept.get_item(TableName=r.JOBS_TABLE.id, Key={"job_id": {"S": "job_before"}})


def test_given_a_tar_that_is_not_a_backup_when_restored_then_nothing_is_written(
    tmp_path: Path,
) -> None:
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as archive:
        data = b"x"
        info = tarfile.TarInfo("../outside")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))

    with pytest.raises(BackupError, match="not a backup"):
        restore(evil, tmp_path / "live")

    assert not (tmp_path / "outside").exists()
    assert not (tmp_path / "live").exists()


def test_given_the_command_line_when_backing_up_and_restoring_then_it_says_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tables, _ = _engine(tmp_path / "source")
    tables.close()
    file = str(tmp_path / "backup.tar")

    assert main(["local", "backup", file, "--data-dir", str(tmp_path / "source")]) == 0
    assert main(["local", "restore", file, "--data-dir", str(tmp_path / "target")]) == 0
    assert main(["local", "backup", file, "--data-dir", str(tmp_path / "empty")]) == 1

    out, err = capsys.readouterr()
    assert f"backed up {ENGINE_DIR}/tables.db" in out
    assert "restored" in out
    assert "holds no data" in err
