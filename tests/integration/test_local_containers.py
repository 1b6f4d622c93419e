"""chronoq local on a shared machine: container targets run host commands only when allowed,
a container's secrets reach its process only (read as ECS reads them, from the engine's
parameters or the embedded SSM), and the webhook signing secret is the data directory's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronoq import compose
from chronoq import resources as r
from chronoq.domain.runs import RunStatus
from chronoq.domain.targets import ContainerTarget
from chronoq.execution.targets import container_log_stream, prepare_container
from chronoq.local import tokens
from chronoq.local.aws import ENGINE_LOCAL, ENGINE_MOTO, PREFIX, REGION, LocalAWS
from chronoq.local.calls import RECORDER
from chronoq.local.emulation.containers import NOT_RUN_EXIT_CODE
from chronoq.local.emulation.ecs import default_network
from chronoq.local.emulation.state import NOWHERE
from chronoq.local.system import LocalSystem
from chronoq.local.usage import CONTAINER_EXECUTION

from tests.integration.conftest import Harness
from tests.integration.test_targets import logs_of
from tests.support import api_event, wait_for


def test_given_host_commands_not_allowed_and_no_docker_when_a_container_runs_then_the_attempt_fails_saying_how_to_enable_them(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.aws.emulation, "containers", NOWHERE)  # as chosen at start
    marker = tmp_path / "ran"
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", str(marker)]}
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert "--allow-host-commands" in (run.error or "")
    assert any("--allow-host-commands" in line for line in logs_of(harness, run.id))
    assert not marker.exists()


def test_given_host_commands_allowed_when_a_container_runs_then_its_command_runs_here(
    harness: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"  # (the harness allows host commands)
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["touch", str(marker)]}
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    assert marker.exists()


def test_given_a_container_job_naming_a_secret_when_it_runs_then_its_process_prints_the_value_and_the_runs_log_holds_it_scrubbed(
    harness: Harness,
) -> None:
    value = "container-secret-3e9a"
    put = api_event("get_job", path="/secrets/ctr", method="PUT", body={"value": value})
    assert harness.api(put)[0] == 201
    job = harness.create_job(
        {
            "type": "container",
            "image": "alpine",
            "command": ["sh", "-c", 'echo "token=$TOKEN"'],
            "environment": {"TOKEN": {"secret": "ctr"}},
        }
    )

    run = harness.run(job, timeout=60)

    assert run.status is RunStatus.SUCCEEDED, run.error
    lines = logs_of(harness, run.id)
    assert any("token=***" in line for line in lines), lines
    assert not any(value in line for line in lines)
    assert value not in json.dumps(harness.aws.client("ecs").list_task_definitions())


def test_given_a_data_directory_when_chronoq_local_starts_then_webhooks_are_signed_from_its_kept_secret(
    tmp_path: Path,
) -> None:
    system = LocalSystem(port=0, data_dir=tmp_path).start()
    try:
        arn = system.aws.env[r.ENV_SIGNING_SECRET_ARN]
        kept = system.aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    finally:
        system.stop()

    assert kept == tokens.signing_secret(tmp_path)
    assert (tmp_path / tokens.SIGNING_SECRET_FILE).exists()


# --- a container's secrets ---------------------------------------------------------------------

#: The secret's value: the one a container reads, found nowhere else.
VALUE = "s3cr3t-crm-token-of-auth0"
OWNER = "auth0|123"  # (a digest in the parameter's name: SSM's names refuse "|")


@pytest.fixture(params=[ENGINE_MOTO, ENGINE_LOCAL])
def deployment(request: pytest.FixtureRequest, container_polls: None) -> Iterator[LocalAWS]:
    """The embedded AWS, its own functions on moto or on chronoq local's engine (the secrets'
    values in the embedded SSM, or in the engine's parameters)."""
    saved = dict(os.environ)
    aws = LocalAWS(shards=4, allow_host_commands=True, engine=request.param).start()
    try:
        yield aws
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


def _run_task(aws: LocalAWS, target: ContainerTarget) -> tuple[str, dict[str, Any]]:
    """Register ``target``'s task definition as the runner does for ``OWNER``, run it as the
    state machine does, and wait for it to stop: the definition's ARN and the stopped task."""
    ecs = aws.client("ecs")
    definition = prepare_container(
        ecs,
        target,
        aws.env[r.ENV_CONTAINER_LOG_GROUP],
        REGION,
        aws.env[r.ENV_CONTAINER_EXECUTION_ROLE_ARN],
        aws.env[r.ENV_CONTAINER_TASK_ROLE_ARN],
        owner=OWNER,
        secret_parameter=compose.secret_values(aws.env[r.ENV_SECRETS_PATH]).parameter,
    )
    cluster = f"{PREFIX}-{r.CONTAINER_CLUSTER_ID.lower()}"
    (task,) = ecs.run_task(
        cluster=cluster,
        taskDefinition=definition,
        launchType="FARGATE",
        networkConfiguration={"awsvpcConfiguration": default_network(aws.client("ec2"))},
        overrides={
            "containerOverrides": [
                {
                    "name": r.CONTAINER_NAME,
                    "command": target.command,
                    "environment": [{"name": "CHRONOQ_TIMEOUT_SECONDS", "value": "60"}],
                }
            ]
        },
    )["tasks"]

    def stopped() -> dict[str, Any] | None:
        (found,) = ecs.describe_tasks(cluster=cluster, tasks=[task["taskArn"]])["tasks"]
        return found if found["lastStatus"] == "STOPPED" else None

    return definition, wait_for(stopped, timeout=30)


def _log(aws: LocalAWS, task: dict[str, Any]) -> list[str]:
    events = aws.client("logs").get_log_events(
        logGroupName=aws.env[r.ENV_CONTAINER_LOG_GROUP],
        logStreamName=container_log_stream(task["taskArn"]),
        startFromHead=True,
    )["events"]
    return [e["message"] for e in events]


def test_given_a_container_whose_variable_is_a_secret_when_its_task_runs_then_its_process_gets_the_latest_value_and_nothing_kept_holds_it(
    deployment: LocalAWS, tmp_path: Path
) -> None:
    values = compose.secret_values(deployment.env[r.ENV_SECRETS_PATH])
    values.put_value(OWNER, "crm-token", "the-value-before-rotation")
    values.put_value(OWNER, "crm-token", VALUE)  # (ECS reads the latest)
    seen = tmp_path / "seen"
    target = ContainerTarget(
        type="container",
        image="alpine",
        command=["sh", "-c", f'printf %s "$TOKEN" > {seen}; echo "mode $MODE"'],
        environment={"TOKEN": {"secret": "crm-token"}, "MODE": "plain"},
    )

    definition, task = _run_task(deployment, target)

    assert task["containers"][0]["exitCode"] == 0
    assert seen.read_text() == VALUE
    assert _log(deployment, task) == ["mode plain"]
    described = deployment.client("ecs").describe_task_definition(taskDefinition=definition)
    (secret,) = described["taskDefinition"]["containerDefinitions"][0]["secrets"]
    parameter = f"arn:aws:ssm:{REGION}:123456789012:parameter{values.parameter(OWNER, 'crm-token')}"
    assert secret == {"name": "TOKEN", "valueFrom": parameter}
    kept = json.dumps([described, task, _log(deployment, task)], default=str)
    assert VALUE not in kept  # (the definition, the task and its overrides, its log)
    # read as ECS reads it: with the containers' execution role (the least-privilege check)
    assert any(
        (c.caller, c.action, c.resource) == (CONTAINER_EXECUTION, "ssm:GetParameters", parameter)
        for c in RECORDER.recorded
    )


def test_given_a_container_whose_secret_was_deleted_when_its_task_starts_then_it_does_not_run_and_says_which_parameter(
    deployment: LocalAWS, tmp_path: Path
) -> None:
    values = compose.secret_values(deployment.env[r.ENV_SECRETS_PATH])
    values.put_value(OWNER, "gone", VALUE)
    values.delete_value(OWNER, "gone")
    ran = tmp_path / "ran"
    target = ContainerTarget(
        type="container",
        image="alpine",
        command=["touch", str(ran)],
        environment={"TOKEN": {"secret": "gone"}},
    )

    _, task = _run_task(deployment, target)

    assert task["containers"][0]["exitCode"] == NOT_RUN_EXIT_CODE
    assert "ResourceInitializationError" in task["stoppedReason"]
    assert values.parameter(OWNER, "gone") in task["stoppedReason"]
    assert not ran.exists()
