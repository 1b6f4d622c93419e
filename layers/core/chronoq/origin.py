"""Where an invocation of one of chronoq's functions comes from, as far as it can be told.

chronoq's functions are invoked by API Gateway, EventBridge, SQS and DynamoDB stream event
source mappings and Step Functions: none of them passes a client context. The runner invokes
every ``lambda`` target with one (``ClientContext``: the run's ids under ``custom``, which a
target's own code may read). So a chronoq function invoked with a client context was invoked
as a job's target, and refuses: a target never reaches chronoq itself (the stack's IAM and
the API's checks keep it from getting there; this holds if they ever let one through).
"""

from __future__ import annotations

import base64
import json
from typing import Any

#: The key of a lambda target's client context naming the run that invoked it.
MARKER = "chronoq_run_id"


class ForeignInvocation(Exception):
    """A chronoq function was invoked by something other than its own source."""


def target_client_context(job_id: str, run_id: str) -> str:
    """The ``ClientContext`` (base64 JSON) the runner invokes a lambda target with."""
    document = {"custom": {"chronoq_job_id": job_id, MARKER: run_id}}
    return base64.b64encode(json.dumps(document).encode()).decode()


def refuse_client_context(context: Any) -> None:
    """Raise ForeignInvocation if ``context`` (Lambda's context object) carries a client
    context: no source of chronoq's functions sends one, the runner always does."""
    if getattr(context, "client_context", None) is not None:
        raise ForeignInvocation(
            "chronoq's functions are invoked only by their own event sources, never as a"
            " job's target (this invocation carries a client context)"
        )
