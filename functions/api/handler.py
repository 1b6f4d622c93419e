"""API: the HTTP interface of chronoq (API Gateway HTTP API, JWT authorizer in front).

Why this module is long: it declares every route of the HTTP API (37 of them), each a few lines
from the request to one use case; Powertools' resolver takes the routes from one app, and the
list reads as the API's table of contents. The work is in chronoq.usecases.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose, heartbeat
from chronoq import openapi as doc
from chronoq import resources as r
from chronoq.domain import archive, labels, pages, secrets, windows
from chronoq.domain import limits as lim
from chronoq.domain.audit import Caller
from chronoq.domain.backfills import BackfillRequest
from chronoq.domain.calendars import Calendar
from chronoq.domain.errors import (
    CalendarInUse,
    Conflict,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    QuotaExceeded,
    SecretInUse,
)
from chronoq.domain.jobs import JobPatch, JobSpec, JobState
from chronoq.domain.notifications import signing_secret
from chronoq.domain.parameters import RunRequest
from chronoq.domain.reruns import RerunRequest
from chronoq.domain.runs import Run
from chronoq.domain.schedules import AfterSchedule, Schedule, describe_after, preview
from chronoq.domain.time import IsoInstant, format_instant, utc_now
from chronoq.http_api import (
    CONFLICT,
    INVALID_FIELD,
    LIMIT_EXCEEDED,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    QUOTA_EXCEEDED,
    UNAUTHORIZED,
    ApiError,
    as_json_body,
    check_body,
    is_http_api_event,
    validation_error,
)
from chronoq.origin import ForeignInvocation, refuse_client_context
from chronoq.resolver import HttpResolver
from chronoq.resources import SIGNATURE_HEADER
from chronoq.settings import ApiSettings, load
from chronoq.usecases import bulk, idempotency
from chronoq.usecases.calendars import resolve as resolve_calendar
from chronoq.usecases.pages import Listing
from chronoq.usecases.runs import run_filter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

logger = Logger(service="chronoq-api")
app = HttpResolver(enable_validation=True)
service = compose.api(load(ApiSettings))


class Unauthorized(Exception):
    pass


def view(model: BaseModel) -> dict[str, Any]:
    """The API's JSON form of a job or run (internal bookkeeping left out: a run's ``notify``
    mark; a job's ``notify`` is its notify block, and shown)."""
    internal = {"generation", "notify"} if isinstance(model, Run) else {"generation", "runs_before"}
    shown = model.model_dump(mode="json", exclude=internal)
    # --- completion triggers: shown where they are (an after job's upstreams, a followed
    # job's downstreams, an after job's run's upstream runs); the followers' ids are internal
    shown.pop("followed_by", None)
    for name in ("upstreams", "downstreams", "triggered_by", "triggered"):
        if name in shown and shown[name] is None:
            del shown[name]
    if shown.get("cascade") is False:  # (shown on the runs of a cascade only)
        del shown["cascade"]
    return shown


def _owner() -> str:
    claims = app.current_event.request_context.authorizer.jwt_claim or {}
    owner = claims.get("sub")
    if not owner or owner == r.SYSTEM_OWNER:  # (the heartbeat's owner: no caller is)
        raise Unauthorized()
    return str(owner)


def _by() -> Caller:
    """Who makes this request, from what, and its request id: what an audit entry keeps."""
    event = app.current_event
    claims = event.request_context.authorizer.jwt_claim or {}
    return Caller.of(claims, event.headers.get("user-agent"), event.request_context.request_id)


def _once(owner: str, request: Any, act: Callable[[], dict[str, Any]]) -> tuple[Any, Any]:
    """``act``'s answer, or, for a request repeated with its Idempotency-Key, the first's."""
    key = app.current_event.headers.get(idempotency.HEADER)
    answer, replayed = service.idempotency.once(owner, key, request, act)
    return answer, {"Idempotent-Replayed": "true"} if replayed else None


def _listing(name: str, listing: Listing[Any]) -> dict[str, Any]:
    """A page: its items, and ``next_token`` when more may follow."""
    page: dict[str, Any] = {name: [view(item) for item in listing.items]}
    if listing.next_token is not None:
        page["next_token"] = listing.next_token
    return page


Limit = Annotated[int, Query(ge=1, le=r.MAX_PAGE_LIMIT)]
NextToken = Annotated[str | None, Query(max_length=pages.MAX_TOKEN_CHARS)]

# --- labels ---------------------------------------------------------------------------------

LabelQuery = Annotated[
    list[str] | None,
    Query(
        max_length=lim.MAX_LABELS,
        description="key=value: only the jobs with this label (repeat it for several: a job"
        " must carry every one)",
    ),
]


def _labels(given: list[str] | None) -> tuple[labels.Selector, ...]:
    try:
        return labels.selectors(given)
    except ValueError as error:
        raise InvalidRequest("label", str(error)) from None


@app.post(
    "/jobs",
    summary="Create a job",
    responses=doc.responses(201, doc.Job, "The job, stored", *doc.BODY, 403, 409),
    openapi_extensions={doc.IDEMPOTENT: True},
)
def create_job(spec: Annotated[JobSpec, Body(embed=False)]) -> Response[dict[str, Any]]:
    owner = _owner()
    request = {"route": "POST /jobs", "body": spec.model_dump(mode="json")}
    by = _by()
    answer, headers = _once(owner, request, lambda: view(service.jobs.create_job(owner, spec, by)))
    return Response(201, "application/json", answer, headers=_warned(spec, headers))


def _warned(spec: JobSpec, headers: dict[str, str] | None) -> dict[str, str] | None:
    """``headers``, with a ``Warning`` naming each credential the job holds in plain text."""
    warning = secrets.warning_header(spec.plain_credentials())
    return headers if warning is None else {**(headers or {}), "Warning": warning}


@app.get(
    "/jobs",
    summary="List the caller's jobs, a page at a time",
    responses=doc.responses(200, doc.JobPage, "A page of jobs, oldest first", 422),
)
def list_jobs(
    limit: Limit = r.DEFAULT_PAGE_LIMIT,
    next_token: NextToken = None,
    state: Annotated[JobState | None, Query()] = None,
    label: LabelQuery = None,
    silent: Annotated[
        bool | None,
        Query(
            description="true: only the jobs that are silent (their expect not met: no run"
            " SUCCEEDED within expect.success_within_seconds), longest silent first"
        ),
    ] = None,
) -> dict[str, Any]:
    owner = _owner()
    listing = service.jobs.page_jobs(
        owner, limit, next_token, state, _labels(label), silent=bool(silent)
    )
    return _listing("jobs", listing)


@app.get(
    "/jobs/<job_id>",
    summary="Get a job",
    responses=doc.responses(200, doc.Job, "The job", 404),
)
def get_job(job_id: str) -> dict[str, Any]:
    return view(service.jobs.get_job(_owner(), job_id))


@app.patch(
    "/jobs/<job_id>",
    summary="Change a job",
    responses=doc.responses(200, doc.Job, "The job, changed", *doc.BODY, 404, 409),
)
def update_job(
    job_id: str, patch: Annotated[JobPatch, Body(embed=False)]
) -> Response[dict[str, Any]]:
    job = service.jobs.update_job(_owner(), job_id, patch, _by())
    return Response(200, "application/json", view(job), headers=_warned(job, None))


@app.delete(
    "/jobs/<job_id>",
    summary="Delete a job (a run already executing finishes)",
    responses=doc.responses(204, None, "Deleted", 404),
)
def delete_job(job_id: str) -> Response[str]:
    service.jobs.delete_job(_owner(), job_id, _by())
    return Response(204, None, "")  # no content: no Content-Type


@app.post(
    "/jobs/<job_id>/pause",
    summary="Pause a job",
    responses=doc.responses(200, doc.Job, "The job, paused", 404, 409),
)
def pause_job(job_id: str) -> dict[str, Any]:
    return view(service.jobs.pause_job(_owner(), job_id, _by()))


@app.post(
    "/jobs/<job_id>/resume",
    summary="Resume a job",
    responses=doc.responses(200, doc.Job, "The job, resumed", 404, 409),
)
def resume_job(job_id: str) -> dict[str, Any]:
    return view(service.jobs.resume_job(_owner(), job_id, _by()))


# --- many jobs at once: pause and resume by label (chronoq.usecases.bulk) -------------------

SelectorQuery = Annotated[
    list[str] | None,
    Query(
        max_length=lim.MAX_LABELS,
        description="key=value (required): the caller's jobs with this label (repeat it for"
        " several: a job must carry every one)",
    ),
]


def _bulk(
    action: bulk.Action, label: list[str] | None, limit: int, token: str | None
) -> dict[str, Any]:
    listing = bulk.act_on_labelled(
        service.jobs, action, _owner(), _labels(label), limit, token, _by()
    )
    done = "paused" if action is bulk.Action.PAUSE else "resumed"
    page: dict[str, Any] = {
        done: [o.view() for o in listing.items if o.skipped is None],
        "skipped": [o.view() for o in listing.items if o.skipped is not None],
    }
    if listing.next_token is not None:
        page["next_token"] = listing.next_token
    return page


@app.post(
    "/jobs/pause",
    summary="Pause the caller's jobs that carry every label given, a page at a time",
    responses=doc.responses(200, doc.PausedPage, "The jobs paused, and those skipped", 422),
)
def pause_jobs(
    label: SelectorQuery = None, limit: Limit = r.DEFAULT_PAGE_LIMIT, next_token: NextToken = None
) -> dict[str, Any]:
    return _bulk(bulk.Action.PAUSE, label, limit, next_token)


@app.post(
    "/jobs/resume",
    summary="Resume the caller's paused jobs that carry every label given, a page at a time",
    responses=doc.responses(200, doc.ResumedPage, "The jobs resumed, and those skipped", 422),
)
def resume_jobs(
    label: SelectorQuery = None, limit: Limit = r.DEFAULT_PAGE_LIMIT, next_token: NextToken = None
) -> dict[str, Any]:
    return _bulk(bulk.Action.RESUME, label, limit, next_token)


@app.post(
    "/jobs/<job_id>/trigger",
    summary="Run a job now, outside its schedule",
    responses=doc.responses(202, doc.Run, "The run, scheduled", 404, 409, 422),
    openapi_extensions={doc.IDEMPOTENT: True},
)
def trigger_job(
    job_id: str, body: Annotated[RunRequest | None, Body(embed=False)] = None
) -> Response[dict[str, Any]]:
    owner = _owner()
    given = body or RunRequest()  # (run parameters: an optional body)
    request = {"route": "POST /jobs/{id}/trigger", "job_id": job_id, **_keyed(given)}
    by = _by()
    answer, headers = _once(
        owner,
        request,
        lambda: view(service.jobs.trigger_job(owner, job_id, by, given.parameters)),
    )
    return Response(202, "application/json", answer, headers=headers)


@app.post(
    "/runs/<run_id>/cancel",
    summary="Cancel a run",
    responses=doc.responses(200, doc.Run, "The run, cancelled", 404, 409),
)
def cancel_run(run_id: str) -> dict[str, Any]:
    return view(service.runs.cancel_run(_owner(), run_id))


class RunRerunRequest(RunRequest):
    """The optional body of ``POST /runs/{id}/rerun``: a run's parameters, and (completion
    triggers) whether the re-run's end triggers the jobs following its job again."""

    cascade: bool = Field(default=False, strict=True)


class PreviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schedule: Schedule
    count: int = Field(default=10, ge=1, le=100, strict=True)
    #: One of the caller's jobs: the start times within the schedule's window are that job's.
    job_id: str | None = Field(default=None, min_length=1, max_length=100)


@app.post(
    "/schedules/preview",
    summary="The next fire times of a schedule, and when a job's runs start (nothing is stored)",
    responses=doc.responses(200, doc.Preview, "The fire times", *doc.BODY, 404),
)
def preview_schedule(request: Annotated[PreviewRequest, Body(embed=False)]) -> dict[str, Any]:
    owner = _owner()
    if request.job_id is not None:
        service.jobs.get_job(owner, request.job_id)  # (404 unless it is the caller's)
    now = utc_now()
    windows.check(request.schedule, now)
    schedule = resolve_calendar(service.calendars.store, owner, request.schedule)
    fires = preview(schedule, now, request.count)
    shown: dict[str, Any] = {"fire_times": windows.preview(request.schedule, fires, request.job_id)}
    if isinstance(request.schedule, AfterSchedule):  # (completion triggers: no fire times)
        shown["description"] = describe_after(request.schedule.jobs)
    return shown


Status = Annotated[str | None, Query(max_length=200)]
Instant = Annotated[IsoInstant | None, Query()]
BackfillId = Annotated[str | None, Query(min_length=1, max_length=40)]


@app.get(
    "/jobs/<job_id>/runs",
    summary="List a job's runs, newest first, a page at a time",
    responses=doc.responses(200, doc.RunPage, "A page of runs", 404, 422),
)
def list_runs(
    job_id: str,
    limit: Limit = r.DEFAULT_PAGE_LIMIT,
    next_token: NextToken = None,
    status: Status = None,
    since: Instant = None,
    until: Instant = None,
    backfill_id: BackfillId = None,
) -> dict[str, Any]:
    where = run_filter(status, since, until, backfill_id)
    return _listing("runs", service.runs.page_job_runs(_owner(), job_id, limit, next_token, where))


@app.get(
    "/runs",
    summary="List a job's runs by its id, even once the job is deleted",
    responses=doc.responses(200, doc.RunPage, "A page of runs (none for another owner's job)", 422),
)
def list_runs_of_job(
    job_id: Annotated[str, Query(min_length=1, max_length=100)],
    limit: Limit = r.DEFAULT_PAGE_LIMIT,
    next_token: NextToken = None,
    status: Status = None,
    since: Instant = None,
    until: Instant = None,
    backfill_id: BackfillId = None,
) -> dict[str, Any]:
    """A job's runs, even once the job is deleted (until they expire)."""
    where = run_filter(status, since, until, backfill_id)
    return _listing("runs", service.runs.page_runs(_owner(), job_id, limit, next_token, where))


@app.get(
    "/runs/<run_id>",
    summary="Get a run",
    responses=doc.responses(200, doc.Run, "The run", 404),
)
def get_run(run_id: str) -> dict[str, Any]:
    run = service.runs.get_run(_owner(), run_id)
    return view(service.jobs.pipelines.with_triggered(run))  # (completion triggers)


@app.get(
    "/runs/<run_id>/output",
    summary="A run's output (the JSON its target returned)",
    responses=doc.responses(200, None, "The output, as the target returned it", 404),
)
def get_run_output(run_id: str) -> Response[str]:
    return Response(200, "application/json", service.runs.run_output(_owner(), run_id))


@app.get(
    "/runs/<run_id>/logs",
    summary="A run's log lines",
    responses=doc.responses(200, doc.RunLogs, "The log lines", 404),
)
def get_run_logs(run_id: str) -> dict[str, Any]:
    return {"run_id": run_id, "lines": service.runs.run_logs(_owner(), run_id)}


@app.get(
    "/jobs/<job_id>/audit",
    summary="A job's audit trail: every change made to it, newest first, a page at a time"
    " (also once the job is deleted)",
    responses=doc.responses(200, doc.AuditPage, "A page of the job's audit entries", 404, 422),
)
def list_audit(
    job_id: str, limit: Limit = r.DEFAULT_PAGE_LIMIT, next_token: NextToken = None
) -> dict[str, Any]:
    return _listing("entries", service.audit.page(_owner(), job_id, limit, next_token))


# --- run parameters: the optional body of a trigger or a run's re-run (RunRequest) ----------


def _keyed(given: RunRequest) -> dict[str, Any]:
    """What an idempotency key compares of the body: its parameters, when it has some."""
    return {"body": given.model_dump(mode="json")} if given.parameters is not None else {}


# --- run features: backfills and re-runs -----------------------------------------------------


@app.post(
    "/jobs/<job_id>/backfill",
    summary="Run the job's schedule over a past range, paced",
    responses=doc.responses(
        202, doc.Backfill, "The backfill, started", *doc.BODY, 404, 409, limited=True
    ),
    openapi_extensions={doc.IDEMPOTENT: True},
)
def backfill_job(
    job_id: str, request: Annotated[BackfillRequest, Body(embed=False)]
) -> Response[dict[str, Any]]:
    owner = _owner()
    body = request.model_dump(mode="json", by_alias=True)
    key = {"route": "POST /jobs/{id}/backfill", "job_id": job_id, "body": body}
    by = _by()
    answer, headers = _once(
        owner, key, lambda: service.backfills.create(owner, job_id, request, by).view()
    )
    return Response(202, "application/json", answer, headers=headers)


@app.get(
    "/jobs/<job_id>/backfills",
    summary="List a job's backfills, newest first, a page at a time",
    responses=doc.responses(200, doc.BackfillPage, "A page of backfills", 404, 422),
)
def list_backfills(
    job_id: str, limit: Limit = r.DEFAULT_PAGE_LIMIT, next_token: NextToken = None
) -> dict[str, Any]:
    listing = service.backfills.page(_owner(), job_id, limit, next_token)
    page: dict[str, Any] = {"backfills": [b.view() for b in listing.items]}
    if listing.next_token is not None:
        page["next_token"] = listing.next_token
    return page


@app.get(
    "/jobs/<job_id>/backfills/<backfill_id>",
    summary="Get a backfill, with how many of its runs are in each status",
    responses=doc.responses(200, doc.Backfill, "The backfill", 404),
)
def get_backfill(job_id: str, backfill_id: str) -> dict[str, Any]:
    return service.backfills.get(_owner(), job_id, backfill_id)


@app.post(
    "/jobs/<job_id>/backfills/<backfill_id>/cancel",
    summary="Cancel a backfill: no further run, and its runs not ended cancelled",
    responses=doc.responses(200, doc.Backfill, "The backfill, cancelled", 404, 409),
)
def cancel_backfill(job_id: str, backfill_id: str) -> dict[str, Any]:
    return service.backfills.cancel(_owner(), job_id, backfill_id, _by())


@app.post(
    "/runs/<run_id>/rerun",
    summary="Run again a run that ended (same job and fire time)",
    responses=doc.responses(202, doc.Run, "The new run, scheduled", 404, 409, 422, limited=True),
    openapi_extensions={doc.IDEMPOTENT: True},
)
def rerun_run(
    run_id: str, body: Annotated[RunRerunRequest | None, Body(embed=False)] = None
) -> Response[dict[str, Any]]:
    owner = _owner()
    given = body or RunRerunRequest()  # (run parameters, cascade: an optional body)
    key = {"route": "POST /runs/{id}/rerun", "run_id": run_id, **_keyed(given)}
    if given.cascade:  # (completion triggers)
        key["cascade"] = "true"
    by = _by()
    answer, headers = _once(
        owner,
        key,
        lambda: view(service.reruns.rerun_run(owner, run_id, by, given.parameters, given.cascade)),
    )
    return Response(202, "application/json", answer, headers=headers)


@app.post(
    "/jobs/<job_id>/rerun",
    summary="Run again every run of a range that ended with one of the given statuses",
    responses=doc.responses(
        202, doc.Reruns, "The new runs, scheduled", *doc.BODY, 404, 409, limited=True
    ),
    openapi_extensions={doc.IDEMPOTENT: True},
)
def rerun_job(
    job_id: str, request: Annotated[RerunRequest, Body(embed=False)]
) -> Response[dict[str, Any]]:
    owner = _owner()
    body = request.model_dump(mode="json", by_alias=True)
    key = {"route": "POST /jobs/{id}/rerun", "job_id": job_id, "body": body}
    by = _by()
    answer, headers = _once(
        owner,
        key,
        lambda: {
            "runs": [view(run) for run in service.reruns.rerun_job(owner, job_id, request, by)]
        },
    )
    return Response(202, "application/json", answer, headers=headers)


@app.get(
    "/notifications/secret",
    summary="The caller's webhook signing secret",
    responses=doc.responses(200, doc.SigningSecret, "The secret and the header it signs"),
)
def get_signing_secret() -> dict[str, Any]:
    owner = _owner()
    secret = signing_secret(service.master_secret(), owner)
    return {"owner": owner, "header": SIGNATURE_HEADER, "secret": secret}


@app.put(
    "/secrets/<name>",
    summary="Keep a secret's value (a new secret, or its new version)",
    responses=doc.responses(200, doc.Secret, "The secret, its value changed", *doc.BODY)
    | doc.responses(201, doc.Secret, "The secret, made", limited=True),
)
def put_secret(
    name: str, body: Annotated[doc.SecretValue, Body(embed=False)]
) -> Response[dict[str, Any]]:
    secret, made = service.secrets.put(_owner(), name, body.value)
    return Response(201 if made else 200, "application/json", secret.model_dump(mode="json"))


@app.get(
    "/secrets",
    summary="The caller's secrets: names, versions, when each changed (never values)",
    responses=doc.responses(200, doc.SecretPage, "The secrets, by name"),
)
def list_secrets() -> dict[str, Any]:
    return {"secrets": [s.model_dump(mode="json") for s in service.secrets.list(_owner())]}


@app.delete(
    "/secrets/<name>",
    summary="Delete a secret no job names",
    responses=doc.responses(204, None, "Deleted", 404, 409),
)
def delete_secret(name: str) -> Response[str]:
    service.secrets.delete(_owner(), name)
    return Response(204, None, "")


# --- business calendars ------------------------------------------------------------------


@app.put(
    "/calendars/<name>",
    summary="Keep a business calendar (a new one, or its next version), and re-plan the first"
    " page of the jobs using it",
    responses=doc.responses(200, doc.CalendarPut, "The calendar, changed", *doc.BODY, 409)
    | doc.responses(201, doc.CalendarPut, "The calendar, made", limited=True),
)
def put_calendar(
    name: str, body: Annotated[Calendar, Body(embed=False)]
) -> Response[dict[str, Any]]:
    meta, made, replan = service.calendars.put(_owner(), name, body)
    answer = {**meta.shown(), "replan": replan}
    return Response(201 if made else 200, "application/json", answer)


@app.get(
    "/calendars",
    summary="The caller's business calendars",
    responses=doc.responses(200, doc.CalendarPage, "The calendars, by name"),
)
def list_calendars() -> dict[str, Any]:
    return {"calendars": [c.shown() for c in service.calendars.all(_owner())]}


@app.get(
    "/calendars/<name>",
    summary="A business calendar, and the jobs using it",
    responses=doc.responses(200, doc.CalendarUsers, "The calendar", 404),
)
def get_calendar(name: str) -> dict[str, Any]:
    owner = _owner()
    meta = service.calendars.get(owner, name)
    return {**meta.shown(), "jobs": service.calendars.users(owner, name)}


class ReplanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    next_token: str | None = Field(default=None, max_length=100)


@app.post(
    "/calendars/<name>/replan",
    summary="Re-plan the next page of the jobs using a calendar on its current rules",
    responses=doc.responses(200, doc.CalendarReplan, "What was re-planned", *doc.BODY, 404),
)
def replan_calendar(
    name: str, request: Annotated[ReplanRequest, Body(embed=False)]
) -> dict[str, Any]:
    return service.calendars.replan(_owner(), name, request.next_token)


@app.delete(
    "/calendars/<name>",
    summary="Delete a business calendar no job uses",
    responses=doc.responses(204, None, "Deleted", 404, 409),
)
def delete_calendar(name: str) -> Response[str]:
    service.calendars.delete(_owner(), name)
    return Response(204, None, "")


ArchiveDay = Annotated[
    str,
    Query(
        min_length=10,
        max_length=10,
        description="a day (UTC), YYYY-MM-DD: the runs whose fire time falls in it",
    ),
]
ArchiveLimit = Annotated[int, Query(ge=1, le=r.MAX_ARCHIVE_PAGE_LIMIT)]
ArchiveToken = Annotated[str | None, Query(max_length=100)]
ArchiveKind = Annotated[
    str,
    Query(
        max_length=10,
        description="runs (the default): the day's runs; audit: its audit entries (of the"
        " day of their ``at``)",
    ),
]


@app.get(
    "/archive",
    summary="The caller's archived runs (or audit entries) of a day: its objects, as links"
    " that expire",
    responses=doc.responses(200, doc.ArchivePage, "A page of the day's objects", 422),
)
def list_archive(
    day: ArchiveDay,
    limit: ArchiveLimit = r.DEFAULT_ARCHIVE_PAGE_LIMIT,
    next_token: ArchiveToken = None,
    kind: ArchiveKind = "runs",
) -> dict[str, Any]:
    owner = _owner()
    try:
        parsed = archive.parse_day(day)
    except ValueError as error:
        raise InvalidRequest("day", str(error)) from None
    listing = service.archive.day(owner, parsed, limit, next_token, kind)
    page: dict[str, Any] = {
        "day": parsed.isoformat(),
        "kind": kind,
        "objects": [
            {
                "name": link.name,
                "size": link.size,
                "url": link.url,
                "expires_at": format_instant(link.expires_at),
            }
            for link in listing.items
        ],
    }
    if listing.next_token is not None:
        page["next_token"] = listing.next_token
    return page


@app.get(
    "/limits",
    summary="The caller's limits, and how much of each is used",
    responses=doc.responses(200, doc.OwnerLimits, "Each limit and its use"),
)
def get_limits() -> dict[str, Any]:
    return service.jobs.limits_of(_owner())


@app.get(
    "/status",
    summary="The deployment's heartbeat: its last run, last success and start lag",
    responses=doc.responses(200, doc.Status, "How the heartbeat goes"),
)
def get_status() -> dict[str, Any]:
    _owner()
    return heartbeat.status(service.runs.store, utc_now())


@app.get(
    "/openapi.json",
    summary="This document (also in the repository as openapi.json)",
    responses=doc.responses(200, None, "The OpenAPI 3.1 document of this API"),
)
def get_openapi_document() -> Response[dict[str, Any]]:
    _owner()
    return Response(200, "application/json", _document())


@cache
def _document() -> dict[str, Any]:
    return doc.document(app)


def _error(error: ApiError, headers: dict[str, str] | None = None) -> Response[dict[str, Any]]:
    return Response(error.status, "application/json", error.body(), headers=headers)


@app.exception_handler(RequestValidationError)
def _invalid(error: RequestValidationError) -> Response[dict[str, Any]]:
    return _error(validation_error(error.errors()))


@app.exception_handler(ValidationError)
def _invalid_change(error: ValidationError) -> Response[dict[str, Any]]:
    return _error(validation_error(error.errors()))


@app.exception_handler(Conflict)
def _conflict(error: Conflict) -> Response[dict[str, Any]]:
    jobs = error.jobs if isinstance(error, SecretInUse | CalendarInUse) else None
    return _error(ApiError(409, CONFLICT, str(error), getattr(error, "field", None), jobs=jobs))


@app.exception_handler(InvalidRequest)
def _rejected(error: InvalidRequest) -> Response[dict[str, Any]]:
    return _error(ApiError(422, INVALID_FIELD, error.message, error.field))


@app.exception_handler(LimitExceeded)
def _limit(error: LimitExceeded) -> Response[dict[str, Any]]:
    if error.retry_after is None:  # it can never fit as asked
        return _error(ApiError(422, LIMIT_EXCEEDED, error.message, error.field, error.limit))
    refused = ApiError(429, LIMIT_EXCEEDED, error.message, error.field, error.limit)
    return _error(refused, {"Retry-After": str(error.retry_after)})


@app.exception_handler(QuotaExceeded)
def _quota(error: QuotaExceeded) -> Response[dict[str, Any]]:
    return _error(ApiError(403, QUOTA_EXCEEDED, str(error)))


@app.exception_handler(NotFound)
def _not_found(error: NotFound) -> Response[dict[str, Any]]:
    return _error(ApiError(404, NOT_FOUND, str(error)))


@app.exception_handler(Unauthorized)
def _unauthorized(_: Unauthorized) -> Response[dict[str, Any]]:
    return _error(ApiError(401, UNAUTHORIZED, "Unauthorized"))


def _allowed(path: str) -> list[str]:
    """The methods routed on ``path``: a path of its own (``/jobs/pause``) is its routes'
    alone, never those of a pattern it also matches (``/jobs/{job_id}``)."""
    static = {route.method for route in app._static_routes if route.rule.match(path)}
    dynamic = {route.method for route in app._dynamic_routes if route.rule.match(path)}
    return sorted(static or dynamic)


def _not_allowed(allowed: list[str]) -> Response[dict[str, Any]]:
    event = app.current_event
    message = f"{event.http_method} is not allowed on {event.path}"
    return _error(ApiError(405, METHOD_NOT_ALLOWED, message), {"Allow": ", ".join(allowed)})


def _refused_on_own_path(event: dict[str, Any]) -> dict[str, Any] | None:
    """A method a path of its own does not route is refused there (405), before any route
    or validation sees it: ``DELETE /jobs/pause`` is not a job's delete."""
    path = event.get("rawPath") or "/"
    method = ((event.get("requestContext") or {}).get("http") or {}).get("method", "")
    static = sorted({route.method for route in app._static_routes if route.rule.match(path)})
    if not static or method in static:
        return None
    error = ApiError(405, METHOD_NOT_ALLOWED, f"{method} is not allowed on {path}")
    return {
        "statusCode": error.status,
        "headers": {"Content-Type": "application/json", "Allow": ", ".join(static)},
        "body": json.dumps(error.body()),
        "isBase64Encoded": False,
    }


@app.not_found
def _no_route(_: Exception) -> Response[dict[str, Any]]:
    """404 for a path no route has; 405 (with Allow) for one that routes other methods."""
    allowed = _allowed(app.current_event.path)
    if allowed:
        return _not_allowed(allowed)
    return _error(ApiError(404, NOT_FOUND, f"no route {app.current_event.path}"))


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not API Gateway
    if not is_http_api_event(event):
        raise ForeignInvocation("the api function takes API Gateway HTTP API (2.0) events")
    refused = check_body(event)  # before anything parses the body
    if refused is not None:
        return {
            "statusCode": refused.status,
            "headers": {"Content-Type": "application/json"},
            "body": json.dumps(refused.body()),
            "isBase64Encoded": False,
        }
    return _refused_on_own_path(event) or app.resolve(as_json_body(event), context)
