"""Where a running chronoq local answers: ``local.json`` in its data directory, written once
its ports listen (``{"url", "aws_url", "pid"}``, mode 0600) and removed when it stops cleanly;
``chronoq login --local`` reads it, and checks that the process still answers there, so that a
profile names the port chronoq local really uses (``--port``, ``make run PORT=...``)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

RUNNING_FILE = "local.json"
#: A route every chronoq local answers without a token (the console's settings).
PROBE_PATH = "/console/config.json"
#: How long ``find`` waits for the process to answer.
PROBE_SECONDS = 3.0


@dataclass(frozen=True)
class Running:
    url: str
    aws_url: str | None
    pid: int


class NotRunning(Exception):
    """No chronoq local answers for this data directory (the message says why)."""


def reachable_url(host: str, port: int) -> str:
    """The URL a client on this machine reaches a server bound to ``host:port`` at: loopback
    for a wildcard address (``0.0.0.0``, ``::``)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{shown}:{port}"


def announce(data_dir: Path, running: Running) -> Path:
    """Write ``data_dir/local.json`` for ``running`` (replacing one left by a process that did
    not stop cleanly)."""
    path = data_dir / RUNNING_FILE
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(f".{RUNNING_FILE}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump({"url": running.url, "aws_url": running.aws_url, "pid": running.pid}, file)
    os.replace(partial, path)
    return path


def read(data_dir: Path) -> Running | None:
    """What ``local.json`` says (None: there is none, or it cannot be read)."""
    try:
        data = json.loads((data_dir / RUNNING_FILE).read_text())
        return Running(str(data["url"]), data.get("aws_url"), int(data["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def withdraw(data_dir: Path, running: Running) -> None:
    """Remove ``local.json`` if it still names ``running`` (not one another start wrote)."""
    if read(data_dir) == running:
        with contextlib.suppress(FileNotFoundError):
            (data_dir / RUNNING_FILE).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's process)
        return True
    return True


def _answers(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url + PROBE_PATH, timeout=timeout):  # noqa: S310 - http(s) only
            return True
    except urllib.error.HTTPError:
        return True  # (it answers, if not with the console)
    except (OSError, ValueError):
        return False


def find(data_dir: Path, timeout: float = PROBE_SECONDS) -> Running:
    """The chronoq local running on ``data_dir``: its ``local.json``, its process alive and
    answering at its URL; else NotRunning, saying why."""
    running = read(data_dir)
    if running is None:
        raise NotRunning(
            f"no chronoq local is running on {data_dir} (it writes {RUNNING_FILE} there while it"
            " runs)"
        )
    if not _alive(running.pid):
        raise NotRunning(
            f"the chronoq local that wrote {data_dir / RUNNING_FILE} (pid {running.pid},"
            f" {running.url}) is no longer running"
        )
    if not running.url.startswith(("http://", "https://")) or not _answers(running.url, timeout):
        raise NotRunning(
            f"chronoq local (pid {running.pid}) does not answer at {running.url}, the address"
            f" {data_dir / RUNNING_FILE} names"
        )
    return running


def machine_addresses(host: str) -> tuple[str, ...]:
    """The addresses besides loopback that a server bound to ``host`` answers on: ``host``
    itself, or for a wildcard (``0.0.0.0``, ``::``) those of this machine's name."""
    try:
        bound = ipaddress.ip_address(host)
    except ValueError:
        bound = None
    if bound is not None and bound.is_loopback:
        return ()
    if bound is not None and not bound.is_unspecified:
        return (str(bound),)
    names = [host] if bound is None else [socket.gethostname(), socket.getfqdn()]
    found: set[str] = set()
    for name in names:
        try:
            infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except OSError:
            continue
        found.update(str(info[4][0]).split("%", 1)[0] for info in infos)
    return tuple(sorted(a for a in found if not ipaddress.ip_address(a).is_loopback))
