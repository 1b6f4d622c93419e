"""The api function's handler over the use cases on the fakes: its routes, as API Gateway
invokes it, proven in the fast layer (the integration tests run the same handler on moto)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from chronoq import compose
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.local.lambdas import LambdaContext, _import
from chronoq.settings import environment

from tests.builders import Fakes

#: The api function's variables, as chronoq local gives them (their values are never used:
#: the handler's use cases are replaced by those on the fakes).
ENVIRONMENT = {
    r.ENV_JOBS_TABLE: "chronoq-local-jobs",
    r.ENV_SCHEDULE_TABLE: "chronoq-local-schedule",
    r.ENV_RUNS_TABLE: "chronoq-local-runs",
    r.ENV_AUDIT_TABLE: "chronoq-local-audit",
    r.ENV_SHARDS: "4",
    r.ENV_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:chronoq-local-run",
    r.ENV_OUTPUT_BUCKET: "chronoq-local-outputs",
    r.ENV_OUTPUT_BUCKETS: "*",
    r.ENV_ARCHIVE_BUCKET: "chronoq-local-archive",
    r.ENV_SIGNING_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:s-AbCdEf",
    r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
    r.ENV_BLOCK_PRIVATE_TARGETS: "false",
    r.ENV_ALLOWED_TARGET_NETWORKS: "",
    r.ENV_MAX_JOBS_PER_OWNER: "10000",
    **dict.fromkeys(
        (
            r.ENV_LAMBDA_TARGETS,
            r.ENV_QUEUE_TARGETS,
            r.ENV_TOPIC_TARGETS,
            r.ENV_EVENT_BUS_TARGETS,
            r.ENV_CONTAINER_IMAGES,
        ),
        lim.ALLOW_ANY,
    ),
    r.ENV_MAX_CONTAINER_CPU: str(lim.MAX_CONTAINER_CPU),
    r.ENV_MAX_CONTAINER_MEMORY: str(lim.MAX_CONTAINER_MEMORY),
    r.ENV_MAX_CONTAINER_SECONDS: str(lim.MAX_CONTAINER_TIMEOUT_SECONDS),
    **{
        queue.env: f"https://sqs.us-east-1.amazonaws.com/123456789012/chronoq-local-{queue.id}"
        for queue in r.QUEUES
    },
}


@dataclass
class Api:
    """The handler, and the fakes its use cases run on."""

    module: Any
    fakes: Fakes

    def call(
        self,
        method: str,
        path: str,
        user: str = "alice",
        body: Any = None,
        headers: dict[str, str] | None = None,
        request_id: str | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """One request: the status, the decoded body and the answer's headers (``request_id``:
        API Gateway's id of the request; by default a new one)."""
        from tests.support import api_event

        event = api_event("get_job", user=user, path=path, method=method, body=body)
        event["headers"] = {**event["headers"], **(headers or {})}
        if request_id is not None:
            event["requestContext"]["requestId"] = request_id
        context = LambdaContext(
            function_name="chronoq-local-api",
            memory_limit_in_mb=r.API_FUNCTION.memory_mb,
            timeout_seconds=r.API_FUNCTION.timeout_seconds,
            invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:chronoq-local-api",
        )
        with environment(ENVIRONMENT):
            answer = self.module.handler(event, context)
        text = answer.get("body") or "null"
        return answer["statusCode"], json.loads(text), dict(answer.get("headers") or {})


@contextmanager
def api_on_fakes(fakes: Fakes | None = None) -> Iterator[Api]:
    fakes = fakes or Fakes()
    with environment(ENVIRONMENT):
        module = _import("api_on_fakes_handler", r.API_FUNCTION.handler_file)
    cast(Any, module).service = compose.Api(
        jobs=fakes.jobs,
        runs=fakes.runs,
        idempotency=fakes.idempotency,
        master_secret=lambda: fakes.master_secret,
        backfills=fakes.backfills,
        reruns=fakes.reruns,
        secrets=fakes.secrets,
        audit=fakes.audit_trails,
        archive=fakes.archive_links,
        calendars=fakes.calendars,
    )
    yield Api(module, fakes)
