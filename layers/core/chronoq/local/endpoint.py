"""The embedded AWS within reach: an HTTP endpoint (``--aws-port``) that hands each AWS request
it gets to the moto in this process, so that ``aws --endpoint-url`` or boto3 see and change
the very resources chronoq local uses (its tables and queues; the queues, topics, buses and
functions that targets name).

Only requests signed with the local deployment's credentials are served (see
chronoq.local.sigv4: kept in the data directory, printed at start-up); anything else is
refused as AWS refuses it. A request is routed by the service and region it is signed for:
it is given the address it would have on AWS, then passed through moto's request handling,
as the in-process SDK calls are (one at a time: see
chronoq.local.emulation.service_calls.serialize_service_calls). Calls made here are not
counted as the workload's (``chronoq cost``)."""

from __future__ import annotations

import datetime
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from chronoq.local import sigv4
from chronoq.local.serving import PromptServer
from chronoq.local.sigv4 import Credentials
from chronoq.local.usage import uncounted

logger = logging.getLogger(__name__)

#: The port ``chronoq local`` serves its AWS on unless told otherwise (LocalStack's).
DEFAULT_PORT = 4566

_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")
#: Services whose AWS address has no region in it.
_GLOBAL = {"iam": "iam.amazonaws.com", "s3": "s3.amazonaws.com", "sts": "sts.amazonaws.com"}


def aws_host(service: str, region: str) -> str:
    """Where a request signed for ``service`` in ``region`` goes on AWS."""
    return _GLOBAL.get(service) or f"{service}.{region}.amazonaws.com"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: The local deployment's credentials: the only ones served.
    credentials: Credentials

    def _any(self) -> None:
        from botocore.awsrequest import AWSPreparedRequest, HTTPHeaders
        from moto.core.models import botocore_stubber

        text = (self.headers.get("Content-Length") or "0").strip()
        if not text.isdigit():
            self.close_connection = True
            self._answer(400, {}, b"Content-Length must be a non-negative integer")
            return
        length = int(text)
        body = self.rfile.read(length) if length else b""
        now = datetime.datetime.now(datetime.UTC)
        refusal = sigv4.check(self.command, self.path, self.headers, body, self.credentials, now)
        if refusal is not None:
            self._answer(*refusal.answer(self.headers))
            return
        scope = _SCOPE.search(self.headers.get("Authorization", ""))
        assert scope is not None  # (checked)
        region, service = scope.groups()
        host = aws_host(service, region)
        path = urlsplit(self.path)
        url = f"https://{host}{path.path}" + (f"?{path.query}" if path.query else "")
        headers = HTTPHeaders()
        for key, value in self.headers.items():
            headers[key] = host if key.lower() == "host" else value
        request = AWSPreparedRequest(self.command, url, headers, body, stream_output=False)
        try:
            with uncounted():
                answer = botocore_stubber.process_request(request)
        except Exception as error:  # moto's own failures: shown to the caller, kept in the log
            logger.exception("the embedded AWS failed on %s %s", self.command, url)
            self._answer(500, {}, f"the embedded AWS failed: {error!r}".encode())
            return
        if answer is None:
            self._answer(404, {}, f"the embedded AWS does not serve {service}".encode())
            return
        status, answer_headers, answer_body = answer
        self._answer(status, answer_headers, answer_body)

    def _answer(self, status: int, headers: Any, body: bytes | str) -> None:
        data = body.encode() if isinstance(body, str) else body or b""
        self.send_response(status)
        for key, value in dict(headers).items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, str(value))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _any

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("aws endpoint: " + format, *args)


class _Server(PromptServer):
    daemon_threads = True


def bind(host: str, port: int, credentials: Credentials) -> ThreadingHTTPServer:
    """The endpoint on ``host:port`` (0: a free port), for requests signed with
    ``credentials``; it serves once ``start``ed. Raises OSError if the port is taken."""
    handler = type("Handler", (_Handler,), {"credentials": credentials})
    return _Server((host, port), handler)


def start(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve ``server``'s requests from a daemon thread."""
    thread = threading.Thread(target=server.serve_forever, name="aws-endpoint", daemon=True)
    thread.start()
    return thread


def serve(
    host: str, port: int, credentials: Credentials
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """``bind``, then ``start``."""
    server = bind(host, port, credentials)
    return server, start(server)


def bind_near(host: str, port: int, credentials: Credentials) -> ThreadingHTTPServer:
    """``bind`` on ``port``, or on a free port if it is taken (another chronoq local)."""
    try:
        return bind(host, port, credentials)
    except OSError as error:
        if port == 0:
            raise
        logger.warning("port %d is taken (%s): the embedded AWS takes a free one", port, error)
        return bind(host, 0, credentials)
