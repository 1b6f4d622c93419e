"""The web console: static files (plain HTML, one JavaScript module, CSS; no build step)
that call the API with the user's token. ``chronoq local`` serves them at ``/`` and
``/console/*`` without a token; the stack deploys the same files to a private S3 bucket
behind CloudFront (see cdk/chronoq_cdk/console.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

#: The console's files, laid out as they are served: ``index.html`` at the root, the rest
#: under ``console/``.
ASSETS_DIR = Path(__file__).resolve().parent / "assets"
#: Where the console's files are, below the root page.
PREFIX = "/console/"
#: The console's settings, read by the page: ``{"api": base URL ("" for its own origin),
#: "cognito": null or {"domain", "client_id"}}``. The stack deploys its own.
CONFIG_FILE = "console/config.json"

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
    file = (ASSETS_DIR / name).resolve()
    if not file.is_relative_to(ASSETS_DIR) or not file.is_file():
        body = b"not found\n"
        return 404, {"Content-Type": "text/plain; charset=utf-8", **SECURITY_HEADERS}, body
    headers = {
        "Content-Type": CONTENT_TYPES.get(file.suffix, "application/octet-stream"),
        "Cache-Control": "no-cache",
        **SECURITY_HEADERS,
    }
    return 200, headers, file.read_bytes()
