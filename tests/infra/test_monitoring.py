"""Monitoring in the synthesized stack: every alarm (what it watches, how missing data counts,
its action on the alarm topic, its runbook entry), the heartbeat and its alarms, the
dashboard, and what the alarms cost."""

from __future__ import annotations

import inspect
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws import executor
from chronoq.execution import machines
from chronoq_cdk.monitoring import CANCELLED, OWN_FAILURES_PATTERN, USERS_FAILURES

from tests.infra.synthesis import Synthesis, denials, rendered

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"
#: Every alarm, by name: (namespace, metric or "math", comparison, threshold, missing data).
ALARMS: dict[str, tuple[str, str, str, float, str]] = {
    "DispatcherNotTicking": ("AWS/Lambda", "Invocations", "LessThanThreshold", 1, "breaching"),
    "DispatcherFailing": (
        "AWS/Lambda",
        "Errors",
        "GreaterThanOrEqualToThreshold",
        1,
        "notBreaching",
    ),
    "ShardBehind": (
        "chronoq",
        "ShardMinutesBehind",
        "GreaterThanOrEqualToThreshold",
        2,
        "notBreaching",
    ),
    "RunsDeadLetters": (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "GreaterThanOrEqualToThreshold",
        1,
        "notBreaching",
    ),
    "NotifierDeadLetters": (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "GreaterThanOrEqualToThreshold",
        1,
        "notBreaching",
    ),
    "ArchiverDeadLetters": (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "GreaterThanOrEqualToThreshold",
        1,
        "notBreaching",
    ),
    **{
        f"{p.capitalize()}QueueAge": (
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            "GreaterThanThreshold",
            300,
            "notBreaching",
        )
        for p in r.PRIORITIES
    },
    "RunExecutionsFailing": ("math", "math", "GreaterThanOrEqualToThreshold", 1, "notBreaching"),
    **{
        f"{f}Throttled": (
            "AWS/Lambda",
            "Throttles",
            "GreaterThanOrEqualToThreshold",
            1,
            "notBreaching",
        )
        for f in ("Api", "Dispatcher", "Worker", "Runner", "Notifier", "Archiver", "Console")
    },
    "NotifierStreamBehind": (
        "AWS/Lambda",
        "IteratorAge",
        "GreaterThanThreshold",
        60_000,
        "notBreaching",
    ),
    "ArchiverStreamBehind": (
        "AWS/Lambda",
        "IteratorAge",
        "GreaterThanThreshold",
        r.ARCHIVE_LATENCY_SECONDS * 1000,
        "notBreaching",
    ),
    "Api5xx": ("AWS/ApiGateway", "5xx", "GreaterThanOrEqualToThreshold", 1, "notBreaching"),
    "HeartbeatMissing": ("chronoq", "HeartbeatSucceeded", "LessThanThreshold", 1, "breaching"),
    "HeartbeatLate": (
        "chronoq",
        "HeartbeatLag",
        "GreaterThanThreshold",
        r.HEARTBEAT_MAX_LAG_SECONDS * 1000,
        "notBreaching",
    ),
}
#: CloudWatch's price of a standard-resolution alarm, per metric it evaluates, per month.
ALARM_METRIC_MONTH = Decimal("0.10")


def _alarms(synth: Synthesis) -> dict[str, dict[str, Any]]:
    prefix = f"{synth.stack.stack_name}-"
    return {
        a["Properties"]["AlarmName"].removeprefix(prefix): a["Properties"]
        for a in synth.of_type("AWS::CloudWatch::Alarm").values()
    }


def test_given_the_stack_when_synthesized_then_it_has_every_alarm_each_telling_the_alarm_topic(
    synth: Synthesis,
) -> None:
    alarms = _alarms(synth)
    topic = synth.ref(synth.stack.monitoring.topic)

    assert set(alarms) == set(ALARMS)
    for name, alarm in alarms.items():
        namespace, metric, comparison, threshold, missing = ALARMS[name]
        assert alarm["AlarmActions"] == [topic], name
        assert alarm["OKActions"] == [topic], name
        assert f"(runbook: docs/runbook.md, {name})" in alarm["AlarmDescription"], name
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == (comparison, threshold), name
        assert alarm["TreatMissingData"] == missing, name
        if namespace != "math":
            assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric), name


def test_given_the_alarms_when_synthesized_then_each_has_its_entry_in_the_runbook(
    synth: Synthesis,
) -> None:
    runbook = RUNBOOK.read_text()

    for name in _alarms(synth):
        assert re.search(rf"^### (`\w+`, )*`{name}`", runbook, re.MULTILINE), name


def test_given_the_alarms_when_priced_then_the_runbook_says_what_they_cost_a_month(
    synth: Synthesis,
) -> None:
    metrics = sum(
        len([m for m in a.get("Metrics", []) if "MetricStat" in m]) or 1
        for a in _alarms(synth).values()
    )
    cost = metrics * ALARM_METRIC_MONTH

    assert f"{len(_alarms(synth))} alarms" in RUNBOOK.read_text()
    assert f"${cost:.2f} a month" in RUNBOOK.read_text()


def test_given_the_dispatchers_groups_when_synthesized_then_not_ticking_expects_one_per_group(
    tuned: Synthesis,
) -> None:
    alarm = _alarms(tuned)["DispatcherNotTicking"]

    assert alarm["Threshold"] == 2  # -c dispatch_groups=2: two invocations a minute
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["Statistic"]) == (60, 3, "Sum")


def test_given_an_alarm_email_when_synthesized_then_the_alarm_topic_sends_to_it(
    synth: Synthesis, tuned: Synthesis
) -> None:
    (subscription,) = tuned.of_type("AWS::SNS::Subscription").values()

    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"
    assert subscription["Properties"]["TopicArn"] == tuned.ref(tuned.stack.monitoring.topic)
    assert not synth.of_type("AWS::SNS::Subscription")


def test_given_the_execution_failures_when_counted_then_only_chronoqs_own_are(
    synth: Synthesis,
) -> None:
    """The filter leaves out a STANDARD run whose target failed or timed out (the ASL's Fail
    states' errors) and a cancelled run's aborted execution (the executor's error)."""
    definition = json.loads(machines.STATE_MACHINE.text())
    users = {definition["States"][s]["Error"] for s in ("Failed", "TimedOut")}
    (metric_filter,) = synth.of_type("AWS::Logs::MetricFilter").values()

    assert users == set(USERS_FAILURES)
    assert f'error="{CANCELLED}"' in inspect.getsource(executor).replace(" ", "")
    assert metric_filter["Properties"]["FilterPattern"] == OWN_FAILURES_PATTERN
    assert metric_filter["Properties"]["LogGroupName"] == synth.ref(synth.stack.execution.log_group)
    for error in (*USERS_FAILURES, CANCELLED):
        assert f'$.details.error != "{error}"' in OWN_FAILURES_PATTERN


def test_given_the_heartbeat_when_deployed_then_the_dispatcher_is_asked_to_create_it(
    synth: Synthesis,
) -> None:
    (resource,) = synth.of_type("Custom::AWS").values()
    create = json.loads(rendered(resource["Properties"]["Create"]).replace('"}}', '"}}'))
    dispatcher = synth.stack.dispatch.function
    provider = synth.stack.monitoring.provider
    policy_statements = [
        s
        for p in synth.of_type("AWS::IAM::Policy").values()
        if p["Properties"]["PolicyName"].startswith("MonitoringHeartbeat")
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]

    assert create["service"] == "Lambda"
    assert create["action"] == "invoke"
    assert json.loads(create["parameters"]["Payload"]) == {"heartbeat": "ensure"}
    assert policy_statements == [
        {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": synth.arn(dispatcher)}
    ]
    # the runner may invoke it no more than any other of chronoq's functions
    runner = synth.role_statements(synth.stack.execution.runner)
    assert ("lambda:InvokeFunction", rendered(synth.arn(provider)), "null") in denials(runner)


def test_given_the_dashboard_when_synthesized_then_it_shows_the_run_flow_lag_and_errors(
    synth: Synthesis,
) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = rendered(dashboard["Properties"]["DashboardBody"])

    for title in ("Run flow", "Start lag", "Dispatcher", "Errors and throttles", "Alarms"):
        assert title in body
    for metric in ("RunsDispatched", "RunsStarted", "RunsSucceeded", "StartLag", "p99"):
        assert metric in body
    assert {"AlarmTopicArn", "DashboardUrl"} <= set(synth.template["Outputs"])


@pytest.mark.parametrize("name", ["HeartbeatMissing", "DispatcherNotTicking"])
def test_given_silence_when_evaluated_then_missing_data_counts_as_breaching(
    synth: Synthesis, name: str
) -> None:
    assert _alarms(synth)[name]["TreatMissingData"] == "breaching"
