"""The notifier, its stream of finished runs, the topic and the signing secret."""

from __future__ import annotations

import json
from typing import Any

from chronoq import resources as r

from tests.infra.synthesis import Synthesis, grants

FINISHED = ["CANCELLED", "FAILED", "MISSED", "SKIPPED", "SUCCEEDED", "TIMED_OUT"]


def _notifier_mapping(synth: Synthesis) -> dict[str, Any]:
    notifier = synth.ref(synth.stack.notifications.function)
    (mapping,) = (
        m
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == notifier
    )
    return dict(mapping["Properties"])


def test_given_the_notifier_when_synthesized_then_it_reads_the_runs_stream_in_batches(
    synth: Synthesis,
) -> None:
    mapping = _notifier_mapping(synth)

    assert mapping["EventSourceArn"] == {
        "Fn::GetAtt": [synth.logical_id(synth.stack.storage.runs), "StreamArn"]
    }
    assert mapping["StartingPosition"] == "LATEST"
    assert mapping["BatchSize"] == r.NOTIFIER_BATCH_SIZE
    assert mapping["MaximumRetryAttempts"] == r.NOTIFIER_MAX_RETRIES
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_given_the_notifier_when_synthesized_then_only_runs_that_ended_reach_it(
    synth: Synthesis,
) -> None:
    (only,) = _notifier_mapping(synth)["FilterCriteria"]["Filters"]
    pattern = json.loads(only["Pattern"])

    assert sorted(pattern["eventName"]) == ["INSERT", "MODIFY"]
    assert sorted(pattern["dynamodb"]["NewImage"]["status"]["S"]) == FINISHED
    assert set(pattern) == {"eventName", "dynamodb"}


def test_given_the_topic_when_synthesized_then_the_notifier_publishes_only_to_it(
    synth: Synthesis,
) -> None:
    notifications = synth.stack.notifications
    topic = synth.logical_id(notifications.topic)
    statements = synth.role_statements(notifications.function)

    assert list(synth.of_type("AWS::SNS::Topic")) == [topic]
    assert {g for g in grants(statements) if g[0].startswith("sns:")} == {
        ("sns:Publish", f"${{{topic}}}", "null")
    }


def test_given_the_notifier_when_synthesized_then_it_reads_jobs_and_the_secret_and_sends_no_email(
    synth: Synthesis,
) -> None:
    notifications = synth.stack.notifications
    jobs = synth.logical_id(synth.stack.storage.jobs)
    runs = synth.logical_id(synth.stack.storage.runs)
    secret = synth.logical_id(notifications.signing_secret)
    granted = grants(synth.role_statements(notifications.function))

    assert {g for g in granted if g[0].startswith("dynamodb:")} == {
        ("dynamodb:GetItem", f"${{{jobs}.Arn}}", "null"),
        ("dynamodb:GetItem", f"${{{jobs}.Arn}}/index/*", "null"),
        # the event source mapping reads the runs stream in the function's name
        ("dynamodb:ListStreams", "*", "null"),
        *(
            (action, f"${{{runs}.StreamArn}}", "null")
            for action in (
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
            )
        ),
    }
    assert {g for g in granted if g[0].startswith("secretsmanager:")} == {
        ("secretsmanager:GetSecretValue", f"${{{secret}}}", "null")
    }
    assert not {a for a, _, _ in granted if a.startswith("ses:")}


def test_given_the_signing_secret_when_synthesized_then_it_is_generated_long_and_retained(
    synth: Synthesis,
) -> None:
    secret = synth.resource(synth.stack.notifications.signing_secret)

    assert list(synth.of_type("AWS::SecretsManager::Secret")) == [
        synth.logical_id(synth.stack.notifications.signing_secret)
    ]
    assert secret["Properties"]["GenerateSecretString"] == {
        "ExcludePunctuation": True,
        "PasswordLength": 64,
    }
    assert secret["DeletionPolicy"] == "Retain"
