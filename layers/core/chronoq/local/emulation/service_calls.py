"""How SDK calls reach moto: through botocore only, one at a time, through the usage meter,
refused where IAM would refuse them, and heard of by the queue pollers when they send to SQS;
and how a link the embedded AWS signed is answered in this process (``presigned_get``)."""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

from chronoq.local.emulation.state import active


def serve_sdk_calls_only() -> None:
    """moto intercepts AWS calls twice: in botocore (every SDK call: chronoq's, the state
    machine's, the embedded endpoint's) and in the ``requests`` library, for which each start
    registers some 6,000 URL patterns afresh (a tenth of a second per start, paid by every
    test that starts chronoq local's AWS). Nothing chronoq runs calls AWS through
    ``requests``: start and stop the botocore part only."""
    from moto.core.base_backend import BackendDict
    from moto.core.models import MockAWS, botocore_stubber

    if getattr(MockAWS._enable_patching, "sdk_only", False):
        return

    def enable(self: Any, reset: bool = True) -> None:
        botocore_stubber.enabled = True
        if reset:
            BackendDict.reset()

    def disable(self: Any, remove_data: bool) -> None:
        from moto.core.model_instances import reset_model_data

        botocore_stubber.enabled = False
        if remove_data:
            BackendDict.reset()
            reset_model_data()

    enable.sdk_only = True  # type: ignore[attr-defined]
    MockAWS._enable_patching = enable  # type: ignore[method-assign]
    MockAWS._disable_patching = disable  # type: ignore[method-assign]


def _denied(own_prefix: str | None, request: Any) -> Any:
    """AWS's answer if IAM would deny this request to its caller (chronoq.local.denials), its
    roles kept from chronoq's own resources, those named ``own_prefix``."""
    if own_prefix is None:
        return None
    from chronoq.local.denials import denial, denied_answer
    from chronoq.local.usage import _body, current_caller, operation_of

    body = _body(request.body)
    operation = operation_of(request.method, request.url, request.headers, body)
    why = denial(own_prefix, current_caller(), operation, request.url, body)
    return None if why is None else denied_answer(operation, why)


def serialize_service_calls() -> None:
    """moto's backends are not thread-safe (a DynamoDB transaction, for one, copies tables
    that other threads are writing), while the local runtime calls them from many threads,
    as AWS is called from many Lambdas. Handle one request at a time, as a service would
    handle each atomically. Lambda invocations are let through: they run handlers that call
    the other services themselves."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request
    if getattr(original, "serialized", False):
        return
    lock = threading.RLock()  # a service call may make nested ones in the same thread

    def process_request(self: Any, request: Any) -> Any:
        emulation = active()
        denied = _denied(emulation.own_prefix, request)
        if denied is not None:
            return denied
        call = functools.partial(original, self, request)
        meter = emulation.meter
        if request.url.endswith("/invocations"):
            return meter.around(request, call) if meter else call()
        with lock:
            answer = meter.around(request, call) if meter else call()
        _tell_pollers_of_sends(request)
        return answer

    process_request.serialized = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]


_SENDS = ("AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch")


def _tell_pollers_of_sends(request: Any) -> None:
    """A send to SQS: the queue pollers hear of it and of when its messages become visible
    (so that idle ones need not keep looking: chronoq.local.drivers.Pace)."""
    target = request.headers.get("X-Amz-Target") or b""
    if isinstance(target, bytes):
        target = target.decode(errors="replace")
    if target not in _SENDS:
        return
    try:
        body = json.loads(request.body or b"{}")
        entries = body.get("Entries") or [body]
        delays = [float(entry.get("DelaySeconds") or 0) for entry in entries]
    except (ValueError, TypeError, AttributeError):
        delays = [0.0]
    from chronoq.local.drivers import messages_sent

    messages_sent(delays)


def presigned_get(url: str) -> tuple[int, bytes]:
    """The status and body the embedded AWS answers a GET of ``url`` with: a presigned S3 link
    it made (at AWS's own address, which only moto, intercepting botocore in this process,
    serves)."""
    from botocore.awsrequest import AWSPreparedRequest, HTTPHeaders
    from moto.core.models import botocore_stubber

    request = AWSPreparedRequest("GET", url, HTTPHeaders(), b"", stream_output=False)
    answer: Any = botocore_stubber.process_request(request)
    status, _, body = answer
    return int(status), body.encode() if isinstance(body, str) else bytes(body)
