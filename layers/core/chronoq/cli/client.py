"""The API over HTTP, as the command line speaks to it (standard library only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from chronoq import __version__
from chronoq.cli.errors import USAGE, ApiError, Failure

TIMEOUT_SECONDS = 30.0
#: What the command line's requests say they come from (the User-Agent a job's audit trail
#: tells clients by, chronoq.domain.audit.AGENTS), and ``chronoq apply``'s.
CLI_AGENT = f"chronoq-cli/{__version__}"
APPLY_AGENT = f"chronoq-apply/{__version__}"


def quote(identifier: str) -> str:
    return urllib.parse.quote(identifier, safe="")


@dataclass(frozen=True)
class Answer:
    """One answer of the API: its status, its body (decoded JSON, or the text as it is) and
    its headers (names in lower case; a header sent several times: its values joined by
    ", ", as HTTP allows)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def _headers_of(message: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in message.items() if message is not None else ():
        key = name.lower()
        found[key] = f"{found[key]}, {value}" if key in found else value
    return found


class Api:
    """Calls on the API at ``url`` with a bearer ``token``, as ``agent`` (the User-Agent)."""

    def __init__(
        self, url: str, token: str, timeout: float = TIMEOUT_SECONDS, agent: str = CLI_AGENT
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.agent = agent

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        *,
        raw: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer (the text as it is with ``raw``); ApiError on an error
        answer, Failure if the API cannot be reached. ``headers``: more to send (say an
        Idempotency-Key)."""
        return self.send(method, path, body, query, raw=raw, headers=headers).body

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        *,
        raw: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """As ``call``, the whole answer: its status and headers too."""
        if not self.token:
            raise Failure("a token is needed: --token, CHRONOQ_TOKEN or chronoq login", USAGE)
        if not self.url.startswith(("http://", "https://")):
            raise Failure(f"the API URL must be http(s), not {self.url!r}", USAGE)
        params = {k: v for k, v in (query or {}).items() if v is not None}
        # (a list: the parameter repeated, once per value)
        encoded = urllib.parse.urlencode(params, doseq=True)
        target = self.url + path + (f"?{encoded}" if params else "")
        sent = {**(headers or {}), "Authorization": f"Bearer {self.token}"}
        sent["Accept"] = "application/json"
        sent["User-Agent"] = self.agent
        data = None
        if body is not None:
            sent["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(target, data=data, method=method, headers=sent)  # noqa: S310 - http(s) checked above
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                text = answer.read().decode()
                status, received = answer.status, _headers_of(answer.headers)
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, _decode(error.read().decode(errors="replace"))) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise Failure(f"cannot reach {self.url}: {reason}") from None
        return Answer(status, text if raw else _decode(text), received)

    def pages(
        self,
        path: str,
        key: str,
        limit: int | None,
        next_token: str | None,
        every: bool,
        filters: dict[str, Any] | None = None,
    ) -> Iterator[tuple[list[dict[str, Any]], str | None]]:
        """The items under ``key`` page by page, with the ``next_token`` each page ends on;
        all pages with ``every``, else the first (``filters``: more query parameters)."""
        while True:
            query = {**(filters or {}), "limit": limit, "next_token": next_token}
            answer = self.call("GET", path, query=query)
            next_token = answer.get("next_token") if isinstance(answer, dict) else None
            yield list(answer.get(key, [])), next_token
            if not every or not next_token:
                return


def _decode(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text
