"""A local API Gateway (HTTP API): turns HTTP requests into payload-2.0 events for the api
function, after checking the bearer token as the JWT authorizer would (before reading the
body, whose size is capped at the API's limit)."""

from __future__ import annotations

import base64
import json
import logging
import sys
import time
import uuid
from collections.abc import Callable
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from chronoq import console
from chronoq import resources as r
from chronoq.local.serving import PromptServer
from chronoq.local.tokens import InvalidToken, is_admin, verify

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
    query: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        # a parameter repeated: its values joined by commas, as API Gateway does
        query[key] = f"{query[key]},{value}" if key in query else value
    now = time.time()
    text: str | None = None
    encoded = False
    if body:  # (API Gateway passes a body that is not UTF-8 text in base64)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
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
        "isBase64Encoded": encoded,
    }


#: Local-only controls of the runtime itself, e.g. ``POST /_local/ticker/stop``: each given
#: the request's query parameters (``POST /_local/erase?owner=alice``).
Controls = dict[str, Callable[[dict[str, str]], dict[str, Any]]]
CONTROL_PREFIX = "/_local/"
#: Presigned links of chronoq's own buckets (the archive's: see
#: chronoq.local.engine.objects): the path they begin with, and what answers one (its
#: status, headers and body). A link carries its own authorization: no token is asked for.
Download = Callable[[str], tuple[int, dict[str, str], bytes]]


#: The listen backlog: a burst of this many concurrent connections is answered, not reset.
LISTEN_BACKLOG = 256
#: Seconds a request may take to send its body (no connection is tied up longer).
BODY_TIMEOUT_SECONDS = 30.0


def _error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "field": None}}).encode()


def body_length(headers: Message) -> tuple[int, tuple[int, bytes] | None]:
    """The length of a request's body, or the answer refusing it: 400 for a Content-Length
    that is not one (negative, not a number, several) or a body sent in chunks, 413 for one
    larger than the API's body limit."""
    if headers.get("Transfer-Encoding"):
        return 0, (400, _error("bad_request", "send the body with a Content-Length, not chunked"))
    values = headers.get_all("Content-Length") or []
    if not values:
        return 0, None
    text = values[0].strip()
    if len(set(values)) > 1 or not text.isdigit() or not text.isascii():
        return 0, (400, _error("bad_request", "Content-Length must be one non-negative integer"))
    length = int(text)
    if length > r.MAX_REQUEST_BYTES:
        return 0, (
            413,
            _error("payload_too_large", f"the body must be at most {r.MAX_REQUEST_BYTES} bytes"),
        )
    return length, None


def serve(
    host: str,
    port: int,
    secret: str,
    invoke: Invoke,
    controls: Controls | None = None,
    downloads: tuple[str, Download] | None = None,
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = BODY_TIMEOUT_SECONDS  # a client that stops sending is dropped

        def _handle(self) -> None:
            try:
                self._answer_request()
            except Exception:  # an answer, never a connection closed on the client
                logger.exception("the gateway failed on %s %s", self.command, self.path[:200])
                self.close_connection = True
                self._reply(
                    500,
                    {"content-type": "application/json"},
                    b'{"message":"Internal Server Error"}',
                )

        def _answer_request(self) -> None:
            if not self.path.startswith("/"):  # (CONNECT's host:port, OPTIONS' *)
                self.close_connection = True
                message = "the request target must be a path"
                self._reply(
                    400, {"content-type": "application/json"}, _error("bad_request", message)
                )
                return
            if console.serves(self.path) and self.command != "GET":
                message = f"{self.command} is not allowed on {urlsplit(self.path).path}"
                self._refuse(
                    405,
                    {"content-type": "application/json", "Allow": "GET"},
                    _error("method_not_allowed", message),
                )
                return
            if downloads is not None and urlsplit(self.path).path.startswith(downloads[0]):
                self._download(downloads[1])
                return
            if self.command == "GET" and console.serves(self.path):  # the web console
                if self.headers.get("Content-Length") not in (None, "0"):
                    self.close_connection = True  # (a GET's body is never read)
                self._reply(*console.asset(self.path))
                return
            # The token first, the body's size next: nothing is read for a caller that may
            # not call, nor more than the API accepts.
            try:
                claims = verify(secret, self.headers.get("Authorization"))
            except InvalidToken:
                self._refuse(
                    401, {"content-type": "application/json"}, b'{"message":"Unauthorized"}'
                )
                return
            length, refusal = body_length(self.headers)
            if refusal:
                self._refuse(refusal[0], {"content-type": "application/json"}, refusal[1])
                return
            body = self.rfile.read(length) if length else b""
            if len(body) < length:  # the client closed the connection or stopped sending
                self.close_connection = True
                return
            path = urlsplit(self.path).path
            if path.startswith(CONTROL_PREFIX):
                self._control(claims)
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

        def _download(self, download: Download) -> None:
            """A presigned link: the object it names, if its signature and time hold."""
            if self.command not in ("GET", "HEAD"):
                message = f"{self.command} is not allowed on a link"
                self._refuse(
                    405,
                    {"content-type": "application/json", "Allow": "GET"},
                    _error("method_not_allowed", message),
                )
                return
            if self.headers.get("Content-Length") not in (None, "0"):
                self.close_connection = True  # (a GET's body is never read)
            self._reply(*download(self.path))

        def _control(self, claims: dict[str, Any]) -> None:
            """chronoq local's own controls: for admin tokens only."""
            json_type = {"content-type": "application/json"}
            if not is_admin(claims):
                message = (
                    f"{CONTROL_PREFIX}* controls need an admin token"
                    " (chronoq token --admin USER, or the one chronoq local prints at start-up)"
                )
                self._reply(403, json_type, _error("forbidden", message))
                return
            target = urlsplit(self.path)
            control = (controls or {}).get(f"{self.command} {target.path}")
            if control is None:
                message = f"no control {self.command} {target.path}"
                self._reply(404, json_type, _error("not_found", message))
                return
            try:
                answer = control(dict(parse_qsl(target.query)))
            except ValueError as error:  # a control's own refusal of its parameters
                self._reply(400, json_type, _error("bad_request", str(error)))
                return
            self._reply(200, json_type, json.dumps(answer).encode())

        def _refuse(self, status: int, headers: dict[str, str], data: bytes) -> None:
            """Answer without reading the body, and close the connection (what is left of
            the request on it is not read)."""
            self.close_connection = True
            self._reply(status, {**headers, "Connection": "close"}, data)

        def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
            try:
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() != "content-length" and (
                        key.lower() != "connection" or self.close_connection
                    ):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":  # (HEAD: the headers of the answer only)
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # the client went away before its answer: nothing to tell it, nor the log
                self.close_connection = True

        # Every method reaches the API (which answers 405 with Allow for those a route does
        # not take), none is left to the server's default 501 page: the standard ones, and
        # any other a client sends (PROPFIND, ...).
        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle
        do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _handle

        def __getattr__(self, name: str) -> Any:
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            logger.info("%s %s", self.address_string(), format % args)

    server = _Server((host, port), Handler)
    server.daemon_threads = True
    return server


class _Server(PromptServer):
    #: Connections the kernel holds while the server accepts (the default, 5, resets bursts
    #: of concurrent clients).
    request_queue_size = LISTEN_BACKLOG

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset or closed while its request was read or its answer
        flushed) is no error of the server's: nothing is logged. Anything else is, as
        socketserver logs it."""
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)
