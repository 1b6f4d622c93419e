"""API: the HTTP interface of chronoq (API Gateway HTTP API, JWT authorizer in front)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import app as chronoq_app
from chronoq.errors import InvalidRequest, NotFound
from chronoq.models import JobSpec

logger = Logger(service="chronoq-api")
app = APIGatewayHttpResolver(enable_validation=True)


class Unauthorized(Exception):
    pass


def _owner() -> str:
    claims = app.current_event.request_context.authorizer.jwt_claim or {}
    owner = claims.get("sub")
    if not owner:
        raise Unauthorized()
    return str(owner)


@app.post("/jobs")
def create_job(spec: Annotated[JobSpec, Body(embed=False)]) -> Response[dict[str, Any]]:
    job = chronoq_app.build().create_job(_owner(), spec)
    return Response(201, "application/json", job.model_dump(mode="json"))


@app.get("/jobs")
def list_jobs() -> dict[str, Any]:
    jobs = chronoq_app.build().list_jobs(_owner())
    return {"jobs": [j.model_dump(mode="json") for j in jobs]}


@app.get("/jobs/<job_id>")
def get_job(job_id: str) -> dict[str, Any]:
    return chronoq_app.build().get_job(_owner(), job_id).model_dump(mode="json")


@app.get("/jobs/<job_id>/runs")
def list_runs(job_id: str, limit: Annotated[int, Query(ge=1, le=100)] = 50) -> dict[str, Any]:
    runs = chronoq_app.build().list_runs(_owner(), job_id, limit)
    return {"runs": [r.model_dump(mode="json") for r in runs]}


@app.get("/runs/<run_id>")
def get_run(run_id: str) -> dict[str, Any]:
    return chronoq_app.build().get_run(_owner(), run_id).model_dump(mode="json")


def _error(status: int, message: str, **extra: Any) -> Response[dict[str, Any]]:
    return Response(status, "application/json", {"message": message, **extra})


@app.exception_handler(RequestValidationError)
def _invalid(error: RequestValidationError) -> Response[dict[str, Any]]:
    details = [
        {"field": ".".join(str(p) for p in e["loc"][1:]) or str(e["loc"][0]), "message": e["msg"]}
        for e in error.errors()
    ]
    fields = ", ".join(d["field"] for d in details)
    return _error(422, f"invalid request: {fields}", errors=details)


@app.exception_handler(InvalidRequest)
def _rejected(error: InvalidRequest) -> Response[dict[str, Any]]:
    details = [{"field": error.field, "message": error.message}]
    return _error(422, f"invalid request: {error.field}", errors=details)


@app.exception_handler(NotFound)
def _not_found(error: NotFound) -> Response[dict[str, Any]]:
    return _error(404, str(error))


@app.exception_handler(Unauthorized)
def _unauthorized(_: Unauthorized) -> Response[dict[str, Any]]:
    return _error(401, "Unauthorized")


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
