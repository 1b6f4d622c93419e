"""SSM Parameter Store for chronoq's secrets, on disk: the values of owners' secrets
(chronoq.aws.secrets.SsmSecretValues) live in ``parameters.db`` (SQLite, WAL) beside the
tables, so that they survive a restart and a backup as the secrets' names and versions in the
jobs table do. The file is made readable and writable by its user only (mode 0600) before
SQLite first opens it; SQLite gives its WAL and shared-memory files the same mode.

It answers the calls chronoq makes (PutParameter, GetParameter with or without a ``:version``
selector, DeleteParameter, and GetParameters, which ECS makes for a task's ``secrets``), with
SSM's answers and SSM's errors (ClientErrors whose classes botocore builds from SSM's service
model, reachable as ``exceptions.ParameterNotFound`` as on a boto3 client). Each put is a new
version, counted from 1 per name; the last MAX_VERSIONS versions are kept, as SSM keeps them.
Values are kept as they were put: the file's mode is their protection here, where SSM
encrypts them with KMS (a SecureString read without decryption answers an opaque text)."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chronoq.local.engine.schema import Step, connect, statements

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]

#: The schema this code writes (one per step of STEPS: see chronoq.local.engine.schema).
SCHEMA_VERSION = 1
STEPS: tuple[Step, ...] = (
    statements(
        "CREATE TABLE parameters (name TEXT NOT NULL, version INTEGER NOT NULL, "
        "value TEXT NOT NULL, type TEXT NOT NULL, tier TEXT NOT NULL, written REAL NOT NULL, "
        "PRIMARY KEY (name, version))"
    ),
)
#: Versions kept per parameter: "Parameter Store retains the 100 most recently created
#: versions of a parameter. After this number of versions has been created, Parameter Store
#: deletes the oldest version when a new one is created" (SSM's API reference,
#: ParameterMaxVersionLimitExceeded; chronoq puts no labels, which would refuse the put).
MAX_VERSIONS = 100
#: A standard parameter's largest value (4 KB); a name's longest, and its characters.
MAX_VALUE_BYTES = 4096
MAX_NAME_LENGTH = 2048
_NAME = re.compile(r"^/?[A-Za-z0-9_.\-/]+$")
#: The most names one GetParameters takes.
MAX_NAMES = 10
TYPES = frozenset({"String", "StringList", "SecureString"})
#: The file's mode: its user only.
FILE_MODE = 0o600


@functools.cache
def ssm_errors() -> Any:
    """SSM's modeled errors (``ParameterNotFound``, ``ParameterVersionNotFound``, ...), as
    botocore makes a client's ``exceptions`` from the service model (loaded once, on the
    first use: a process that never meets a secret never reads the model)."""
    import botocore.session
    from botocore.errorfactory import ClientExceptionsFactory

    model = botocore.session.get_session().get_service_model("ssm")
    return ClientExceptionsFactory().create_client_exceptions(model)


class _Refused(Exception):
    """A request SSM refuses: becomes the ClientError of ``code`` for its operation."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def client_error(self, operation: str) -> Exception:
        response: Any = {
            "Error": {"Code": self.code, "Message": self.message},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        errors = ssm_errors()
        kind = getattr(errors, self.code, errors.ClientError)
        return kind(response, operation)  # type: ignore[no-any-return]


def _create_private(path: Path) -> None:
    """``path`` exists, readable and writable by its user only, before SQLite opens it (an
    existing file, a restored one say, is given that mode too)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


class LocalParameters:
    """An SSM client's put_parameter, get_parameter, get_parameters and delete_parameter, on
    disk (``path``; None: in memory)."""

    def __init__(
        self,
        path: Path | None,
        region: str,
        account: str,
        clock: Callable[[], datetime],
        observer: Observer | None = None,
    ) -> None:
        self._region = region
        self._account = account
        self._clock = clock
        self._observer = observer
        self._lock = threading.Lock()
        if path is not None:
            _create_private(path)
        self._db = connect(path, STEPS, f"{path or 'the parameters database'}")

    @property
    def exceptions(self) -> Any:
        return ssm_errors()

    def arn(self, name: str) -> str:
        """The ARN of the parameter ``name`` (SSM's: no slash added before a name that has
        one)."""
        separator = "" if name.startswith("/") else "/"
        return f"arn:aws:ssm:{self._region}:{self._account}:parameter{separator}{name}"

    # --- the calls ------------------------------------------------------------------------------

    def put_parameter(
        self,
        *,
        Name: str,
        Value: str,
        Type: str | None = None,
        Overwrite: bool = False,
        Tier: str | None = None,
        **request: Any,
    ) -> dict[str, Any]:
        seen = {"Name": Name}
        try:
            _check_name(Name)
            if len(Value.encode()) > MAX_VALUE_BYTES:
                raise _Refused(
                    "ValidationException",
                    "Standard tier parameters support a maximum parameter value of 4096"
                    " characters. To create a larger parameter value, upgrade the parameter to"
                    " use the advanced-parameter tier.",
                )
            if Type is not None and Type not in TYPES:
                raise _Refused(
                    "ValidationException",
                    f"1 validation error detected: Value '{Type}' at 'type' failed to satisfy"
                    " constraint: Member must satisfy enum value set: [SecureString,"
                    " StringList, String]",
                )
            with self._lock:
                latest = self._latest(Name)
                if latest is not None and not Overwrite:
                    raise _Refused("ParameterAlreadyExists", "The parameter already exists.")
                if latest is None and Type is None:
                    raise _Refused(
                        "ValidationException",
                        "A parameter type is required when you create a parameter.",
                    )
                version = 1 if latest is None else latest[0] + 1
                kind = Type or (latest[1] if latest else "String")
                tier = "Standard" if Tier in (None, "Standard", "Intelligent-Tiering") else Tier
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.execute(
                        "INSERT INTO parameters VALUES (?, ?, ?, ?, ?, ?)",
                        (Name, version, Value, kind, tier, self._clock().timestamp()),
                    )
                    self._db.execute(
                        "DELETE FROM parameters WHERE name = ? AND version <= ?",
                        (Name, version - MAX_VERSIONS),
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
        except _Refused as refused:
            self._observe("ssm:PutParameter", seen, {})
            raise refused.client_error("PutParameter") from None
        answer = {"Version": version, "Tier": tier}
        self._observe("ssm:PutParameter", seen, answer)
        return answer

    def get_parameter(self, *, Name: str, WithDecryption: bool = False) -> dict[str, Any]:
        seen = {"Name": Name}
        try:
            found = self._read(Name, WithDecryption)
        except _Refused as refused:
            self._observe("ssm:GetParameter", seen, {})
            raise refused.client_error("GetParameter") from None
        self._observe("ssm:GetParameter", seen, {"Version": found["Version"]})
        return {"Parameter": found}

    def get_parameters(self, *, Names: list[str], WithDecryption: bool = False) -> dict[str, Any]:
        seen = {"Names": list(Names)}
        if not Names or len(Names) > MAX_NAMES:
            self._observe("ssm:GetParameters", seen, {})
            raise _Refused(
                "ValidationException",
                "1 validation error detected: Value at 'names' failed to satisfy constraint:"
                f" Member must have length between 1 and {MAX_NAMES}.",
            ).client_error("GetParameters")
        parameters, invalid = [], []
        for name in dict.fromkeys(Names):  # (each name once, in order)
            try:
                parameters.append(self._read(name, WithDecryption))
            except _Refused:
                invalid.append(name)
        self._observe("ssm:GetParameters", seen, {"InvalidParameters": invalid})
        return {"Parameters": parameters, "InvalidParameters": invalid}

    def delete_parameter(self, *, Name: str) -> dict[str, Any]:
        seen = {"Name": Name}
        with self._lock:
            deleted = self._db.execute("DELETE FROM parameters WHERE name = ?", (Name,)).rowcount
        self._observe("ssm:DeleteParameter", seen, {})
        if not deleted:
            raise _Refused("ParameterNotFound", f"Parameter {Name} not found.").client_error(
                "DeleteParameter"
            )
        return {}

    # --- upkeep ---------------------------------------------------------------------------------

    def count(self) -> int:
        """The versions kept, of every parameter."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM parameters").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- inside ---------------------------------------------------------------------------------

    def _latest(self, name: str) -> tuple[int, str] | None:
        row = self._db.execute(
            "SELECT version, type FROM parameters WHERE name = ? ORDER BY version DESC LIMIT 1",
            (name,),
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _read(self, reference: str, decrypt: bool) -> dict[str, Any]:
        """The parameter a name or ARN names, at its ``:version`` if it says one (else its
        latest), as SSM describes it."""
        name, selector = _parsed(reference)
        with self._lock:
            if selector is None:
                row = self._db.execute(
                    "SELECT version, value, type, written FROM parameters WHERE name = ? "
                    "ORDER BY version DESC LIMIT 1",
                    (name,),
                ).fetchone()
            else:
                row = self._db.execute(
                    "SELECT version, value, type, written FROM parameters "
                    "WHERE name = ? AND version = ?",
                    (name, int(selector)),
                ).fetchone()
                if row is None and self._latest(name) is not None:
                    raise _Refused(
                        "ParameterVersionNotFound",
                        f"Systems Manager could not find version {selector} of {name}. Verify"
                        " the version and try again.",
                    )
        if row is None:
            raise _Refused("ParameterNotFound", f"Parameter {name} not found.")
        version, value, kind, written = row
        found: dict[str, Any] = {
            "Name": name,
            "Type": kind,
            "Value": value if decrypt or kind != "SecureString" else _ciphertext(name, version),
            "Version": int(version),
            "LastModifiedDate": datetime.fromtimestamp(written, UTC),
            "ARN": self.arn(name),
            "DataType": "text",
        }
        if selector is not None:
            found["Selector"] = f":{selector}"
        return found

    def _observe(self, operation: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        """(what the meter sees holds names and versions, never a value)"""
        if self._observer is not None:
            self._observer(operation, request, response)


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name) or "//" in name:
        raise _Refused(
            "ValidationException",
            'Parameter name: can\'t be prefixed with "aws" or "ssm" (case-insensitive). If'
            " formed as a path, it can consist of sub-paths divided by slash symbol; each"
            " sub-path can be formed as a mix of letters, numbers and the following 3 symbols"
            " .-_",
        )
    if "/" in name and not name.startswith("/"):
        raise _Refused(
            "ValidationException",
            "Parameter name must be a fully qualified name: it must begin with a forward slash"
            " (/) when it has one.",
        )


def _parsed(reference: str) -> tuple[str, str | None]:
    """(name, version selector or None) of a parameter's name or ARN, with ``:version`` or
    without. A selector that is not a version (a label) selects nothing here: chronoq puts
    no labels."""
    if reference.startswith("arn:"):
        reference = reference.split(":parameter", 1)[-1]
    name, colon, selector = reference.partition(":")
    if not colon:
        return name, None
    if not selector.isdigit():
        raise _Refused("ParameterNotFound", f"Parameter {reference} not found.")
    return name, selector


def _ciphertext(name: str, version: int) -> str:
    """What a SecureString answers when read without decryption: an opaque text (SSM answers
    the ciphertext; nothing of the value here)."""
    digest = hashlib.sha256(f"{name}:{version}".encode()).digest()
    return base64.b64encode(b"\x01\x02\x02\x00" + digest).decode()
