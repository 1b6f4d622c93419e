"""Secrets on the fakes: a value is kept write-only, jobs may name only their owner's secrets,
one that jobs name is not deleted, and at run time the runner resolves them (the owner's
versions in one read, each value once per version for a bounded time) and scrubs them from
everything the attempt keeps, even when the target echoes them."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import pytest
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.errors import (
    InvalidRequest,
    LimitExceeded,
    NotFound,
    PermanentError,
    SecretInUse,
    TargetError,
)
from chronoq.domain.jobs import JobPatch
from chronoq.domain.limits import Limits
from chronoq.domain.secrets import SecretUnavailable
from chronoq.domain.time import format_instant
from chronoq.execution.contract import AttemptRequest, CollectRequest
from chronoq.execution.egress import Egress
from chronoq.fakes.secrets import FakeSecretValues
from chronoq.usecases.attempts import ContainerSettings, Runner
from chronoq.usecases.secrets import Resolver

from tests.builders import OWNER, Fakes, job_spec
from tests.support import http_sink
from tests.unit.usecases.helpers import started_run

TOKEN = "tok-5f3a9c1e77b2"
OTHER = "p@ss w&rd/ü"


def values(fakes: Fakes) -> FakeSecretValues:
    store = fakes.secret_values
    assert isinstance(store, FakeSecretValues)
    return store


def stored_text(fakes: Fakes) -> str:
    """Everything the fake tables hold, as text."""
    tables = [fakes.store.jobs, fakes.store.runs, fakes.store.secrets, fakes.store.schedule]
    return repr(tables) + repr(fakes.artifacts.__dict__)


# --- keeping secrets ----------------------------------------------------------------------------


def test_given_a_value_when_put_twice_then_the_version_moves_on_and_only_the_value_store_holds_it(
    fakes: Fakes,
) -> None:
    made, new = fakes.secrets.put(OWNER, "crm-token", TOKEN)
    changed, again = fakes.secrets.put(OWNER, "crm-token", TOKEN + "-2")

    assert (made.version, new, changed.version, again) == (1, True, 2, False)
    assert changed.created_at == made.created_at
    assert [s.name for s in fakes.secrets.list(OWNER)] == ["crm-token"]
    assert values(fakes).values[(OWNER, "crm-token")] == [TOKEN, TOKEN + "-2"]
    assert TOKEN not in stored_text(fakes)
    assert fakes.secrets.list("bob") == []


@pytest.mark.parametrize(
    ("name", "value", "field"),
    [
        ("bad name", TOKEN, "name"),
        ("-x", TOKEN, "name"),
        ("x" * (lim.MAX_SECRET_NAME_LENGTH + 1), TOKEN, "name"),
        ("ok", "abc", "value"),
        ("ok", "x" * (lim.MAX_SECRET_VALUE_BYTES + 1), "value"),
        ("ok", "ab\x00cd", "value"),
    ],
)
def test_given_a_bad_name_or_value_when_put_then_refused_naming_the_field_and_nothing_kept(
    fakes: Fakes, name: str, value: str, field: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        fakes.secrets.put(OWNER, name, value)

    assert refused.value.field == field
    assert values(fakes).values == {}


def test_given_an_owner_at_its_limit_when_another_secret_is_put_then_refused_but_a_new_version_is_kept(
    fakes: Fakes,
) -> None:
    fakes.limits = Limits(secrets_per_owner=2)
    fakes.secrets.put(OWNER, "a", TOKEN)
    fakes.secrets.put(OWNER, "b", TOKEN)

    with pytest.raises(LimitExceeded) as refused:
        fakes.secrets.put(OWNER, "c", TOKEN)

    assert refused.value.limit == "max_secrets_per_owner"
    assert fakes.secrets.put(OWNER, "b", OTHER)[0].version == 2
    assert fakes.secrets.put("bob", "c", TOKEN)[1]


# --- jobs naming secrets ------------------------------------------------------------------------


def http_job(headers: dict[str, Any], **target: Any) -> dict[str, Any]:
    return {"type": "http", "url": "https://example.com/hook", "headers": headers, **target}


def test_given_a_job_naming_a_secret_its_owner_lacks_when_created_then_422_naming_the_field(
    fakes: Fakes,
) -> None:
    fakes.secrets.put("bob", "crm-token", TOKEN)  # (another owner's is not found)
    spec = job_spec(target=http_job({"X-Key": {"secret": "crm-token"}}))

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.create_job(OWNER, spec)

    assert refused.value.field == "target.headers.X-Key"
    assert fakes.store.jobs == {}
    assert fakes.store.names == {}


def test_given_jobs_naming_a_secret_when_it_is_deleted_then_409_naming_them_until_they_no_longer_do(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "crm-token", TOKEN)
    uses = fakes.jobs.create_job(
        OWNER, job_spec(target=http_job({"Authorization": "Bearer {{ secret.crm-token }}"}))
    )
    also = fakes.jobs.create_job(
        OWNER, job_spec(target=http_job({}, body={"key": "{{secret.crm-token}}"}), name="also")
    )

    with pytest.raises(SecretInUse) as refused:
        fakes.secrets.delete(OWNER, "crm-token")
    assert sorted(refused.value.jobs) == sorted([uses.id, also.id])
    fakes.jobs.update_job(
        OWNER, uses.id, JobPatch.model_validate({"target": http_job({"X-Plain": "v"})})
    )
    fakes.jobs.delete_job(OWNER, also.id)

    fakes.secrets.delete(OWNER, "crm-token")

    assert fakes.secrets.list(OWNER) == []
    assert (OWNER, "crm-token") not in values(fakes).values
    with pytest.raises(NotFound):
        fakes.secrets.delete(OWNER, "crm-token")


def test_given_a_job_whose_change_names_a_missing_secret_when_changed_then_refused_and_the_job_as_it_was(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "a", TOKEN)
    job = fakes.jobs.create_job(OWNER, job_spec(target=http_job({"X-A": {"secret": "a"}})))

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.update_job(
            OWNER, job.id, JobPatch.model_validate({"target": http_job({"X-B": "{{ secret.b }}"})})
        )

    assert refused.value.field == "target.headers.X-B"
    assert fakes.store.get_job(job.id) == job
    assert fakes.store.secret_users(OWNER, "a") == [job.id]
    assert fakes.store.secret_users(OWNER, "b") == []


# --- resolving at run time ---------------------------------------------------------------------


class Ticks:
    """A monotonic clock moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_given_a_cached_value_when_its_secret_changes_then_the_next_read_gets_the_new_version(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    resolver = Resolver(fakes.store, fakes.secret_values, Ticks())

    first = [resolver.values_of(OWNER, ["k"]) for _ in range(3)]
    fakes.secrets.put(OWNER, "k", OTHER)
    second = resolver.values_of(OWNER, ["k"])

    assert first == [{"k": TOKEN}] * 3
    assert second == {"k": OTHER}
    assert values(fakes).reads == [(OWNER, "k", 1), (OWNER, "k", 2)]


def test_given_a_cached_value_when_its_time_is_up_then_it_is_read_again_and_a_deleted_secret_is_not_served(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    ticks = Ticks()
    resolver = Resolver(fakes.store, fakes.secret_values, ticks)
    resolver.values_of(OWNER, ["k"])

    ticks.now = r.SECRET_CACHE_SECONDS - 1
    resolver.values_of(OWNER, ["k"])
    ticks.now = r.SECRET_CACHE_SECONDS + 1
    resolver.values_of(OWNER, ["k"])
    values(fakes).values.pop((OWNER, "k"))  # (its value gone, its version still named)
    ticks.now = 2 * r.SECRET_CACHE_SECONDS + 2
    with pytest.raises(SecretUnavailable):
        resolver.values_of(OWNER, ["k"])

    assert values(fakes).reads == [(OWNER, "k", 1)] * 3


def test_given_another_owners_secret_when_resolved_then_it_does_not_exist(fakes: Fakes) -> None:
    fakes.secrets.put("bob", "k", TOKEN)
    resolver = Resolver(fakes.store, fakes.secret_values, Ticks())

    with pytest.raises(SecretUnavailable, match="no longer exists"):
        resolver.values_of(OWNER, ["k"])
    assert values(fakes).reads == []


def no_client() -> NoReturn:
    raise AssertionError("no AWS client is needed")


def runner(fakes: Fakes) -> Runner:
    return Runner(
        artifacts=fakes.artifacts,
        lambda_client=no_client,
        ecs_client=no_client,
        logs_client=no_client,
        containers=ContainerSettings("logs", "execution-role", "task-role"),
        egress=Egress(),
        secrets=Resolver(fakes.store, fakes.secret_values, Ticks()),
    )


def attempt(fakes: Fakes, target: dict[str, Any], **extra: Any) -> Any:
    job, run = started_run(fakes, target=target)
    request = AttemptRequest(
        job_id=job.id,
        run_id=run.id,
        owner=job.owner,
        scheduled_at=format_instant(run.scheduled_at),
        timeout_seconds=30,
        target=job.target,
        **extra,
    )
    return job, run, request


def test_given_an_http_target_naming_secrets_when_it_echoes_them_then_it_got_them_and_nothing_kept_holds_them(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "crm-token", TOKEN)
    fakes.secrets.put(OWNER, "other", OTHER)
    with http_sink() as sink:
        body = json.dumps({"echo": [TOKEN, OTHER], "quoted": "p%40ss%20w%26rd%2F%C3%BC"})
        sink.answer = body.encode()
        target = http_job(
            {"Authorization": "Bearer {{ secret.crm-token }}", "X-Other": {"secret": "other"}},
            url=f"{sink.url}/hook?key={{{{secret.other}}}}",
            body={"token": "{{ secret.crm-token }}", "text": "{{ user.name }}"},
        )
        job, _run, request = attempt(fakes, target)

        result = runner(fakes).attempt(request)

        (hit,) = sink.hits
    assert hit.headers["Authorization"] == f"Bearer {TOKEN}"
    assert hit.headers["X-Other"] == OTHER  # (ü: Latin-1 both ways)
    assert hit.path == "/hook?key=p%40ss%20w%26rd%2F%C3%BC"
    assert json.loads(hit.body) == {"token": TOKEN, "text": "{{ user.name }}"}
    kept = result.output + json.dumps(result.lines())
    for value in (TOKEN, OTHER, "p%40ss%20w%26rd%2F%C3%BC"):
        assert value not in kept
        assert value not in stored_text(fakes)
    assert "***" in result.output
    assert fakes.store.get_job(job.id) is not None
    assert "{{ secret.crm-token }}" in json.dumps(fakes.store.get_job(job.id).target.model_dump())  # type: ignore[union-attr]


def test_given_a_target_failing_with_a_secret_in_its_error_when_attempted_then_the_error_and_log_hold_no_value(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    with http_sink() as sink:
        sink.status = 500
        sink.answer = f"bad token {TOKEN}".encode()
        job, run, request = attempt(fakes, http_job({"X-K": {"secret": "k"}}, url=sink.url))

        with pytest.raises(TargetError) as failed:
            runner(fakes).attempt(request)

    assert TOKEN not in str(failed.value)
    assert "bad token ***" in str(failed.value)
    logs = fakes.artifacts.read_logs(job.id, run.id)
    assert logs
    assert not any(TOKEN in line for line in logs)


@pytest.mark.parametrize(
    ("setup", "error", "reason"),
    [
        (lambda v: v.values.clear(), PermanentError, "no longer exists"),
        (lambda v: v.denied.add("k"), PermanentError, "denied"),
        (lambda v: v.throttled.add("k"), TargetError, "throttled"),
    ],
)
def test_given_a_secret_that_cannot_be_read_when_attempted_then_the_attempt_fails_naming_it(
    fakes: Fakes, setup: Any, error: type[Exception], reason: str
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    _job, _run, request = attempt(fakes, http_job({"X-K": {"secret": "k"}}))
    setup(values(fakes))

    with pytest.raises(error) as failed:
        runner(fakes).attempt(request)

    assert type(failed.value) is error
    assert "secret 'k'" in str(failed.value)
    assert reason in str(failed.value)
    assert TOKEN not in str(failed.value)


def test_given_a_secret_value_that_would_break_a_header_when_attempted_then_it_fails_for_good_naming_the_header(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", "abc\r\nX-Injected: 1")
    _job, _run, request = attempt(fakes, http_job({"X-K": "v {{ secret.k }}"}))

    with pytest.raises(PermanentError, match="header X-K: the value of secret k"):
        runner(fakes).attempt(request)


def test_given_a_python_task_naming_secrets_when_attempted_then_its_arguments_and_environment_hold_them_and_its_output_does_not(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    target = {
        "type": "python",
        "task": "chronoq.tasks:echo",
        "args": {"auth": "Bearer {{ secret.k }}", "kept": "{{ secret.k }}"},
        "environment": {"API_KEY": {"secret": "k"}, "PLAIN": "x"},
    }
    _job, _run, request = attempt(fakes, target)
    seen: list[dict[str, str]] = []

    def record(args: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append({**args, **context.environment})
        return {"args": args}

    from chronoq import tasks

    tasks._registry["chronoq.tasks:echo"], original = record, tasks._registry["chronoq.tasks:echo"]
    try:
        result = runner(fakes).attempt(request)
    finally:
        tasks._registry["chronoq.tasks:echo"] = original

    assert seen == [{"auth": f"Bearer {TOKEN}", "kept": TOKEN, "API_KEY": TOKEN, "PLAIN": "x"}]
    assert TOKEN not in result.output
    assert json.loads(result.output) == {"result": {"args": {"auth": "Bearer ***", "kept": "***"}}}


class StubLogs:
    """CloudWatch Logs as collect_container reads a stopped task's log: one page."""

    class exceptions:
        ResourceNotFoundException = LookupError

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def get_log_events(self, **_: Any) -> dict[str, Any]:
        events = [{"message": line} for line in self.lines]
        self.lines = []
        return {"events": events, "nextForwardToken": "same"}


def test_given_a_container_that_printed_its_secret_when_collected_then_the_runs_log_holds_it_scrubbed(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", TOKEN)
    target = {
        "type": "container",
        "image": "alpine",
        "command": ["env"],
        "environment": {"TOKEN": {"secret": "k"}},
    }
    job, run = started_run(fakes, target=target)
    collector = runner(fakes)
    collector.logs_client = lambda: StubLogs([f"TOKEN={TOKEN}", "done"])  # type: ignore[assignment,return-value]
    request = CollectRequest(
        job_id=job.id,
        run_id=run.id,
        attempt=1,
        task={
            "TaskArn": "arn:aws:ecs:us-east-1:123456789012:task/c/t1",
            "Containers": [{"ExitCode": 0}],
        },
        owner=OWNER,
        target=job.target,
    )

    result = collector.collect_container(request)

    kept = json.dumps(result.lines()) + json.dumps(fakes.artifacts.read_logs(job.id, run.id))
    assert "TOKEN=***" in kept
    assert TOKEN not in kept
