"""The notifier, its stream of finished runs, the topic and the signing secret."""

from __future__ import annotations

import json
from typing import Any

from chronoq import resources as r
from chronoq.aws.streams import notifier_filters
from chronoq.domain.notifications import topic_statuses

from tests.infra.synthesis import Synthesis, grants, rendered

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


def test_given_records_failing_after_their_retries_when_synthesized_then_they_go_to_a_dead_letter_queue(
    synth: Synthesis,
) -> None:
    dead_letter = synth.stack.notifications.dead_letter
    props = synth.resource(dead_letter)["Properties"]
    granted = grants(synth.role_statements(synth.stack.notifications.function))

    assert _notifier_mapping(synth)["DestinationConfig"] == {
        "OnFailure": {"Destination": synth.arn(dead_letter)}
    }
    assert props["SqsManagedSseEnabled"] is True
    assert props["MessageRetentionPeriod"] == 14 * 24 * 3600
    # the notifier's role is what the event source mapping sends the failed records with
    assert ("sqs:SendMessage", rendered(synth.arn(dead_letter)), "null") in granted
    # and the run queues, where it sends the runs a flow parked, woken
    run_queues = {rendered(synth.arn(q)) for q in synth.stack.queues.by_priority.values()}
    assert {g[1] for g in granted if g[0].startswith("sqs:")} == {
        rendered(synth.arn(dead_letter)),
        *run_queues,
    }


def test_given_the_notifier_when_synthesized_then_a_batch_of_retried_webhooks_fits_its_timeout(
    synth: Synthesis,
) -> None:
    timeout = synth.resource(synth.stack.notifications.function)["Properties"]["Timeout"]
    backoff = sum(r.WEBHOOK_FIRST_BACKOFF_SECONDS * 2**i for i in range(r.WEBHOOK_ATTEMPTS - 1))
    one_webhook = r.WEBHOOK_ATTEMPTS * r.WEBHOOK_TIMEOUT_SECONDS + backoff

    assert timeout == r.NOTIFIER_FUNCTION.timeout_seconds
    assert _notifier_mapping(synth)["BatchSize"] == r.NOTIFIER_BATCH_SIZE
    assert r.NOTIFIER_BATCH_SIZE * one_webhook <= timeout


def test_given_the_default_topic_statuses_when_synthesized_then_only_ended_runs_someone_is_to_hear_of_reach_the_notifier(
    synth: Synthesis,
) -> None:
    patterns = [
        json.loads(f["Pattern"]) for f in _notifier_mapping(synth)["FilterCriteria"]["Filters"]
    ]
    topic = {"status": {"S": ["FAILED", "MISSED", "TIMED_OUT"]}}
    asked = {"status": {"S": FINISHED}, "notify": {"BOOL": [True]}}
    not_ended = {"status": {"S": [{"anything-but": FINISHED}]}}
    # (a silence's record, as it is written: docs/api/notifications.md, "Silence")
    topic_or_silence = {"status": {"S": ["FAILED", "MISSED", "RECOVERED", "SILENT", "TIMED_OUT"]}}

    # written ended, or changed from a status a run does not end in into one it ends in;
    # with a topic status, or by a run whose job asked to be notified (or whose end is
    # counted: a backfill's run, a re-run)
    assert patterns == [
        {"eventName": ["INSERT"], "dynamodb": {"NewImage": topic_or_silence}},
        {"eventName": ["MODIFY"], "dynamodb": {"NewImage": topic, "OldImage": not_ended}},
        {"eventName": ["INSERT"], "dynamodb": {"NewImage": asked}},
        {"eventName": ["MODIFY"], "dynamodb": {"NewImage": asked, "OldImage": not_ended}},
        # a run that held flow slots (or of a job with expect, or of a job after jobs follow),
        # once ended: its end wakes the runs parked on them (or moves its job's expectation on,
        # or is noted in its followers' fan-ins)
        {
            "eventName": ["MODIFY"],
            "dynamodb": {
                "NewImage": {
                    "status": {"S": FINISHED},
                    "slots": {
                        "S": [{"prefix": "flow#"}, {"prefix": "expect#"}, {"prefix": "after#"}]
                    },
                },
                "OldImage": not_ended,
            },
        },
    ]
    assert patterns == notifier_filters(topic_statuses(r.DEFAULT_TOPIC_STATUSES))


def test_given_the_default_topic_statuses_when_synthesized_then_the_notifier_is_told_them(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.notifications.function)["Properties"]

    assert props["Environment"]["Variables"][r.ENV_TOPIC_STATUSES] == "FAILED,MISSED,TIMED_OUT"


def test_given_the_topic_when_synthesized_then_the_notifier_publishes_only_to_it(
    synth: Synthesis,
) -> None:
    notifications = synth.stack.notifications
    topic = synth.logical_id(notifications.topic)
    statements = synth.role_statements(notifications.function)

    alarms = synth.logical_id(synth.stack.monitoring.topic)  # (the alarms' own topic)
    assert set(synth.of_type("AWS::SNS::Topic")) == {topic, alarms}
    assert {g for g in grants(statements) if g[0].startswith("sns:")} == {
        ("sns:Publish", f"${{{topic}}}", "null")
    }


def test_given_the_notifier_when_synthesized_then_it_reads_jobs_deletes_ended_ones_notes_deliveries_on_runs_and_sends_no_email(
    synth: Synthesis,
) -> None:
    notifications = synth.stack.notifications
    jobs = synth.logical_id(synth.stack.storage.jobs)
    runs = synth.logical_id(synth.stack.storage.runs)
    schedule = synth.logical_id(synth.stack.storage.schedule)
    secret = synth.logical_id(notifications.signing_secret)
    granted = grants(synth.role_statements(notifications.function))

    assert {g for g in granted if g[0].startswith("dynamodb:")} == {
        ("dynamodb:GetItem", f"${{{jobs}.Arn}}", "null"),  # not its index
        # a job deleted on completion (on_complete: delete) once its last run has ended: the
        # job and its name (DeleteItem), its owner's job count (UpdateItem)
        ("dynamodb:DeleteItem", f"${{{jobs}.Arn}}", "null"),
        ("dynamodb:UpdateItem", f"${{{jobs}.Arn}}", "null"),
        # which channels a retried record already reached, and how each went
        # (Store.note_notification)
        ("dynamodb:GetItem", f"${{{runs}.Arn}}", "null"),
        ("dynamodb:UpdateItem", f"${{{runs}.Arn}}", "null"),
        # a success of a job with expect: a silence ended with its RECOVERED record, and the
        # job's next deadline in the time index
        ("dynamodb:PutItem", f"${{{runs}.Arn}}", "null"),
        ("dynamodb:BatchWriteItem", f"${{{schedule}.Arn}}", "null"),
        # the runs a flow parked, to wake as a run holding its slots ends
        ("dynamodb:Query", f"${{{runs}.Arn}}/index/{r.RUNS_WAITING_INDEX}", "null"),
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
