"""A backup of chronoq local's data directory, taken while it runs, and its restore.

``backup`` copies each of the engine's databases with SQLite's online backup (a consistent
copy of each, whatever chronoq local writes meanwhile), with the secrets the data directory
keeps (the token secret, the webhook signing secret, the embedded AWS's credentials: without
them a restored system would refuse every token it had issued), into one tar file.
``restore`` puts them back into a data directory whose chronoq local is stopped; the engine
files it replaces are kept beside them (``engine.before-restore-<time>``), never deleted."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chronoq.local import tokens
from chronoq.local.engine.services import FILES

#: The engine's folder in the data directory.
ENGINE_DIR = "engine"
#: Held by a running chronoq local (see ``running``): a restore refuses while it is.
LOCK_FILE = ".lock"
SECRETS = (tokens.SECRET_FILE, tokens.SIGNING_SECRET_FILE, tokens.AWS_CREDENTIALS_FILE)


class BackupError(Exception):
    """A backup or a restore that cannot be done: the message says why."""


@contextmanager
def running(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's engine as chronoq local's while the block runs (a second
    chronoq local, or a restore, on the same directory is refused meanwhile)."""
    folder = data_dir / ENGINE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BackupError(
                f"another chronoq local uses {data_dir}: stop it first, or give another --data-dir"
            ) from None
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def backup(data_dir: Path, target: Path) -> list[str]:
    """Write the backup of ``data_dir`` to ``target`` (a tar file); the names it holds."""
    folder = data_dir / ENGINE_DIR
    databases = [folder / name for name in FILES if (folder / name).exists()]
    if not databases:
        raise BackupError(f"{data_dir} holds no data of chronoq local's engine")
    names = []
    with tempfile.TemporaryDirectory(prefix="chronoq-backup-") as scratch:
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(partial, "w") as archive:
            for database in databases:
                copy = Path(scratch) / database.name
                source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
                destination = sqlite3.connect(copy)
                try:
                    source.backup(destination)
                finally:
                    destination.close()
                    source.close()
                archive.add(copy, arcname=f"{ENGINE_DIR}/{database.name}")
                names.append(f"{ENGINE_DIR}/{database.name}")
            for secret in SECRETS:
                if (data_dir / secret).exists():
                    archive.add(data_dir / secret, arcname=secret)
                    names.append(secret)
        os.chmod(partial, 0o600)  # (it holds the secrets)
        partial.replace(target)
    return names


def restore(source: Path, data_dir: Path) -> list[str]:
    """Put the backup ``source`` into ``data_dir`` (chronoq local stopped); the names
    restored."""
    with tarfile.open(source) as archive:
        members = archive.getmembers()
        allowed = {f"{ENGINE_DIR}/{name}" for name in FILES} | set(SECRETS)
        strange = [m.name for m in members if m.name not in allowed or not m.isfile()]
        if strange:
            raise BackupError(f"{source} is not a backup of chronoq local: it holds {strange}")
        if not any(m.name.startswith(f"{ENGINE_DIR}/") for m in members):
            raise BackupError(f"{source} holds no database of chronoq local's engine")
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with running(data_dir):
            folder = data_dir / ENGINE_DIR
            kept = [p for p in folder.iterdir() if p.name != LOCK_FILE]
            if kept:
                aside = data_dir / f"{ENGINE_DIR}.before-restore-{time.strftime('%Y%m%dT%H%M%S')}"
                aside.mkdir()
                for path in kept:
                    shutil.move(path, aside / path.name)
            for member in members:
                data = archive.extractfile(member)
                assert data is not None
                path = data_dir / member.name
                with open(path, "wb") as out:
                    shutil.copyfileobj(data, out)
                os.chmod(path, 0o600)
    return [m.name for m in members]
