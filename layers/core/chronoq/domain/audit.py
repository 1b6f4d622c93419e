"""A job's audit trail: one entry per change a caller made to it (docs/api/audit.md).

An entry says who made the change (the token's subject and name), when, from what (the
API directly, the command line, the console, ``chronoq apply``: told by the request's
User-Agent), under which request id, what was done, and the fields it changed, before and
after. Entries are small: a diff of the fields changed, never the whole job; each value is
capped, and so is the number of fields; a value that looks like a credential (by the rules
of chronoq.domain.secrets that warn of plain credentials in a job) is masked before it is
kept. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from chronoq.domain import limits as lim
from chronoq.domain import secrets
from chronoq.domain.base import Model
from chronoq.domain.time import Instant


class Source(StrEnum):
    """What a change was made from (told by the request's User-Agent)."""

    API = "api"
    CLI = "cli"
    CONSOLE = "console"
    APPLY = "apply"


class Action(StrEnum):
    """What a change did to a job."""

    CREATE = "create"
    CHANGE = "change"
    PAUSE = "pause"
    RESUME = "resume"
    TRIGGER = "trigger"
    DELETE = "delete"
    BACKFILL = "backfill"
    CANCEL_BACKFILL = "cancel_backfill"
    RERUN = "rerun"
    #: An operator erased an owner's data (the entry names neither: see usecases.erasure).
    ERASE = "erase"


#: The User-Agent product of each of chronoq's own clients: ``chronoq-cli/<version>``, ...
AGENTS = {
    Source.CLI: "chronoq-cli",
    Source.APPLY: "chronoq-apply",
    Source.CONSOLE: "chronoq-console",
}
#: The product every browser's User-Agent starts with. The console is the only page that calls
#: the API from a browser: it is served from the API's own origin, and the API answers no CORS,
#: so no other page's script may call it with a token. (A browser may not let a page set its
#: own User-Agent.)
BROWSER = "mozilla/"
#: The token claims that name its user, the first one present (Cognito's ID tokens carry
#: ``cognito:username``; its access tokens, and chronoq local's, ``username``).
NAME_CLAIMS = ("cognito:username", "username", "email", "name")
#: The longest user name and request id an entry keeps.
MAX_NAME_CHARS = 256
MAX_REQUEST_ID_CHARS = 128
#: What stands for the fields not kept when a change has more than MAX_AUDIT_CHANGES.
MORE = "..."


def user_agent(source: Source, version: str) -> str:
    """The User-Agent chronoq's own client ``source`` sends."""
    return f"{AGENTS[source]}/{version}"


def source_of(agent: str | None) -> Source:
    """What a request with this User-Agent was sent from (anything else: the API)."""
    text = (agent or "").strip().lower()
    for source, product in AGENTS.items():
        if text == product or text.startswith(product + "/"):
            return source
    return Source.CONSOLE if text.startswith(BROWSER) else Source.API


class Caller(Model):
    """Who makes a request, and what it is: the token's subject (the owner) and name, what
    it was sent from, and its request id."""

    subject: str
    name: str | None = None
    source: Source = Source.API
    request_id: str = Field(min_length=1)

    @classmethod
    def of(cls, claims: Mapping[str, Any], agent: str | None, request_id: str) -> Caller:
        """The caller of a request as the JWT authorizer's claims, its User-Agent and API
        Gateway's request id show it."""
        names = (str(claims[c]) for c in NAME_CLAIMS if claims.get(c))
        name = next(names, None)
        return cls(
            subject=str(claims.get("sub", "")),
            name=name[:MAX_NAME_CHARS] if name else None,
            source=source_of(agent),
            request_id=request_id[:MAX_REQUEST_ID_CHARS] or "-",
        )


class Change(Model):
    """A field a change changed (a dotted path: ``target.headers.X-Api-Key``), its value
    before and after (null: it had none)."""

    field: str
    before: Any = None
    after: Any = None


class AuditEntry(Model):
    """One change made to a job."""

    job_id: str
    #: The job's owner (an entry outlives its job: it is how a reader is told apart).
    owner: str
    at: Instant
    request_id: str
    action: Action
    #: Who made it: the token's subject, and its user's name if the token names one.
    by: str
    by_name: str | None = None
    source: Source
    changes: list[Change] = Field(default_factory=list)
    #: What the change made, when it made something other than a field's value: a run
    #: (``run_id``), a backfill (``backfill_id``, ``from``, ``to``, ``runs``), re-runs.
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        """Its key among its job's entries: ``<instant, to the millisecond>#<request id>``,
        which sorts in time order."""
        return entry_key(self.at, self.request_id)


def entry_key(at: datetime, request_id: str) -> str:
    """``2026-11-26T12:00:00.000Z#<request id>``: always three decimals, so that keys sort
    as their instants do."""
    at = at.astimezone(UTC)
    return f"{at.strftime('%Y-%m-%dT%H:%M:%S')}.{at.microsecond // 1000:03d}Z#{request_id}"


# --- what changed ---------------------------------------------------------------------------

#: How deep nested objects are compared field by field (``target.headers.X-Api-Key``);
#: deeper values (a python task's ``args``) are compared, and kept, whole.
DEPTH = 3


def changes(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Change]:
    """The fields that differ between two JSON documents (None: none before, or none after),
    by dotted path, their values masked and capped; at most MAX_AUDIT_CHANGES (the last one
    then says how many more there were)."""
    old, new = _flat(before or {}), _flat(after or {})
    found = [
        Change(field=path, before=kept(path, old.get(path)), after=kept(path, new.get(path)))
        for path in sorted(old.keys() | new.keys())
        if old.get(path) != new.get(path)
    ]
    if len(found) <= lim.MAX_AUDIT_CHANGES:
        return found
    left = len(found) - lim.MAX_AUDIT_CHANGES + 1
    return [*found[: lim.MAX_AUDIT_CHANGES - 1], Change(field=MORE, after=f"{left} more fields")]


def _flat(document: Mapping[str, Any], prefix: str = "", depth: int = 1) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in document.items():
        path = f"{prefix}{name}"
        if isinstance(value, Mapping) and depth < DEPTH:  # (an empty one: no field)
            flat.update(_flat(value, path + ".", depth + 1))
        else:
            flat[path] = value
    return flat


def kept(path: str, value: Any) -> Any:
    """A value as an entry keeps it: credentials masked, then capped (a longer one becomes
    the start of its JSON text, and its length)."""
    value = masked(path.rsplit(".", 1)[-1], value)
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) <= lim.MAX_AUDIT_VALUE_CHARS:
        return value
    return f"{text[: lim.MAX_AUDIT_VALUE_CHARS]}... ({len(text)} characters)"


def masked(name: str, value: Any) -> Any:
    """``value`` (named ``name``: a header's, a variable's, a field's name) with every string
    that looks like a credential replaced by ``***``: a credential header's plain value, or a
    value shaped like a well-known token (domain.secrets.credential_warnings), at any depth.
    A secret's reference or placeholder is no credential: kept as it is."""
    if isinstance(value, str):
        return secrets.MASK if secrets.credential_warnings({name: value}, name) else value
    if isinstance(value, Mapping):
        return {k: masked(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(name, v) for v in value]
    return value
