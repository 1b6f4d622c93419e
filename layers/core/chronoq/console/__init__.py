"""The web console: static files (plain HTML, one JavaScript module, CSS; no build step)
that call the API with the user's token. ``chronoq local`` serves them at ``/`` and
``/console/*`` without a token; in AWS the console function (functions/console) answers
the HTTP API's routes ``GET /`` and ``GET /console/{proxy+}``, which have no authorizer, with
the same files (see cdk/chronoq_cdk/console.py). Either way the page and the API share one
origin: no CORS, and the token never leaves it."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from chronoq import resources as r

#: The console's files, laid out as they are served: ``index.html`` at the root, the rest
#: under ``console/``.
ASSETS_DIR = Path(__file__).resolve().parent / "assets"
#: Where the console's files are, below the root page.
PREFIX = "/console/"
#: The console's settings, read by the page: ``{"api": base URL ("" for its own origin),
#: "cognito": null or {"domain", "client_id"}}``; in AWS made from the variables below.
CONFIG_FILE = "console/config.json"
#: The Cognito hosted UI's domain (``prefix.auth.region.amazoncognito.com``) and the app
#: client the console signs in with; unset: no hosted UI, tokens are pasted.
ENV_COGNITO_DOMAIN = "CHRONOQ_CONSOLE_COGNITO_DOMAIN"
ENV_COGNITO_CLIENT_ID = "CHRONOQ_CONSOLE_COGNITO_CLIENT_ID"

#: The function serving the console in AWS: no table, queue or secret of chronoq's, only
#: these files (its settings are the two variables above, set by the Console construct).
FUNCTION = r.Function(
    name="console",
    memory_mb=128,
    timeout_seconds=5,
    env=(),
    description="Web console: the static files of the page (no data: the page calls the API)",
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
#: Sent with every file: no framing by other sites, no sniffing, scripts and styles only
#: from the console's own origin; API calls to ``connect-src`` (any https origin, for a
#: deployed API on another host, and the console's own).
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self' https:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
}


#: The longest path a console file may have (its files have short names).
MAX_ASSET_PATH = 200


def serves(path: str) -> bool:
    """Is ``path`` (a request target) one of the console's (``/``, ``/index.html``,
    ``/console/...``)?"""
    route = urlsplit(path).path
    return route in ("/", "/index.html") or route.startswith(PREFIX)


def asset(path: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body answering ``GET path`` for a path ``serves``: the file, or
    404 for a name that is not one of the console's files (nothing outside ASSETS_DIR)."""
    route = unquote(urlsplit(path).path)
    name = "index.html" if route in ("/", "/index.html") else route.lstrip("/")
    if len(name) > MAX_ASSET_PATH or not name.isprintable():
        return _not_found()  # (no file of the console's is named so: nothing to look up)
    try:
        file = (ASSETS_DIR / name).resolve()
        found = file.is_relative_to(ASSETS_DIR) and file.is_file()
    except (OSError, ValueError):  # a name the file system cannot take
        found = False
    if not found:
        return _not_found()
    headers = {
        "Content-Type": CONTENT_TYPES.get(file.suffix, "application/octet-stream"),
        "Cache-Control": "no-cache",
        **SECURITY_HEADERS,
    }
    return 200, headers, file.read_bytes()


def _not_found() -> tuple[int, dict[str, str], bytes]:
    return 404, {"Content-Type": "text/plain; charset=utf-8", **SECURITY_HEADERS}, b"not found\n"


def config(environ: Any = os.environ) -> dict[str, Any]:
    """The console's settings in AWS: the API on the page's own origin, and the hosted UI
    when the stack has a Cognito domain."""
    domain, client = environ.get(ENV_COGNITO_DOMAIN), environ.get(ENV_COGNITO_CLIENT_ID)
    cognito = {"domain": domain, "client_id": client} if domain and client else None
    return {"api": "", "cognito": cognito}


def answer(event: dict[str, Any]) -> dict[str, Any]:
    """The HTTP API's answer (payload 2.0) to a ``GET`` of one of the console's paths."""
    path = event.get("rawPath") or "/"
    if urlsplit(path).path == "/" + CONFIG_FILE:
        status, headers = 200, {"Content-Type": CONTENT_TYPES[".json"], **SECURITY_HEADERS}
        data = json.dumps(config()).encode()
        headers["Cache-Control"] = "no-cache"
    elif serves(path):
        status, headers, data = asset(path)
    else:
        status, headers, data = _not_found()
    text = headers["Content-Type"].startswith(("text/", "application/json"))
    return {
        "statusCode": status,
        "headers": headers,
        "body": data.decode() if text else base64.b64encode(data).decode(),
        "isBase64Encoded": not text,
    }
