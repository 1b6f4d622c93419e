"""Every target type, executed by the real state machine on moto: lambda through the runner,
sqs/sns/eventbridge as Step Functions service integrations, containers on ECS (locally a
subprocess)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from chronoq.domain.runs import RunStatus

from tests.integration.conftest import Harness
from tests.support import api_event, wait_for

FUNCTION_CODE = """
def handler(event, context):
    print("handling", event)
    if event.get("fail"):
        raise ValueError("asked to fail")
    return {"ok": True, "event": event}
"""


def create_function(harness: Harness, name: str = "reports") -> str:
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("app.py", FUNCTION_CODE)
    role = harness.aws.client("iam").get_role(RoleName="chronoq-local-role")["Role"]["Arn"]
    arn: str = harness.aws.client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": package.getvalue()},
    )["FunctionArn"]
    return arn


def logs_of(harness: Harness, run_id: str) -> list[str]:
    return harness.wiring().runs.run_logs("alice", run_id)


def queue(harness: Harness, name: str) -> tuple[str, str]:
    sqs = harness.aws.client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def messages(harness: Harness, url: str) -> list[dict[str, Any]]:
    answer = harness.aws.client("sqs").receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    return list(answer.get("Messages", []))


# --- lambda ---------------------------------------------------------------------------------


def test_given_a_lambda_target_when_run_then_the_function_gets_the_run_context_and_its_answer_is_the_output(
    harness: Harness,
) -> None:
    job = harness.create_job({"type": "lambda", "function_arn": create_function(harness)})

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED, (run.error, run.attempts)
    output = json.loads(run.output or "")
    assert output["ok"] is True
    assert output["event"] == {
        "job_id": job["id"],
        "run_id": run.id,
        "scheduled_at": run.scheduled_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "attempt": 1,
    }
    assert any("| handling" in line for line in logs_of(harness, run.id))  # the function's own log


def test_given_a_function_that_raises_when_run_then_each_attempt_fails_with_its_error(
    harness: Harness,
) -> None:
    job = harness.create_job(
        {"type": "lambda", "function_arn": create_function(harness), "payload": {"fail": True}},
        retry={"max_attempts": 2, "interval_seconds": 1, "jitter": False},
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert len(run.attempts) == 2
    assert "ValueError: asked to fail" in (run.error or "")


def test_given_a_function_that_does_not_exist_when_run_then_it_fails_at_once(
    harness: Harness,
) -> None:
    missing = "arn:aws:lambda:us-east-1:123456789012:function:nowhere"
    job = harness.create_job({"type": "lambda", "function_arn": missing}, retry={"max_attempts": 3})

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert len(run.attempts) == 1
    assert "PermanentError" in (run.error or "")


# --- sqs, sns, eventbridge --------------------------------------------------------------------


def test_given_an_sqs_target_when_run_then_the_message_is_delivered_with_the_run_ids(
    harness: Harness,
) -> None:
    url, _ = queue(harness, "reports")
    job = harness.create_job({"type": "sqs", "queue_url": url, "message": {"report": "daily"}})

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    (message,) = messages(harness, url)
    assert json.loads(message["Body"]) == {"report": "daily"}
    assert message["MessageAttributes"]["chronoq_run_id"]["StringValue"] == run.id
    assert message["MessageAttributes"]["chronoq_job_id"]["StringValue"] == job["id"]
    assert json.loads(run.output or "")["MessageId"] == message["MessageId"]


def test_given_a_string_message_when_sent_then_it_arrives_as_it_is(harness: Harness) -> None:
    url, _ = queue(harness, "plain")
    job = harness.create_job({"type": "sqs", "queue_url": url, "message": "rotate logs"})

    harness.run(job)

    assert [m["Body"] for m in messages(harness, url)] == ["rotate logs"]


def test_given_a_queue_that_does_not_exist_when_run_then_the_attempt_fails(
    harness: Harness,
) -> None:
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/missing"
    job = harness.create_job({"type": "sqs", "queue_url": url, "message": "x"})

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert run.attempts[0].outcome != "SUCCEEDED"


def test_given_an_sns_target_when_run_then_subscribers_get_the_message(harness: Harness) -> None:
    sns = harness.aws.client("sns")
    topic = sns.create_topic(Name="reports")["TopicArn"]
    url, arn = queue(harness, "subscriber")
    sns.subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
    )
    job = harness.create_job({"type": "sns", "topic_arn": topic, "message": {"report": "weekly"}})

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    (message,) = messages(harness, url)
    assert json.loads(message["Body"]) == {"report": "weekly"}
    assert "MessageId" in json.loads(run.output or "")


def test_given_an_eventbridge_target_when_run_then_the_event_reaches_the_rules_target(
    harness: Harness,
) -> None:
    events = harness.aws.client("events")
    events.create_event_bus(Name="ops")
    url, arn = queue(harness, "ops-events")
    events.put_rule(
        Name="chronoq-events",
        EventBusName="ops",
        EventPattern=json.dumps({"source": ["billing"], "detail-type": ["invoice.due"]}),
    )
    events.put_targets(Rule="chronoq-events", EventBusName="ops", Targets=[{"Id": "q", "Arn": arn}])
    job = harness.create_job(
        {
            "type": "eventbridge",
            "event_bus": "ops",
            "source": "billing",
            "detail_type": "invoice.due",
            "detail": {"customer": 42},
        }
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    (message,) = messages(harness, url)
    event = json.loads(message["Body"])
    assert event["detail"] == {"customer": 42}
    # (Step Functions adds its state machine and execution to the resources)
    assert f"chronoq:run/{job['id']}/{run.id}" in event["resources"]


# --- containers -------------------------------------------------------------------------------


def test_given_a_container_target_when_run_then_its_command_runs_and_its_output_is_the_log(
    harness: Harness,
) -> None:
    job = harness.create_job(
        {
            "type": "container",
            "image": "public.ecr.aws/docker/library/alpine:3",
            "command": ["sh", "-c", 'echo "run $CHRONOQ_RUN_ID attempt $CHRONOQ_ATTEMPT $COLOUR"'],
            "environment": {"COLOUR": "blue"},
        }
    )

    run = harness.run(job)

    assert run.status is RunStatus.SUCCEEDED
    assert json.loads(run.output or "")["exit_code"] == 0
    assert any(f"| run {run.id} attempt 1 blue" in line for line in logs_of(harness, run.id))


def test_given_a_container_that_exits_non_zero_when_run_then_the_attempt_fails_with_the_code(
    harness: Harness,
) -> None:
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["sh", "-c", "echo broken; exit 3"]}
    )

    run = harness.run(job)

    assert run.status is RunStatus.FAILED
    assert "exited with code 3" in (run.error or "")
    assert any("| broken" in line for line in logs_of(harness, run.id))


def _running(marker: str) -> bool:
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                return True
        except OSError:
            continue
    return False


def test_given_a_container_that_overruns_when_run_then_it_is_killed_and_timed_out(
    harness: Harness, tmp_path: Path
) -> None:
    marker = f"sleep 37.{os.getpid()}"
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["sh", "-c", f"{marker}; touch done"]},
        timeout_seconds=2,
    )

    run = harness.run(job)

    assert run.status is RunStatus.TIMED_OUT
    assert wait_for(lambda: not _running(marker), timeout=5)


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"type": "sqs", "queue_url": "not a url"}, "target.queue_url"),
        ({"type": "sns", "topic_arn": "arn:aws:sqs:x"}, "target.topic_arn"),
        ({"type": "lambda", "function_arn": "myfunction"}, "target.function_arn"),
        ({"type": "eventbridge", "source": "aws.ec2"}, "target.source"),
        (
            {"type": "sqs", "queue_url": "https://q/123456789012/q", "message": "x" * 70_000},
            "target.message",
        ),
        ({"type": "container", "image": "alpine", "command": []}, "target.command"),
        ({"type": "container", "image": "a", "command": ["x"], "cpu": 300}, "target.cpu"),
        (
            {
                "type": "container",
                "image": "a",
                "command": ["x"],
                "environment": {"CHRONOQ_X": "1"},
            },
            "target.environment",
        ),
    ],
)
def test_given_a_bad_target_when_a_job_is_created_then_422_names_the_field(
    harness: Harness, target: dict[str, Any], field: str
) -> None:
    body = {"name": "t", "schedule": {"type": "rate", "every": "1 hour"}, "target": target}

    status, answer = harness.api(api_event("create_at_job", body=body))

    assert status == 422
    assert answer["error"]["field"] == field


def test_given_a_running_container_when_its_run_is_cancelled_then_the_task_is_stopped(
    harness: Harness,
) -> None:
    marker = f"sleep 41.{os.getpid()}"
    job = harness.create_job(
        {"type": "container", "image": "alpine", "command": ["sh", "-c", marker]}
    )
    service = harness.wiring()
    status, triggered = harness.api(
        api_event("get_job", path=f"/jobs/{job['id']}/trigger", method="POST")
    )
    assert status == 202
    run_id = triggered["id"]
    harness.deliver(run_id)
    wait_for(lambda: _running(marker))

    status, cancelled = harness.api(
        api_event("get_run", path=f"/runs/{run_id}/cancel", method="POST")
    )

    assert status == 200
    assert cancelled["status"] == "CANCELLED"
    assert wait_for(lambda: not _running(marker), timeout=10)
    assert service.runs.get_run("alice", run_id).status is RunStatus.CANCELLED
