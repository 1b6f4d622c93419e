"""moto is loaded only when something needs it (the embedded AWS starting, a patch being
installed): the command line, chronoq local's engine, its backups and the patches' own modules
(chronoq.local.emulation) import without it, in a process of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import chronoq

#: Where the chronoq under test is imported from, for the child process to import the same.
SOURCES = str(Path(chronoq.__file__).resolve().parents[1])

#: Imports every module of the command line, the engine and the patches, and the backup
#: module; runs ``chronoq --help`` and ``chronoq local --help``; prints what it imported,
#: what the commands answered, and every moto module loaded.
IMPORT_EVERYTHING = """
import contextlib, importlib, io, json, pkgutil, sys

imported = []
for name in ("chronoq.cli", "chronoq.local.engine", "chronoq.local.emulation"):
    package = importlib.import_module(name)
    imported.append(name)
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        imported.append(importlib.import_module(info.name).__name__)
imported.append(importlib.import_module("chronoq.local.backup").__name__)

from chronoq.cli.main import main

codes = []
for args in (["--help"], ["local", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()):
        codes.append(main(args))
moto = sorted(m for m in sys.modules if m == "moto" or m.startswith("moto."))
print(json.dumps({"imported": imported, "codes": codes, "moto": moto}))
"""


def test_given_a_fresh_process_when_the_cli_engine_backup_and_emulation_modules_are_imported_then_moto_is_not_loaded() -> (
    None
):
    path = os.pathsep.join(p for p in (SOURCES, os.environ.get("PYTHONPATH", "")) if p)

    child = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert child.returncode == 0, child.stderr
    found = json.loads(child.stdout.splitlines()[-1])
    assert {
        "chronoq.cli.main",
        "chronoq.local.backup",
        "chronoq.local.engine.services",
        "chronoq.local.engine.tasks",
        "chronoq.local.emulation.containers",
        "chronoq.local.emulation.ecs",
        "chronoq.local.emulation.moto_version",
        "chronoq.local.emulation.service_calls",
        "chronoq.local.emulation.sqs",
        "chronoq.local.emulation.state",
        "chronoq.local.emulation.stepfunctions",
    } <= set(found["imported"])
    assert found["codes"] == [0, 0]
    assert found["moto"] == []
