"""A local API Gateway (HTTP API): turns HTTP requests into payload-2.0 events for the api
function, after checking the bearer token as the JWT authorizer would."""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from chronoq import console
from chronoq.local.tokens import InvalidToken, verify

logger = logging.getLogger(__name__)

#: The one route of the HTTP API (see the CDK Api construct); the api function routes inside.
ROUTE_KEY = "ANY /{proxy+}"

Invoke = Callable[[dict[str, Any]], dict[str, Any]]


def http_event(
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    claims: dict[str, Any],
    source_ip: str,
) -> dict[str, Any]:
    """The event API Gateway sends for this request (payload format version 2.0)."""
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    now = time.time()
    text = body.decode("utf-8", errors="surrogateescape") if body else None
    return {
        "version": "2.0",
        "routeKey": ROUTE_KEY,
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "queryStringParameters": query or None,
        "pathParameters": {"proxy": parts.path.lstrip("/")},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "authorizer": {
                "jwt": {"claims": {k: str(v) for k, v in claims.items()}, "scopes": None}
            },
            "domainName": headers.get("Host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("User-Agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": ROUTE_KEY,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text,
        "isBase64Encoded": False,
    }


#: Local-only controls of the runtime itself, e.g. ``POST /_local/ticker/stop``.
Controls = dict[str, Callable[[], dict[str, Any]]]
CONTROL_PREFIX = "/_local/"


def serve(
    host: str, port: int, secret: str, invoke: Invoke, controls: Controls | None = None
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.command == "GET" and console.serves(self.path):  # the web console
                self._reply(*console.asset(self.path))
                return
            try:
                claims = verify(secret, self.headers.get("Authorization"))
            except InvalidToken:
                self._reply(
                    401, {"content-type": "application/json"}, b'{"message":"Unauthorized"}'
                )
                return
            control = (controls or {}).get(f"{self.command} {self.path}")
            if self.path.startswith(CONTROL_PREFIX):
                status, result = (
                    (200, control())
                    if control
                    else (
                        404,
                        {
                            "error": {
                                "code": "not_found",
                                "message": f"no control {self.command} {self.path}",
                                "field": None,
                            }
                        },
                    )
                )
                self._reply(
                    status, {"content-type": "application/json"}, json.dumps(result).encode()
                )
                return
            event = http_event(
                self.command,
                self.path,
                dict(self.headers.items()),
                body,
                claims,
                self.client_address[0],
            )
            try:
                answer = invoke(event)
            except Exception:
                logger.exception("api function failed")
                self._reply(
                    500,
                    {"content-type": "application/json"},
                    b'{"message":"Internal Server Error"}',
                )
                return
            payload = answer.get("body") or ""
            data = base64.b64decode(payload) if answer.get("isBase64Encoded") else payload.encode()
            headers: dict[str, str] = answer.get("headers") or {}
            self._reply(int(answer.get("statusCode", 200)), headers, data)

        def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() not in ("content-length", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:
            logger.info("%s %s", self.address_string(), format % args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
