"""A target with its placeholders expanded for one attempt: secrets and the run's own values
(``chronoq.domain.secrets``: one language, one pass), each value encoded for where it goes,
and the result checked again as the job's own values were when it was created (docs/api/secrets.md,
"Run parameters and placeholders"):

- in an http url's host, a value must be a host (letters, digits, ``.``, ``-``, ``:`` and
  ``[]``): it cannot add a path, credentials or another URL; the final URL is a URL, and the
  runner's SSRF guard judges where it calls, as for any URL (chronoq's own endpoints
  included);
- in its path, query and fragment a value is percent-encoded (``/``, ``?``, ``#``, ``&`` and
  ``=`` included): it stays one segment, one query value;
- in a header, a value that would break the header (CR, LF, other controls, not Latin-1) is
  refused; the header's name is the job's own (it takes no placeholder), so a value cannot
  become a reserved header;
- in a JSON body or a python task's arguments, a value goes into a string (quotes escaped
  when the document is written), or is the string's whole value when the string is the
  placeholder alone (a number stays a number);
- in a container's command, a value cannot make a word start with ``-`` (an option) unless
  the job wrote the ``-`` itself, and the first word (the program) takes no placeholder at
  all (refused when the job is created); no value may hold a NUL.

A value refused fails the attempt for good, naming the field (``Refused``), never the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from chronoq.domain import limits as lim
from chronoq.domain import secrets
from chronoq.domain.secrets import RunContext, SecretRef
from chronoq.domain.targets import ContainerTarget, HttpTarget, PythonTarget, _plain_url

#: What a value put into a URL's host may hold.
_HOST_VALUE = re.compile(r"^[A-Za-z0-9.:\[\]-]+$")


class Refused(ValueError):
    """A value put in fails the checks of the field it went into."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


def _kept(name: str) -> str:
    """A secret placeholder left as it is (where secrets are not expanded)."""
    return f"{{{{ secret.{name} }}}}"


def expand(target: Any, values: Mapping[str, str], context: RunContext | None) -> Any:
    """``target`` (http or python; any other as it is) with its secret placeholders and
    references replaced by ``values`` and its run placeholders by ``context`` (None: left
    as they are), in one pass, checked. Built without validation: the values are checked
    here, and secrets are never shown back."""

    def lookup(name: str) -> str:
        return values[name]

    if isinstance(target, HttpTarget):
        url = _url(target.url, lookup, context)
        headers = {
            name: _header(name, value, lookup, context) for name, value in target.headers.items()
        }
        body = secrets.resolve(target.body, lookup, context)
        return target.model_copy(update={"url": url, "headers": headers, "body": body})
    if isinstance(target, PythonTarget):
        return target.model_copy(
            update={
                "args": secrets.resolve(target.args, lookup, context),
                "environment": _environment(target.environment, lookup, context, "target"),
            }
        )
    return target


def expand_container(target: ContainerTarget, context: RunContext) -> ContainerTarget:
    """A container target with the run placeholders of its command and its environment's
    plain values expanded, checked (secrets stay whole variables, handed over by ECS)."""
    command = [target.command[0]]
    for n, word in enumerate(target.command[1:], start=1):
        field = f"target.command[{n}]"
        expanded = secrets.render(word, _kept, context, _no_nul(field))
        if expanded.startswith("-") and not word.startswith("-"):
            raise Refused(field, "a value put in must not make an option (a word starting with -)")
        command.append(expanded)
    environment = _environment(target.environment, _kept, context, "target")
    return target.model_copy(update={"command": command, "environment": environment})


def _no_nul(field: str) -> secrets.Encode:
    def check(value: str) -> str:
        if "\x00" in value:
            raise Refused(field, "a value put in holds a NUL character")
        return value

    return check


def _environment(
    environment: Mapping[str, str | SecretRef],
    lookup: secrets.Lookup,
    context: RunContext | None,
    where: str,
) -> dict[str, Any]:
    """Each variable's value expanded as text (a reference resolved where ``lookup`` does)."""
    expanded: dict[str, Any] = {}
    for name, value in environment.items():
        if isinstance(value, SecretRef):
            expanded[name] = value if lookup is _kept else lookup(value.secret)
            continue
        field = f"{where}.environment.{name}"
        expanded[name] = secrets.render(value, lookup, context, _no_nul(field))
    return expanded


def _header(
    name: str, value: str | SecretRef, lookup: secrets.Lookup, context: RunContext | None
) -> str:
    """A header's value once its secrets and values are in: refused (for good) if it would
    break the header, naming the header and the secrets, never the value."""
    field = f"header {name}"
    named = ", ".join(sorted(secrets.names_in(value)))
    what = f"the value of secret {named}" if named else "a value put in"
    expanded = secrets.resolve(value, lookup, context)
    if not isinstance(expanded, str):  # (a header alone of a parameter that is not text)
        expanded = secrets.as_text(expanded)
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in expanded):
        raise Refused(
            field,
            f"{what} holds characters a header cannot carry"
            " (CR, LF, NUL or other control characters)",
        )
    try:
        expanded.encode("latin-1")
    except UnicodeEncodeError:
        raise Refused(field, f"{what} is not Latin-1 text") from None
    if len(expanded) > lim.MAX_HEADER_VALUE_LENGTH:
        raise Refused(field, f"is longer than {lim.MAX_HEADER_VALUE_LENGTH} characters")
    return expanded


def _host_value(value: str) -> str:
    if not _HOST_VALUE.match(value):
        raise Refused("target.url", "a value put in its host must be a host name or address")
    return value


def _in_path(value: str) -> str:
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if value in (".", "..") else encoded


def _in_query(value: str) -> str:
    return quote(value, safe="")


def _url(url: str, lookup: secrets.Lookup, context: RunContext | None) -> str:
    """The URL expanded, each part's values encoded for it, the result a URL still."""
    scheme, _, rest = url.partition("://")
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    netloc, path_and_after = (rest, "") if end < 0 else (rest[:end], rest[end:])
    path, mark, after = path_and_after.partition("?")
    if not mark:
        path, mark, after = path_and_after.partition("#")
    expanded = (
        scheme
        + "://"
        + secrets.render(netloc, lookup, context, _host_value)
        + secrets.render(path, lookup, context, _in_path)
        + mark
        + secrets.render(after, lookup, context, _in_query)
    )
    if expanded != url:
        try:
            _plain_url(expanded)
        except ValueError as error:
            raise Refused("target.url", f"once values are put in, it {error}") from None
        if urlsplit(expanded).scheme != urlsplit(url).scheme:
            raise Refused("target.url", "a value put in must not change its scheme")
    return expanded
