"""Secrets: named values of one owner that jobs refer to and never hold.

A job names a secret in one of two ways (docs/api/secrets.md):

- a reference, ``{"secret": "crm-token"}``, as the whole value of an http header, a python
  task's or a container's environment variable, or a webhook's header;
- a placeholder inside a string, ``"Bearer {{ secret.crm-token }}"``: in an http header, the
  url's query, the body's strings, a python task's arguments and environment, a webhook's
  headers. (A container takes a secret only as a whole variable: ECS hands it to the task.)

The placeholder language is ``{{ namespace.name }}`` (spaces inside the braces optional). It
is expanded in a single pass: a value put in is never read for placeholders again, so a value
holding ``{{ secret.x }}`` stays that text. Text in braces that is not a placeholder of a
known namespace stays as it is.

The same pass expands a run's own placeholders (docs/api/secrets.md):
``{{ scheduled_at }}``, ``{{ run_id }}``, ``{{ job.name }}``, ``{{ params.NAME }}`` and, for
after jobs, ``{{ upstream.NAME.output }}``, from a ``RunContext`` (see ``expand``). A
substituted value is never read for placeholders either: a parameter holding
``{{ secret.x }}`` puts that text in, never the secret.

Values are resolved by the component that makes the call, at run time, and only there. Before
a run's logs and output are kept, every value resolved for it is scrubbed from them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from pydantic import Field as ModelField

from chronoq.domain import limits as lim
from chronoq.domain.base import Model

#: A secret's name: letters, digits, ``_`` and ``-``, starting with a letter or digit.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
NAME = re.compile(NAME_PATTERN)
#: A placeholder: ``{{ namespace.name }}``.
PLACEHOLDER = re.compile(r"\{\{\s*([a-z]+)\.([A-Za-z0-9][A-Za-z0-9_-]*)\s*\}\}")
#: Any placeholder of the language: ``{{ word }}`` or ``{{ word.name[.name...] }}`` (the
#: words and names a run's placeholders use; a namespace no one knows stays as text).
EXPRESSION = re.compile(r"\{\{\s*([a-z][a-z_]*(?:\.[A-Za-z0-9][A-Za-z0-9_-]*)*)\s*\}\}")
#: The namespaces placeholders may name.
SECRET_NAMESPACE = "secret"  # noqa: S105 - a placeholder namespace
#: A run's own placeholders: the whole expression (``scheduled_at``, ``run_id``,
#: ``job.name``) or its namespace (``params``, ``upstream``).
RUN_WORDS = frozenset({"scheduled_at", "run_id", "job.name"})
PARAMS_NAMESPACE = "params"
UPSTREAM_NAMESPACE = "upstream"
#: What a resolved value is replaced with in a run's logs and output.
MASK = "***"


class SecretRef(Model):
    """``{"secret": "name"}``: the whole value is the secret's."""

    secret: str = ModelField(
        min_length=1, max_length=lim.MAX_SECRET_NAME_LENGTH, pattern=NAME_PATTERN
    )


class SecretMeta(Model):
    """What chronoq keeps of a secret besides its value (which only its value store holds):
    its version (the value store's, moved on by every change of the value) and times."""

    name: str
    version: int = ModelField(ge=1)
    created_at: datetime
    updated_at: datetime


class SecretUnavailable(Exception):
    """A secret's value could not be read: gone, or access denied (``retryable`` False), or
    throttled or unreachable (True). Its message names the secret, never the value."""

    def __init__(self, name: str, reason: str, retryable: bool = False) -> None:
        super().__init__(f"secret {name!r}: {reason}")
        self.name = name
        self.reason = reason
        self.retryable = retryable


class UnknownSecret(LookupError):
    """A job names a secret its owner does not have (or no longer has)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


# --- finding references ---------------------------------------------------------------------


def names_in_text(text: str) -> set[str]:
    """The secrets a string's placeholders name."""
    return {key for space, key in PLACEHOLDER.findall(text) if space == SECRET_NAMESPACE}


def names_in(value: Any) -> set[str]:
    """The secrets a value names: its references and its strings' placeholders, at any
    depth of a JSON document, a dict of strings or a model."""
    if isinstance(value, SecretRef):
        return {value.secret}
    if isinstance(value, str):
        return names_in_text(value)
    if isinstance(value, Model):  # (its fields as they are: a reference stays one)
        return {n for f in type(value).model_fields for n in names_in(getattr(value, f))}
    if isinstance(value, Mapping):
        return {n for v in value.values() for n in names_in(v)}
    if isinstance(value, list | tuple):
        return {n for v in value for n in names_in(v)}
    return set()


# --- resolving --------------------------------------------------------------------------------

Lookup = Callable[[str], str]


@dataclass(frozen=True)
class RunContext:
    """What a run's own placeholders stand for: its fire time and id, its job's name, its
    parameters (the job's defaults overlaid by the request's), and, for after jobs, the small
    outputs of the upstream runs it follows (by upstream job name; empty otherwise)."""

    scheduled_at: str = ""
    run_id: str = ""
    job_name: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    upstream: Mapping[str, str] = field(default_factory=dict)

    def value(self, expression: str) -> Any:
        """The value ``expression`` stands for; None if it is not a run placeholder (it
        stays as text). Raises MissingValue for a known one without a value."""
        if expression == "scheduled_at":
            return self.scheduled_at
        if expression == "run_id":
            return self.run_id
        if expression == "job.name":
            return self.job_name
        space, _, rest = expression.partition(".")
        if space == PARAMS_NAMESPACE and rest and "." not in rest:
            if rest not in self.params:
                raise MissingValue(
                    expression, "no such parameter: pass it, or give the job a default"
                )
            return self.params[rest]
        if space == UPSTREAM_NAMESPACE and rest.endswith(".output") and rest.count(".") == 1:
            name = rest.removesuffix(".output")
            if name not in self.upstream:
                raise MissingValue(expression, "no output of such an upstream job")
            return self.upstream[name]
        return None


class MissingValue(LookupError):
    """A placeholder of a known namespace without a value (a parameter not passed)."""

    def __init__(self, expression: str, reason: str) -> None:
        super().__init__(f"{{{{ {expression} }}}}: {reason}")
        self.expression = expression


def as_text(value: Any) -> str:
    """A value as a placeholder puts it in text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


#: How a substituted value goes into the text around it (e.g. percent-encoded in a URL).
Encode = Callable[[str], str]


def _same(text: str) -> str:
    return text


def render(
    text: str,
    lookup: Lookup,
    context: RunContext | None = None,
    encode: Encode = _same,
    secret_encode: Encode | None = None,
) -> str:
    """``text`` with each placeholder replaced by its value, in one pass: what is put in is
    not read again. Secrets come from ``lookup``, a run's own placeholders from ``context``
    (None: they stay as text); each value goes in through ``encode`` (secrets through
    ``secret_encode`` if given)."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        space, _, key = expression.partition(".")
        if space == SECRET_NAMESPACE and key and "." not in key:
            return (secret_encode or encode)(lookup(key))
        found = context.value(expression) if context is not None else None
        return match.group(0) if found is None else encode(as_text(found))

    return EXPRESSION.sub(value, text)


def resolve(value: Any, lookup: Lookup, context: RunContext | None = None) -> Any:
    """``value`` (a JSON document, a dict of strings and references, a reference) with its
    references and placeholders resolved. A string that is one run placeholder and nothing
    else takes the value whole (a parameter's number or object stays one); other strings
    take values as text. Values go into the document's strings, never its syntax: a value
    holding quotes is escaped when the document is written as JSON."""
    if isinstance(value, SecretRef):
        return lookup(value.secret)
    if isinstance(value, str):
        whole = EXPRESSION.fullmatch(value)
        if whole is not None and context is not None:
            space = whole.group(1).partition(".")[0]
            if space != SECRET_NAMESPACE:
                found = context.value(whole.group(1))
                if found is not None:
                    return found
        return render(value, lookup, context)
    if isinstance(value, Mapping):
        return {k: resolve(v, lookup, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(v, lookup, context) for v in value]
    return value


def run_placeholders_in(value: Any) -> set[str]:
    """The run placeholders (not secrets) a value's strings hold, at any depth."""
    if isinstance(value, str):
        found = set()
        for expression in EXPRESSION.findall(value):
            space = expression.partition(".")[0]
            if expression in RUN_WORDS or space in (PARAMS_NAMESPACE, UPSTREAM_NAMESPACE):
                found.add(expression)
        return found
    if isinstance(value, Model):
        return {n for f in type(value).model_fields for n in run_placeholders_in(getattr(value, f))}
    if isinstance(value, Mapping):
        return {n for v in value.values() for n in run_placeholders_in(v)}
    if isinstance(value, list | tuple):
        return {n for v in value for n in run_placeholders_in(v)}
    return set()


def upstream_outputs_named(value: Any) -> set[str]:
    """The upstream jobs whose output a value's strings name (``{{ upstream.NAME.output }}``)."""
    found = set()
    for expression in run_placeholders_in(value):
        space, _, rest = expression.partition(".")
        if space == UPSTREAM_NAMESPACE and rest.endswith(".output") and rest.count(".") == 1:
            found.add(rest.removesuffix(".output"))
    return found


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with every value (as it is, as JSON would escape it, as a URL's query would
    carry it) replaced by ``***``, the longest first (so a value holding another is masked
    whole)."""
    forms: set[str] = set()
    for v in values:
        if not v:
            continue
        forms.add(v)
        forms.add(json.dumps(v)[1:-1])
        forms.add(quote(v, safe=""))
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


def scrub_json(value: Any, values: Iterable[str]) -> Any:
    """A JSON document with the values scrubbed from its strings (keys included)."""
    secrets = list(values)
    if not secrets:
        return value
    return json.loads(scrub(json.dumps(value), secrets))


# --- plain credentials ------------------------------------------------------------------------

#: Headers whose plain values are credentials.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
#: Well-known token formats.
TOKEN_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("a GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("a Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("an OpenAI key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[\w-]*")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)


def credential_warnings(headers: Mapping[str, Any], where: str) -> list[str]:
    """What looks like a plain credential among ``headers`` (named by ``where``, e.g.
    ``target.headers``): a credential header with a plain value, or a value shaped like a
    well-known token. References and values made of placeholders only are not plain."""
    found = []
    for name, value in headers.items():
        if not isinstance(value, str):
            continue  # a reference
        plain = PLACEHOLDER.sub("", value).strip()
        if name.lower() in CREDENTIAL_HEADERS and plain and names_in_text(value) == set():
            found.append(f"{where}.{name} holds a plain credential")
            continue
        for kind, pattern in TOKEN_FORMATS:
            if pattern.search(plain):
                found.append(f"{where}.{name} looks like {kind}")
                break
    return found


#: What the ``Warning`` header says after its findings.
WARNING_ADVICE = ": keep credentials in secrets (PUT /secrets/{name})"


def warning_header(warnings: Iterable[str]) -> str | None:
    """The ``Warning`` header (RFC 9111's 299, "miscellaneous persistent warning") naming
    each plain credential, or None."""
    listed = list(warnings)
    if not listed:
        return None
    text = "; ".join(listed) + WARNING_ADVICE
    return '299 chronoq "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
