"""What a run does: one attempt of a job's target."""

from __future__ import annotations

import json
from typing import Any

import urllib3

from chronoq import resources as r
from chronoq import tasks
from chronoq.errors import PermanentError, TargetError
from chronoq.models import HttpTarget, PythonTarget

_http = urllib3.PoolManager(retries=False)


def run_http(target: HttpTarget, timeout_seconds: float, headers: dict[str, str]) -> dict[str, Any]:
    """Call the endpoint once: no redirects followed, no retries (the run's policy decides),
    the whole call bounded by ``timeout_seconds``. Success is a 2xx answer; the result keeps
    the status code and the first bytes of the body."""
    body: bytes | None = None
    all_headers = {"User-Agent": "chronoq", **headers, **target.headers}
    if target.body is not None:
        body = json.dumps(target.body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    try:
        response = _http.request(
            target.method,
            target.url,
            body=body,
            headers=all_headers,
            timeout=urllib3.Timeout(total=timeout_seconds),
            redirect=False,
            preload_content=False,
        )
        excerpt = response.read(r.OUTPUT_EXCERPT_BYTES, decode_content=True)
        response.release_conn()
    except urllib3.exceptions.HTTPError as error:
        raise TargetError(f"{target.method} {target.url} failed: {error}") from None
    text = excerpt.decode("utf-8", errors="replace")
    if 400 <= response.status < 500 and response.status not in (408, 429):
        raise PermanentError(
            f"{target.method} {target.url} answered HTTP {response.status}: {text}"
        )
    if not 200 <= response.status < 300:
        raise TargetError(f"{target.method} {target.url} answered HTTP {response.status}: {text}")
    return {"status_code": response.status, "body": text}


def run_python(target: PythonTarget, context: tasks.RunContext) -> Any:
    """Call the registered task once; its return value is the attempt's output."""
    function = tasks.lookup(target.task)
    if function is None:
        raise PermanentError(f"{target.task} is not a registered task")
    result = function(dict(target.args), context)
    json.dumps(result)  # the output must be JSON: fail here, not in the state machine
    return result
