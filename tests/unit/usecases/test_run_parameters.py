"""Run parameters on the fakes: a trigger, a re-run and a backfill pass parameters over the
job's defaults; the run keeps what it runs with (nothing when there is nothing); the worker
hands them to the execution; and the runner puts them, with the run's own values, into the
target at each attempt, checked again there (a value cannot reach chronoq itself, nor pass
for a secret)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

import pytest
from chronoq.aws.codecs import new_run_item
from chronoq.domain.errors import InvalidRequest, PermanentError
from chronoq.domain.network import NetworkPolicy, OwnEndpoints
from chronoq.domain.reruns import RerunRequest
from chronoq.domain.runs import RunMessage, RunStatus
from chronoq.domain.time import format_instant
from chronoq.execution.contract import AttemptRequest, RunValues
from chronoq.execution.egress import Egress
from chronoq.usecases.attempts import ContainerSettings, Runner

from tests.builders import OWNER, Fakes, job_spec
from tests.support import http_sink
from tests.unit.test_container_secrets import REGION, FakeEcs
from tests.unit.usecases.helpers import due_job, finish, mark_running, message, stored
from tests.unit.usecases.test_backfills import backfill_runs, every_ten_minutes, hours_back
from tests.unit.usecases.test_secrets import no_client, runner


def test_given_a_job_with_defaults_when_triggered_with_parameters_then_the_run_keeps_the_overlay_and_its_execution_gets_it(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(parameters={"day": "default", "env": "prod"}))

    run = fakes.jobs.trigger_job(OWNER, job.id, parameters={"day": "2026-11-01"})
    started = fakes.starter.start_run(RunMessage.of(run, fakes.clock()))

    assert started == "started"
    assert stored(fakes, run).parameters == {"day": "2026-11-01", "env": "prod"}
    values = fakes.executor.started[run.id].values
    assert values == RunValues(job_name=job.name, params={"day": "2026-11-01", "env": "prod"})
    assert json.loads(new_run_item(stored(fakes, run), fakes.clock())["parameters"]) == {
        "day": "2026-11-01",
        "env": "prod",
    }


def test_given_a_job_without_defaults_when_triggered_without_parameters_then_nothing_is_kept(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec())

    run = fakes.jobs.trigger_job(OWNER, job.id)

    assert stored(fakes, run).parameters is None
    assert "parameters" not in {
        k for k, v in new_run_item(stored(fakes, run), fakes.clock()).items() if v is not None
    }


def test_given_a_scheduled_run_of_a_job_with_defaults_when_started_then_its_execution_gets_the_defaults(
    fakes: Fakes,
) -> None:
    _job, run = due_job(fakes, parameters={"day": "today"})

    assert fakes.starter.start_run(message(fakes, run)) == "started"

    assert fakes.executor.started[run.id].values.params == {"day": "today"}
    assert mark_running(fakes, run)  # (the state machine's first write)
    assert stored(fakes, run).parameters == {"day": "today"}


def test_given_a_scheduled_run_of_a_job_without_defaults_when_it_runs_then_it_records_none(
    fakes: Fakes,
) -> None:
    _job, run = due_job(fakes)

    assert fakes.starter.start_run(message(fakes, run)) == "started"
    assert fakes.executor.started[run.id].parameters == ""
    assert mark_running(fakes, run)
    assert stored(fakes, run).parameters is None


def test_given_parameters_too_big_with_the_defaults_when_triggered_then_refused_naming_parameters_and_no_run(
    fakes: Fakes,
) -> None:
    half = "x" * 4500
    job = fakes.jobs.create_job(OWNER, job_spec(parameters={"a": half}))

    with pytest.raises(InvalidRequest) as refused:
        fakes.jobs.trigger_job(OWNER, job.id, parameters={"b": half})

    assert refused.value.field == "parameters"
    assert not [r for (j, _), r in fakes.store.runs.items() if j == job.id]


def test_given_a_backfill_with_parameters_when_its_runs_start_then_each_has_them_and_its_own_fire_time(
    fakes: Fakes,
) -> None:
    job = every_ten_minutes(fakes, parameters={"env": "prod"})
    request = hours_back(fakes, 1).model_copy(update={"parameters": {"day": "2026-11-01"}})

    fakes.backfills.create(OWNER, job.id, request)
    made = backfill_runs(fakes, job)
    for run in made:
        assert fakes.starter.start_run(RunMessage.of(run, fakes.clock())) == "started"

    assert {json.dumps(run.parameters) for run in made} == {
        json.dumps({"env": "prod", "day": "2026-11-01"})
    }
    inputs = [fakes.executor.started[run.id] for run in made]
    assert [i.scheduled_at for i in inputs] == [format_instant(r.scheduled_at) for r in made]
    assert {json.dumps(i.values.params) for i in inputs} == {
        json.dumps({"env": "prod", "day": "2026-11-01"})
    }


def test_given_a_run_that_ended_when_rerun_with_parameters_then_they_overlay_the_runs_own(
    fakes: Fakes,
) -> None:
    job = fakes.jobs.create_job(OWNER, job_spec(parameters={"env": "prod", "day": "x"}))
    run = fakes.jobs.trigger_job(OWNER, job.id, parameters={"day": "2026-11-01", "n": 1})
    assert fakes.starter.start_run(RunMessage.of(run, fakes.clock())) == "started"
    assert mark_running(fakes, run)
    finish(fakes, run, RunStatus.FAILED)

    again = fakes.reruns.rerun_run(OWNER, run.id, parameters={"n": 2})
    plain = fakes.reruns.rerun_run(OWNER, run.id)

    assert again.parameters == {"env": "prod", "day": "2026-11-01", "n": 2}
    assert plain.parameters == {"env": "prod", "day": "2026-11-01", "n": 1}
    ranged = RerunRequest.model_validate(
        {
            "from": (run.scheduled_at - timedelta(minutes=1)).isoformat(),
            "to": (run.scheduled_at + timedelta(minutes=1)).isoformat(),
            "statuses": ["FAILED"],
            "parameters": {"n": 3},
        }
    )
    (third,) = fakes.reruns.rerun_job(OWNER, job.id, ranged)
    assert third.parameters == {"env": "prod", "day": "2026-11-01", "n": 3}


# --- at run time: the runner ------------------------------------------------------------------


def attempt_request(
    fakes: Fakes, target: dict[str, Any], params: dict[str, Any]
) -> tuple[AttemptRequest, str]:
    job, run = due_job(fakes, target=target, parameters=params)
    assert fakes.starter.start_run(message(fakes, run)) == "started"
    started = fakes.executor.started[run.id]
    request = AttemptRequest(
        job_id=job.id,
        run_id=run.id,
        owner=job.owner,
        scheduled_at=started.scheduled_at,
        timeout_seconds=30,
        target=started.target,
        values=started.values,
    )
    return request, job.name


def test_given_parameters_when_an_http_run_is_attempted_then_they_reach_its_url_headers_and_body(
    fakes: Fakes,
) -> None:
    with http_sink() as sink:
        target = {
            "type": "http",
            "url": sink.url + "/load/{{ params.day }}?run={{ run_id }}",
            "headers": {"X-Job": "{{ job.name }}"},
            "body": {"day": "{{ params.day }}", "at": "{{ scheduled_at }}", "q": "{{ params.q }}"},
        }
        request, name = attempt_request(fakes, target, {"day": "2026-11-01", "q": '"}, {'})

        runner(fakes).attempt(request)

        (hit,) = sink.hits
    assert hit.path == f"/load/2026-11-01?run={request.run_id}"
    assert hit.headers["X-Job"] == name
    assert json.loads(hit.body) == {"day": "2026-11-01", "at": request.scheduled_at, "q": '"}, {'}


def test_given_a_parameter_holding_a_secret_placeholder_when_attempted_then_the_secret_is_not_read(
    fakes: Fakes,
) -> None:
    fakes.secrets.put(OWNER, "k", "tok-5f3a9c1e77b2")
    with http_sink() as sink:
        target = {"type": "http", "url": sink.url, "body": {"v": "{{ params.v }}"}}
        request, _ = attempt_request(fakes, target, {"v": "{{ secret.k }}"})

        runner(fakes).attempt(request)

        (hit,) = sink.hits
    assert json.loads(hit.body) == {"v": "{{ secret.k }}"}


def test_given_a_host_value_that_is_chronoqs_own_endpoint_when_attempted_then_the_run_fails_for_good(
    fakes: Fakes,
) -> None:
    with http_sink() as sink:
        port = int(sink.url.rsplit(":", 1)[1])
        target = {"type": "http", "url": "http://{{ params.host }}/hook"}
        request, _ = attempt_request(fakes, target, {"host": f"127.0.0.1:{port}"})
        guarded = runner(fakes)
        guarded.egress = Egress(NetworkPolicy.of(False, (), OwnEndpoints.of([port], [])))

        with pytest.raises(PermanentError, match="chronoq's own endpoint"):
            guarded.attempt(request)

        assert sink.hits == []


def test_given_a_parameter_not_passed_when_attempted_then_the_run_fails_for_good_naming_it(
    fakes: Fakes,
) -> None:
    target = {"type": "http", "url": "https://api.example.com/{{ params.day }}"}
    request, _ = attempt_request(fakes, target, {})

    with pytest.raises(PermanentError, match=r"params\.day"):
        runner(fakes).attempt(request)


class Ecs(FakeEcs):
    class meta:
        region_name = REGION


def container_runner(fakes: Fakes, ecs: Ecs) -> Runner:
    return Runner(
        artifacts=fakes.artifacts,
        lambda_client=no_client,
        ecs_client=lambda: cast(Any, ecs),
        logs_client=no_client,
        containers=ContainerSettings("logs", "arn:aws:iam::1:role/e", "arn:aws:iam::1:role/t"),
    )


def test_given_a_container_when_prepared_then_its_command_comes_back_expanded_and_an_option_value_fails_it(
    fakes: Fakes,
) -> None:
    target = {
        "type": "container",
        "image": "busybox",
        "command": ["report", "--day", "{{ params.day }}", "{{ scheduled_at }}"],
        "environment": {"RUN": "{{ run_id }}"},
    }
    request, _ = attempt_request(fakes, target, {"day": "2026-11-01"})
    ecs = Ecs()
    prepare = container_runner(fakes, ecs).prepare_container
    context = request.values.context(request.run_id, request.scheduled_at)

    prepared = prepare(cast(Any, request.target), OWNER, context)

    assert prepared.command == ["report", "--day", "2026-11-01", request.scheduled_at]
    (definition,) = ecs.definitions.values()
    assert definition["containerDefinitions"][0]["environment"] == [
        {"name": "RUN", "value": request.run_id}
    ]
    hostile = request.values.model_copy(update={"params": {"day": "--privileged"}})
    with pytest.raises(PermanentError, match=r"target.command\[2\]"):
        prepare(cast(Any, request.target), OWNER, hostile.context(request.run_id, "x"))
