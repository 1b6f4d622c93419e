"""What IAM denies chronoq's own roles in AWS (the CDK stack's explicit denials), done by the
embedded AWS: the runner invokes none of chronoq's functions (its ``lambda`` targets), and the
state machine sends to none of its queues, publishes to none of its topics and puts events on
none of its buses (``sqs``, ``sns`` and ``eventbridge`` targets). chronoq's resources are
those named with its prefix (``chronoq-local-``). A denied request is answered as AWS answers
one, 403 ``AccessDeniedException``, and is not carried out.

The API refuses such targets when a job is created or changed (chronoq.domain.access); this
is the same rule where the call is made, for a job stored before it held."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

from chronoq import resources as r
from chronoq.local.usage import STATE_MACHINE

#: Who is denied what: caller -> operations.
DENIED: Mapping[str, frozenset[str]] = {
    r.RUNNER_FUNCTION.name: frozenset({"lambda:Invoke"}),
    STATE_MACHINE: frozenset({"sqs:SendMessage", "sns:Publish", "events:PutEvents"}),
}


def _document(body: bytes) -> dict[str, Any]:
    try:
        loaded = json.loads(body or b"{}")
    except ValueError:
        loaded = None
    if isinstance(loaded, dict):
        return loaded
    return {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}


def _names(operation: str, url: str, body: bytes) -> list[str]:
    """The names of the resources a request acts on."""
    document = _document(body)
    if operation == "lambda:Invoke":
        function = unquote(urlsplit(url).path.rstrip("/").split("/")[-2])
        return [function.split(":")[6] if function.startswith("arn:") else function]
    if operation == "sqs:SendMessage":
        return [str(document.get("QueueUrl", "")).rstrip("/").rsplit("/", 1)[-1]]
    if operation == "sns:Publish":
        return [str(document.get("TopicArn") or document.get("TargetArn") or "").split(":")[-1]]
    if operation == "events:PutEvents":
        entries = document.get("Entries") or []
        buses = [str(e.get("EventBusName") or "default") for e in entries if isinstance(e, dict)]
        return [bus.split(":", 5)[-1].removeprefix("event-bus/") for bus in buses]
    return []


def denial(prefix: str, caller: str, operation: str, url: str, body: bytes) -> str | None:
    """Why ``caller`` may not make this request (None: it may)."""
    if operation not in DENIED.get(caller, frozenset()):
        return None
    for name in _names(operation, url, body):
        if name.startswith(prefix):
            return (
                f"{caller} is not authorized to perform {operation} on {name}: an explicit deny"
                " keeps targets away from chronoq's own resources"
            )
    return None


def denied_answer(operation: str, message: str) -> tuple[int, dict[str, str], bytes]:
    """AWS's answer to a request IAM denies: JSON for the JSON protocols (the type in the
    header), an XML error document for SNS's query protocol (``AuthorizationError``)."""
    if operation.startswith("sns:"):
        text = escape(message)
        xml = (
            '<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error>'
            f"<Type>Sender</Type><Code>AuthorizationError</Code><Message>{text}</Message>"
            "</Error><RequestId>chronoq-local</RequestId></ErrorResponse>"
        )
        return 403, {"Content-Type": "text/xml"}, xml.encode()
    body = json.dumps({"__type": "AccessDeniedException", "message": message}).encode()
    headers = {"x-amzn-ErrorType": "AccessDeniedException", "Content-Type": "application/json"}
    return 403, headers, body
