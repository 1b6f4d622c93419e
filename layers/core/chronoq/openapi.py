"""The OpenAPI 3.1 document of the HTTP API: what every answer looks like, which statuses
each route answers, and the finishing touches Powertools' generator leaves to us (the bearer
scheme, the one error shape instead of its own 422, the ``Idempotency-Key`` header).

The routes themselves (paths, parameters, request bodies) come from the api function's
resolver, so the document cannot describe a route that does not exist; this module gives the
route decorators their ``responses=`` and builds the final document. Pure: no I/O.

Why this module is long: it declares the shape of every answer of the HTTP API (one pydantic
model each) and each route's statuses; declarations one after another, with little logic.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

import chronoq
from chronoq import resources as r
from chronoq.domain import audit, backfills, jobs, runs
from chronoq.domain import limits as lim

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver

#: The name of the bearer scheme in ``components.securitySchemes``.
BEARER = "bearer"
TITLE = "chronoq"
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"


# --- what the answers hold --------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(
        description="a machine-readable word: malformed_json, unauthorized, quota_exceeded, "
        "limit_exceeded, not_found, method_not_allowed, conflict, payload_too_large, "
        "unsupported_media_type, invalid_field, invalid_request"
    )
    message: str = Field(description="for people")
    field: str | None = Field(
        description="the JSON path in the request body (schedule.expression, "
        "target.headers.X-Foo), or the query parameter or header at fault; null when the whole "
        "request is"
    )
    limit: str | None = Field(
        default=None,
        description="limit_exceeded only: the owner's limit the request is past (its setting's"
        " name, see the documentation's Limits page)",
    )


class Error(BaseModel):
    """Every refusal chronoq answers itself (4xx)."""

    model_config = ConfigDict(title="Error")

    error: ErrorDetail


class GatewayError(BaseModel):
    """An answer of API Gateway itself, before the request reaches chronoq: 401 from the JWT
    authorizer, 429 from throttling."""

    message: str


class Job(jobs.Job):
    """A stored job as the API shows it."""

    generation: SkipJsonSchema[int] = Field(default=1, exclude=True)
    runs_before: SkipJsonSchema[int] = Field(default=0, exclude=True)


class Run(runs.Run):
    """A run as the API shows it."""

    generation: SkipJsonSchema[int] = Field(default=1, exclude=True)
    notify: SkipJsonSchema[bool] = Field(default=False, exclude=True)


class JobPage(BaseModel):
    jobs: list[Job]
    next_token: str | None = Field(
        default=None, description="present when more may follow: pass it to get the next page"
    )


class RunPage(BaseModel):
    runs: list[Run]
    next_token: str | None = Field(
        default=None, description="present when more may follow: pass it to get the next page"
    )


class FireTime(BaseModel):
    utc: datetime = Field(description="the instant, in UTC")
    local: datetime = Field(description="the same instant in the schedule's time zone")
    starts_at: datetime | None = Field(
        description="when the job's run of this fire time starts: the fire time plus its "
        "offset within the schedule's window_seconds (null for a window previewed without a "
        "job_id: the offset depends on the job)"
    )


class Preview(BaseModel):
    fire_times: list[FireTime]


class Backfill(BaseModel):
    """A backfill: the job's schedule run over a past range."""

    id: str
    start: datetime = Field(alias="from", description="its range's first instant (inclusive)")
    to: datetime = Field(description="its range's end (exclusive)")
    job_id: str
    owner: str
    state: backfills.BackfillState
    total: int = Field(description="fire times in the range: one run each")
    max_in_flight: int = Field(description="the most of its runs under way at once")
    created_at: datetime
    finished_at: datetime | None
    start_deadline_seconds: int = Field(
        description="each of its runs must start within this many seconds of being made"
    )
    ended: int | None = Field(
        description="how many of its runs have ended, counted as each ends (COMPLETED when it"
        " reaches total); null in a listing for a backfill made before counting began"
    )
    runs: dict[str, int] = Field(
        default_factory=dict,
        description="how many of its runs ended in each final status",
    )


class BackfillPage(BaseModel):
    backfills: list[Backfill]
    next_token: str | None = Field(
        default=None, description="present when more may follow: pass it to get the next page"
    )


class AuditEntry(audit.AuditEntry):
    """One change made to a job: who made it (``by``: the token's subject; ``by_name``: its
    user's name), when, from what (``source``: ``api``, ``cli``, ``console`` or ``apply``, told
    by the request's User-Agent), under which request id, what it did, and the fields it
    changed, before and after (a value that looks like a credential shown as ``***``; a long
    one cut)."""


class AuditPage(BaseModel):
    entries: list[AuditEntry] = Field(description="newest first")
    next_token: str | None = Field(
        default=None, description="present when more may follow: pass it to get the next page"
    )


class Reruns(BaseModel):
    runs: list[Run] = Field(description="the new runs, one per run re-run (none: none matched)")


class RunLogs(BaseModel):
    run_id: str
    lines: list[str]


class SigningSecret(BaseModel):
    owner: str
    header: str = Field(description="the header that carries the signature of each webhook")
    secret: str


class Secret(BaseModel):
    """A secret as the API shows it: never its value."""

    name: str
    version: int = Field(description="moved on by every PUT of a value")
    created_at: str
    updated_at: str = Field(description="when its value last changed")


class SecretPage(BaseModel):
    secrets: list[Secret]


class CalendarShown(BaseModel):
    """A business calendar as the API shows it (docs/api/calendars.md)."""

    name: str
    dates: list[str]
    ranges: list[list[str]]
    timezone: str
    business_days: list[str]
    version: int = Field(description="moved on by every PUT")
    created_at: str
    updated_at: str


class CalendarReplan(BaseModel):
    """The jobs using a calendar re-planned on its rules by this request: at most a page
    (``next_token``: go on with ``POST /calendars/{name}/replan``)."""

    replanned: list[str]
    failed: dict[str, str] = Field(description="job id -> why it was not re-planned")
    next_token: str | None


class CalendarPut(CalendarShown):
    replan: CalendarReplan


class CalendarPage(BaseModel):
    calendars: list[CalendarShown]


class CalendarUsers(CalendarShown):
    jobs: list[str] = Field(description="the ids of the jobs using it")


class SecretValue(BaseModel):
    """The body of ``PUT /secrets/{name}``: the value, write-only."""

    model_config = ConfigDict(extra="forbid")

    value: str = Field(
        min_length=lim.MIN_SECRET_VALUE_LENGTH,
        max_length=lim.MAX_SECRET_VALUE_BYTES,
        description=f"{lim.MIN_SECRET_VALUE_LENGTH} characters to {lim.MAX_SECRET_VALUE_BYTES}"
        " bytes; never shown again",
    )


class HeartbeatRun(BaseModel):
    id: str
    status: str
    scheduled_at: str
    finished_at: str | None
    lag_ms: int | None = Field(description="its start minus its scheduled time")


class Heartbeat(BaseModel):
    state: str = Field(
        description="ok; late (its last success started more than max_lag_seconds late);"
        " missing (no success for max_silence_seconds, or none yet)"
    )
    job_id: str
    every_seconds: int
    last_run: HeartbeatRun | None
    last_success: HeartbeatRun | None
    seconds_since_success: float | None
    max_lag_seconds: int
    max_silence_seconds: int


class Used(BaseModel):
    limit: int
    used: int | dict[str, int] | None = Field(
        default=None, description="how much of it is used (by job, for a limit per job)"
    )


class OwnerLimits(BaseModel):
    owner: str
    jobs: Used = Field(description="jobs (max_jobs_per_owner)")
    running_backfills_per_owner: Used
    running_backfills_per_job: Used = Field(description="used: by job id")
    queued_runs_per_owner: Used = Field(
        description="fire times of running backfills and re-runs not ended yet"
    )
    asked_runs_in_flight: Used = Field(
        description="manual triggers, re-runs and backfills' runs under way: one more waits"
    )
    runs_in_flight: Used = Field(
        description="all runs under way (started, not ended), whatever started them: one more"
        " waits, under its start deadline"
    )
    waiting_triggers_per_job: Used = Field(
        description="a job's manual triggers not started yet (counted as each trigger asks)"
    )
    secrets_per_owner: Used = Field(description="secrets kept")
    calendars_per_owner: Used = Field(description="business calendars kept")


class Status(BaseModel):
    heartbeat: Heartbeat = Field(
        description="the job the deployment runs on itself every minute, through the whole"
        " path of a run (dispatcher, queue, worker, state machine, runner)"
    )


class ArchivedObject(BaseModel):
    """One object of the archive: gzip JSON Lines, a line per version of an ended run (of
    ``kind=audit``: a line per audit entry)."""

    name: str = Field(description="its name within the day: its first and last version")
    size: int = Field(description="bytes (compressed)")
    url: str = Field(description="downloads it, with no other credentials, until expires_at")
    expires_at: datetime


class ArchivePage(BaseModel):
    day: str = Field(
        description="the day (UTC) of the runs' fire times (of the audit entries' ``at``),"
        " YYYY-MM-DD"
    )
    kind: str = Field(description="runs or audit: what the objects hold")
    objects: list[ArchivedObject]
    next_token: str | None = Field(
        default=None, description="present when more may follow: pass it to get the next page"
    )


# --- many jobs at once: pause and resume by label ---------------------------------------------


class BulkJob(BaseModel):
    """A job a bulk pause or resume acted on: as it is after the request."""

    id: str
    name: str
    state: jobs.JobState
    next_run_at: datetime | None


class BulkSkipped(BulkJob):
    """A matching job left as it was, and why."""

    reason: str = Field(
        description="already_paused (pause), not_paused (resume), completed (no runs left),"
        " conflict (changed meanwhile: ask again), deleted (deleted meanwhile)"
    )
    message: str = Field(description="for people")


class PausedPage(BaseModel):
    paused: list[BulkJob] = Field(description="the jobs this request paused")
    skipped: list[BulkSkipped] = Field(description="the matching jobs it left as they were")
    next_token: str | None = Field(
        default=None,
        description="present when more jobs may match: pass it (with the same label) to go on",
    )


class ResumedPage(BaseModel):
    resumed: list[BulkJob] = Field(description="the jobs this request resumed")
    skipped: list[BulkSkipped] = Field(description="the matching jobs it left as they were")
    next_token: str | None = Field(
        default=None,
        description="present when more jobs may match: pass it (with the same label) to go on",
    )


# --- the responses of a route -----------------------------------------------------------------

_REASONS = {
    400: "The body is not JSON (malformed, not UTF-8, bad base64)",
    401: "No valid bearer token",
    403: f"The owner has reached their job quota (default {lim.DEFAULT_MAX_JOBS_PER_OWNER})",
    404: "No such job or run of the caller's",
    405: "The path exists, the method does not (see Allow)",
    409: "A conflict: a version, a state, or an Idempotency-Key used with another request",
    413: f"The body is larger than {r.MAX_REQUEST_BYTES} bytes",
    415: "The body is not application/json",
    422: "A field, parameter or header is invalid: `field` names it",
    429: "Throttled by API Gateway (AWS only)",
}
#: What a route that the owner's limits bound answers besides (a backfill, a re-run).
_LIMITED = {
    422: f"{_REASONS[422]}; or the request could never fit one of the owner's limits"
    " (limit_exceeded: `limit` names it, `field` what to change)",
    429: f"{_REASONS[429]}; or the request is past one of the owner's limits while what the"
    " owner holds is in the way (limit_exceeded: `limit` names it; Retry-After, in seconds,"
    " says when to ask again)",
}
_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_GATEWAY = {"application/json": {"schema": {"$ref": "#/components/schemas/GatewayError"}}}
#: Every route: a token is checked (by API Gateway, then the function), and every request is
#: throttled in AWS.
_ALWAYS = (401, 429)
#: Routes that read a request body.
BODY = (400, 413, 415, 422)
Errors = tuple[int, ...]


def responses(
    status: int,
    model: type[BaseModel] | None,
    description: str,
    *errors: int,
    limited: bool = False,
) -> dict[int, Any]:
    """``responses=`` of a route answering ``status`` with ``model`` (None: no body, or any
    JSON), and ``errors`` besides those every route may answer; ``limited``: the owner's
    limits bound it (422 and 429 say so)."""
    success: dict[str, Any] = {"description": description}
    if model is not None:
        success["content"] = {"application/json": {"model": model}}
    elif status != 204:
        success["content"] = {"application/json": {"schema": {}}}
    answers: dict[int, Any] = {status: success}
    reasons = {**_REASONS, **_LIMITED} if limited else _REASONS
    for code in sorted({*_ALWAYS, *errors, *((422,) if limited else ())}):
        answers[code] = {"description": reasons[code], "content": _ERROR}
    return answers


# --- the document -----------------------------------------------------------------------------


def document(app: ApiGatewayResolver) -> dict[str, Any]:
    """The OpenAPI document of ``app``'s routes, as JSON-ready data."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    schema = app.get_openapi_schema(
        title=TITLE,
        version=chronoq.__version__,
        description=(
            "Create, schedule and follow jobs. Every request carries a bearer token (a JWT: "
            "API Gateway's authorizer in AWS, `chronoq token USER` locally); a caller sees and "
            "changes only their own jobs and runs, and another owner's ids are answered 404. "
            "Every refusal chronoq answers itself has the shape "
            '`{"error": {"code", "message", "field"}}`.'
        ),
        security_schemes={BEARER: HTTPBearer(bearerFormat="JWT")},
        security=[{BEARER: []}],
    )
    data: dict[str, Any] = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
    return _finished(data)


def _finished(data: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    schemas: dict[str, Any] = data.setdefault("components", {}).setdefault("schemas", {})
    # Powertools' 422 and the answer of a route whose return does not match: not ours
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    schemas["Error"] = Error.model_json_schema(ref_template="#/components/schemas/{model}")
    detail = schemas["Error"].pop("$defs")["ErrorDetail"]
    schemas["ErrorDetail"] = detail
    schemas["GatewayError"] = GatewayError.model_json_schema()
    for (path, method), examples in _EXAMPLES.items():
        body = data["paths"][path][method]["requestBody"]["content"]["application/json"]
        body["examples"] = copy.deepcopy(examples)
    for path, item in data["paths"].items():
        for method, operation in item.items():
            operation["operationId"] = _operation_id(operation["operationId"], path, method)
            operation["tags"] = [_tag(path)]
    data["tags"] = copy.deepcopy(TAGS)
    for operation in _operations(data):
        if operation.pop(IDEMPOTENT, False):
            _idempotent(operation)
        answers = operation["responses"]
        answers.get("204", {}).pop("content", None)  # (Powertools gives it the return's)
        if answers.get("422", {}).get("description") == "Validation Error":
            del answers["422"]  # Powertools' own, on a route that cannot answer it
        elif "422" in answers:
            answers["422"]["content"] = copy.deepcopy(_ERROR)
        if "401" in answers:  # the authorizer's, or the function's
            answers["401"]["content"] = {
                "application/json": {
                    "schema": {
                        "anyOf": [
                            {"$ref": "#/components/schemas/Error"},
                            {"$ref": "#/components/schemas/GatewayError"},
                        ]
                    }
                }
            }
        if "429" in answers:
            answers["429"]["content"] = copy.deepcopy(_GATEWAY)
        if "405" in answers:
            answers["405"]["headers"] = {
                "Allow": {"description": "the methods the path has", "schema": {"type": "string"}}
            }
        operation["responses"] = {code: answers[code] for code in sorted(answers)}
    data["paths"] = {path: data["paths"][path] for path in sorted(data["paths"])}
    data["components"]["schemas"] = {k: schemas[k] for k in sorted(schemas)}
    return data


_EXAMPLE_JOB = {
    "name": "nightly report",
    "schedule": {"type": "cron", "expression": "0 3 * * *", "timezone": "Europe/Paris"},
    "target": {"type": "http", "url": "https://example.com/reports", "method": "POST"},
    "retry": {"max_attempts": 3, "interval_seconds": 10},
    "labels": {"team": "reports"},
}
#: Examples of request bodies, by operation: for readers, and sent as they are by fuzzers.
_EXAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("/jobs", "post"): {
        "cron": {"summary": "Every night at 03:00, Paris time", "value": _EXAMPLE_JOB},
        "rate": {
            "summary": "Every 5 minutes, to a queue, high priority",
            "value": {
                "name": "poll",
                "schedule": {"type": "rate", "every": "5 minutes"},
                "target": {
                    "type": "sqs",
                    "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/work",
                    "message": {"poll": True},
                },
                "priority": "high",
                "concurrency": "forbid",
            },
        },
        "window": {
            "summary": "Every night within an hour of midnight, at most 5 running of the key",
            "value": {
                "name": "spread",
                "schedule": {"type": "cron", "expression": "0 0 * * *", "window_seconds": 3600},
                "target": {"type": "http", "url": "https://example.com/sync"},
                "flow": {"key": "partner-api", "max_running": 5, "max_starts_per_second": 2},
            },
        },
        "at": {
            "summary": "Once, at an instant",
            "value": {
                "name": "once",
                "schedule": {"type": "at", "at": "2030-01-01T00:00:00Z"},
                "target": {"type": "http", "url": "https://example.com/once"},
                "timeout_seconds": 30,
            },
        },
    },
    ("/jobs/{job_id}", "patch"): {
        "rename": {"summary": "A new name", "value": {"name": "weekly report"}},
        "limit": {
            "summary": "Ten more scheduled runs, then deleted",
            "value": {"max_runs": 10, "on_complete": "delete"},
        },
        "unlimited": {"summary": "No limit of runs", "value": {"max_runs": None}},
        "reschedule": {
            "summary": "A new schedule, if the job is still at version 1",
            "value": {
                "schedule": {"type": "cron", "expression": "0 3 * * 1"},
                "version": 1,
            },
        },
    },
    ("/jobs/{job_id}/backfill", "post"): {
        "day": {
            "summary": "Every fire time of one past day",
            "value": {"from": "2026-11-24T00:00:00Z", "to": "2026-11-25T00:00:00Z"},
        },
    },
    ("/jobs/{job_id}/rerun", "post"): {
        "failed": {
            "summary": "The runs of a day that failed or timed out",
            "value": {
                "from": "2026-11-24T00:00:00Z",
                "to": "2026-11-25T00:00:00Z",
                "statuses": ["FAILED", "TIMED_OUT"],
            },
        },
    },
    ("/schedules/preview", "post"): {
        "cron": {
            "summary": "The next 5 fire times of a cron schedule",
            "value": {"schedule": _EXAMPLE_JOB["schedule"], "count": 5},
        },
        "rate": {
            "summary": "The next 3 fire times of a rate",
            "value": {"schedule": {"type": "rate", "every": "90 minutes"}, "count": 3},
        },
    },
}


#: The groups of operations (a generated client's modules, the tags of the document).
TAGS = [
    {"name": "jobs", "description": "Create, read, change, pause, resume, trigger and delete jobs"},
    {"name": "runs", "description": "A job's runs: list, read, cancel, re-run, output and logs"},
    {
        "name": "backfills",
        "description": "A job's schedule run over a past range: start, list, read and cancel",
    },
    {"name": "audit", "description": "Who changed a job, when, from what, and how"},
    {"name": "schedules", "description": "When a schedule fires"},
    {"name": "notifications", "description": "Webhook signatures"},
    {
        "name": "secrets",
        "description": "Named values that jobs refer to and never hold: put, list and delete",
    },
    {
        "name": "calendars",
        "description": "Business calendars: dates on which the jobs naming one do not run; put,"
        " list, read, delete, and re-plan the jobs using one",
    },
    {
        "name": "archive",
        "description": "Every ended run, kept after the runs table lets it expire: a day's"
        " objects, as links",
    },
    {"name": "status", "description": "The deployment's health: its heartbeat"},
    {"name": "limits", "description": "What the caller may hold at once, and what it holds"},
    {"name": "document", "description": "This OpenAPI document"},
]


def _operation_id(generated: str, path: str, method: str) -> str:
    """The operation's id as a generated client names its method: the route's function
    (``create_job``, ``list_runs``), not Powertools' ``create_job_jobs_post``."""
    suffix = re.sub(r"\W", "_", path) + "_" + method.lower()
    return generated.removesuffix(suffix) or generated


def _tag(path: str) -> str:
    """The group of a path: what it lists or acts on (a job's runs, and re-runs, are runs;
    a job's backfills are backfills)."""
    parts = [p for p in path.split("/") if p]
    if parts[0] == "runs" or parts[-1] in ("runs", "rerun"):
        return "runs"
    if "backfill" in parts or "backfills" in parts:
        return "backfills"
    if parts[-1] == "audit":
        return "audit"
    if parts[0] == "openapi.json":
        return "document"
    return parts[0]


def _operations(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for item in data.get("paths", {}).values() for op in item.values()]


#: ``openapi_extensions=`` of a route that honours ``Idempotency-Key``.
IDEMPOTENT = "x-chronoq-idempotent"


def _idempotent(operation: dict[str, Any]) -> None:
    """Describe the ``Idempotency-Key`` header on an operation, and the header of a replay."""
    operation.setdefault("parameters", []).append(
        {
            "name": IDEMPOTENCY_HEADER,
            "in": "header",
            "required": False,
            "description": (
                "The same key and request within 24 hours: the first answer again (with "
                f"`{REPLAYED_HEADER}: true`); the same key with another request: 409."
            ),
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": r.MAX_IDEMPOTENCY_KEY_CHARS,
                "pattern": "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$",
            },
        }
    )
    for code, answer in operation["responses"].items():
        if code.startswith("2"):
            answer["headers"] = {
                REPLAYED_HEADER: {
                    "description": "`true` when this is the answer of an earlier request",
                    "schema": {"type": "string", "enum": ["true"]},
                }
            }
