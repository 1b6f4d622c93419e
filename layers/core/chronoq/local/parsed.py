"""State machine definitions as moto's ASL parser makes them, kept between starts.

Parsing chronoq's two definitions is about a second of CPU, the largest part of starting
chronoq local. The parsed program (what executions run; not the parse tree, which nothing on
chronoq's path reads) is kept in the user's cache directory, named by what it depends on: the
definition, moto's version and Python's. It is read back only from a directory that this
user owns and no one else may enter (a program read back is code this process runs); any
other case, or a file that cannot be read, parses again."""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The cache directory's parent when XDG_CACHE_HOME is not set: ~/.cache.
CACHE_ENV = "XDG_CACHE_HOME"


def cache_dir() -> Path | None:
    """chronoq's directory of parsed definitions (made if need be), or None when it cannot be
    made or someone else could write in it."""
    base = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache")
    path = Path(base) / "chronoq" / "asl"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = path.stat()
    except OSError:
        return None
    if found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return path


def _name(definition: str) -> str:
    import moto

    key = "\0".join((moto.__version__, sys.version, definition))
    return hashlib.sha256(key.encode()).hexdigest() + ".pickle"


def program(definition: str, parse: Callable[[str], tuple[Any, Any]]) -> tuple[Any, Any]:
    """``parse(definition)``, its program read back from the cache when it is there (with no
    parse tree), else parsed and kept."""
    where = cache_dir()
    if where is None:
        return parse(definition)
    path = where / _name(definition)
    try:
        if path.stat().st_uid == os.getuid():
            # written by this user, in a directory only they may write in (see above)
            return pickle.loads(path.read_bytes()), None  # noqa: S301
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        pass
    parsed = parse(definition)
    try:
        data = pickle.dumps(parsed[0])
        with tempfile.NamedTemporaryFile(dir=where, delete=False) as out:
            out.write(data)
        os.replace(out.name, path)  # whole, or not at all
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        pass
    return parsed
