"""Each function's settings: exactly the variables its definition gives it, checked at cold
start with an error naming the function and the variable."""

from __future__ import annotations

from dataclasses import fields

import pytest
from chronoq import compose
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.limits import Limits
from chronoq.domain.runs import RunStatus
from chronoq.settings import (
    SETTINGS,
    ApiSettings,
    FunctionSettings,
    NotifierSettings,
    RunnerSettings,
    SettingsError,
    WorkerSettings,
    environment,
    load,
)

from tests.unit.api_on_fakes import ENVIRONMENT

WORKER_ENV = {
    r.ENV_JOBS_TABLE: "jobs",
    r.ENV_RUNS_TABLE: "runs",
    r.ENV_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:run",
    r.ENV_EXPRESS_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:fast",
    **{
        name: f"https://sqs.us-east-1.amazonaws.com/123456789012/{p}"
        for p, name in r.ENV_QUEUE_URLS.items()
    },
}


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.FUNCTION.name)
def test_given_a_functions_settings_when_compared_with_its_definition_then_they_read_exactly_its_variables(
    settings: type[FunctionSettings],
) -> None:
    aliases = {field.alias for field in settings.model_fields.values()}

    # (besides the variables only chronoq local gives, which no stack sets)
    assert aliases - set(r.LOCAL_ONLY_ENV) == set(settings.FUNCTION.env)


def test_given_every_function_when_listed_then_each_has_settings() -> None:
    assert {s.FUNCTION.name for s in SETTINGS} == {f.name for f in r.FUNCTIONS}


def test_given_a_missing_variable_when_loaded_then_the_error_names_the_function_and_variable() -> (
    None
):
    without = {k: v for k, v in WORKER_ENV.items() if k != r.ENV_STATE_MACHINE_ARN}

    with pytest.raises(SettingsError, match=f"function worker: {r.ENV_STATE_MACHINE_ARN}: missing"):
        load(WorkerSettings, without)


def test_given_an_empty_required_variable_when_loaded_then_it_is_refused() -> None:
    with pytest.raises(SettingsError, match=r.ENV_JOBS_TABLE):
        load(WorkerSettings, {**WORKER_ENV, r.ENV_JOBS_TABLE: ""})


def test_given_variables_of_other_functions_when_loaded_then_they_are_not_seen() -> None:
    settings = load(WorkerSettings, {**WORKER_ENV, r.ENV_TOPIC_ARN: "arn:aws:sns:x"})

    assert settings.model_dump() == {
        "jobs_table": "jobs",
        "runs_table": "runs",
        "state_machine_arn": WORKER_ENV[r.ENV_STATE_MACHINE_ARN],
        "express_state_machine_arn": WORKER_ENV[r.ENV_EXPRESS_STATE_MACHINE_ARN],
        **{f"queue_url_{p}": WORKER_ENV[name] for p, name in r.ENV_QUEUE_URLS.items()},
        "max_asked_runs_in_flight": lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT,
        "max_runs_in_flight": lim.DEFAULT_MAX_RUNS_IN_FLIGHT,
    }


def test_given_lists_when_loaded_then_they_are_split_and_a_star_means_any_bucket() -> None:
    runner = load(
        RunnerSettings,
        {
            r.ENV_TASK_MODULES: " mytasks.a, mytasks.b ,",
            r.ENV_RUNS_TABLE: "runs",
            r.ENV_OUTPUT_BUCKET: "out",
            r.ENV_CONTAINER_LOG_GROUP: "/logs",
            r.ENV_CONTAINER_EXECUTION_ROLE_ARN: "arn:exec",
            r.ENV_CONTAINER_TASK_ROLE_ARN: "arn:task",
            r.ENV_JOBS_TABLE: "jobs",
            r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
        },
    )
    assert runner.task_modules == ("mytasks.a", "mytasks.b")
    with pytest.raises(SettingsError, match=r.ENV_SHARDS):
        load(ApiSettings, {r.ENV_OUTPUT_BUCKETS: "*"})


def test_given_a_function_environment_when_set_then_settings_read_it_instead_of_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(r.ENV_JOBS_TABLE, "from-the-process")

    with environment({**WORKER_ENV, r.ENV_JOBS_TABLE: "from-the-function"}):
        inside = load(WorkerSettings)

    assert inside.jobs_table == "from-the-function"
    with pytest.raises(SettingsError):
        load(WorkerSettings)  # the process lacks the others


NOTIFIER_ENV = {
    r.ENV_JOBS_TABLE: "jobs",
    r.ENV_RUNS_TABLE: "runs",
    r.ENV_SCHEDULE_TABLE: "schedule",
    r.ENV_SHARDS: "4",
    r.ENV_TOPIC_ARN: "arn:aws:sns:us-east-1:123456789012:runs",
    r.ENV_SIGNING_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:s",
    r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
    **{name: WORKER_ENV[name] for name in r.ENV_QUEUE_URLS.values()},
}


def test_given_no_topic_statuses_when_the_notifier_loads_then_the_topic_hears_of_failures_timeouts_and_misses() -> (
    None
):
    settings = load(NotifierSettings, NOTIFIER_ENV)

    assert settings.topic_statuses == {RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.MISSED}
    assert r.DEFAULT_TOPIC_STATUSES == ("FAILED", "TIMED_OUT", "MISSED")


def test_given_topic_statuses_when_the_notifier_loads_then_they_are_split_and_read_in_any_case() -> (
    None
):
    settings = load(
        NotifierSettings, {**NOTIFIER_ENV, r.ENV_TOPIC_STATUSES: " succeeded,FAILED , Cancelled,"}
    )

    assert settings.topic_statuses == {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("FAILED,SUCEEDED", "not a final status: SUCEEDED"),
        ("RUNNING", "not a final status: RUNNING"),  # a status, but not one a run ends in
        ("", "no status named"),
        (" , ", "no status named"),
    ],
)
def test_given_a_wrong_topic_status_when_the_notifier_loads_then_the_error_names_it_and_the_statuses_allowed(
    value: str, problem: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        load(NotifierSettings, {**NOTIFIER_ENV, r.ENV_TOPIC_STATUSES: value})

    message = str(raised.value)
    assert message.startswith(f"function notifier: {r.ENV_TOPIC_STATUSES}: ")
    assert problem in message
    assert "CANCELLED, FAILED, MISSED, SKIPPED, SUCCEEDED, TIMED_OUT" in message


def test_given_owner_limits_in_the_api_environment_when_loaded_then_its_use_cases_get_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deployment's limits reach the backfills and re-runs the API serves (compose.api)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (compose builds its clients)
    limits = Limits(
        running_backfills_per_job=2, running_backfills_per_owner=5, queued_runs_per_owner=99
    )
    settings = load(ApiSettings, {**ENVIRONMENT, **r.owner_limits_environment(limits)})

    assert settings.limits == limits
    assert load(ApiSettings, ENVIRONMENT).limits == Limits()
    api = compose.api(settings)
    assert api.backfills.limits == api.reruns.limits == limits


def test_given_every_owner_limit_changed_when_the_api_loads_its_variables_then_it_reads_each_back() -> (
    None
):
    """Each of the owner's limits has its variable (resources.ENV_OWNER_LIMITS)."""
    defaults = Limits()
    limits = Limits(**{f.name: getattr(defaults, f.name) + 1 for f in fields(Limits)})

    assert load(ApiSettings, {**ENVIRONMENT, **r.owner_limits_environment(limits)}).limits == limits


def test_given_a_deployment_raising_an_owners_runs_asked_for_under_way_when_the_worker_loads_then_its_starter_holds_them_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # (the worker builds its clients)
    settings = load(WorkerSettings, {**WORKER_ENV, r.ENV_MAX_ASKED_RUNS_IN_FLIGHT: "500"})

    assert compose.worker(settings).asked_in_flight == 500
