"""Eraser: takes one owner's data out of chronoq everywhere (jobs, runs, outputs and logs,
secrets, audit entries, the owner's own items), when an operator invokes it (``chronoq admin
erase``; never the API, whose role may not delete audit entries). The erasure is recorded in
the audit trail without what it erased. Invoked synchronously: nothing is retried for it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.origin import refuse_client_context
from chronoq.settings import EraserSettings, load
from pydantic import BaseModel, ConfigDict, Field, ValidationError

logger = Logger(service="chronoq-eraser")
eraser = compose.eraser(load(EraserSettings))


class EraseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    owner: str = Field(min_length=1, max_length=256)
    #: Who asked (an operator's name, recorded).
    by: str = Field(default="operator", min_length=1, max_length=256)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not an operator
    try:
        request = EraseRequest.model_validate(event)
    except ValidationError as error:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in error.errors())
        return {"error": f"invalid request: {fields}"}
    erased = eraser.erase(request.owner, by=request.by, request_id=context.aws_request_id)
    logger.info("erased", extra={"owner_digest": erased.owner_digest, "counts": erased.counts})
    return {
        "owner_digest": erased.owner_digest,
        "at": erased.at.isoformat(),
        "counts": dict(erased.counts),
    }
