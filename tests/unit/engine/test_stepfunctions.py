"""LocalStepFunctions: the Step Functions API subset chronoq calls, with boto3's arguments,
answers and errors, executing definitions with chronoq's interpreter."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from chronoq.local.clock import LocalClock, Waits
from chronoq.local.engine.interpreter import TaskContext, TaskHandler
from chronoq.local.engine.stepfunctions import ExecutionSummary, LocalStepFunctions

from tests.support import wait_for

ROLE = "arn:aws:iam::123456789012:role/sfn"

FIVE_STATES = {
    "StartAt": "A",
    "States": {
        "A": {"Type": "Pass", "Result": 1, "ResultPath": "$.a", "Next": "B"},
        "B": {
            "Type": "Task",
            "Resource": "arn:aws:states:::test:do",
            "ResultPath": "$.b",
            "Next": "C",
        },
        "C": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.a", "NumericEquals": 1, "Next": "D"}],
            "Default": "E",
        },
        "D": {"Type": "Pass", "Next": "E"},
        "E": {"Type": "Succeed"},
    },
}
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}


class Blocking:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.contexts: list[TaskContext] = []

    def __call__(self, resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        self.contexts.append(context)
        while not self.release.wait(0.01) and not context.stopped():
            pass
        return "done"


def instant(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
    return {"ok": True}


def sfn_with(
    tasks: dict[str, TaskHandler] | None = None, waits: Waits = Waits.SKIP, **options: Any
) -> LocalStepFunctions:
    return LocalStepFunctions(
        LocalClock(waits), tasks or {"arn:aws:states:::test:": instant}, **options
    )


@pytest.fixture
def sfn() -> Iterator[LocalStepFunctions]:
    client = sfn_with()
    yield client
    client.close()


def machine(sfn: LocalStepFunctions, definition: dict[str, Any], kind: str = "STANDARD") -> str:
    arn: str = sfn.create_state_machine(
        name=f"m-{kind.lower()}", definition=json.dumps(definition), roleArn=ROLE, type=kind
    )["stateMachineArn"]
    return arn


def ended(sfn: LocalStepFunctions, arn: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        answer = sfn.describe_execution(executionArn=arn)
        return None if answer["status"] == "RUNNING" else answer

    result: dict[str, Any] = wait_for(done, timeout=10)
    return result


def test_given_a_state_machine_when_an_execution_runs_then_it_is_described_listed_and_its_history_kept(
    sfn: LocalStepFunctions,
) -> None:
    arn = machine(sfn, FIVE_STATES)

    started = sfn.start_execution(stateMachineArn=arn, name="first", input='{"x": 1}')
    described = ended(sfn, started["executionArn"])

    assert sfn.describe_state_machine(stateMachineArn=arn)["type"] == "STANDARD"
    assert started["executionArn"].endswith(":execution:m-standard:first")
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"x": 1, "a": 1, "b": {"ok": True}}
    assert described["startDate"] <= described["stopDate"]
    listed = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert [(e["name"], e["status"]) for e in listed] == [("first", "SUCCEEDED")]
    events = sfn.get_execution_history(executionArn=started["executionArn"], maxResults=1000)[
        "events"
    ]
    types = [e["type"] for e in events]
    assert types[0] == "ExecutionStarted"
    assert types[-1] == "ExecutionSucceeded"
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")
    ]
    assert entered == ["A", "B", "C", "D", "E"]
    assert {"TaskStateEntered", "ChoiceStateExited"} <= set(types)
    assert json.loads(events[1]["stateEnteredEventDetails"]["input"]) == {"x": 1}
    newest = sfn.get_execution_history(
        executionArn=started["executionArn"], maxResults=1, reverseOrder=True
    )
    assert [e["type"] for e in newest["events"]] == ["ExecutionSucceeded"]


def test_given_many_executions_when_listed_by_the_paginator_with_a_status_filter_then_every_one_comes_newest_first(
    sfn: LocalStepFunctions,
) -> None:
    arn = machine(sfn, FIVE_STATES)
    arns = [
        sfn.start_execution(stateMachineArn=arn, name=f"e{i}")["executionArn"] for i in range(5)
    ]
    for execution in arns:
        ended(sfn, execution)

    pages = list(
        sfn.get_paginator("list_executions").paginate(
            stateMachineArn=arn, statusFilter="SUCCEEDED", PaginationConfig={"PageSize": 2}
        )
    )

    assert [len(p["executions"]) for p in pages] == [2, 2, 1]
    assert [e["executionArn"] for p in pages for e in p["executions"]] == arns[::-1]
    assert sfn.list_executions(stateMachineArn=arn, statusFilter="FAILED")["executions"] == []


def test_given_a_running_standard_execution_when_started_again_by_name_then_the_same_input_answers_it_and_other_input_is_refused() -> (
    None
):
    handler = Blocking()
    sfn = sfn_with({"arn:aws:states:::test:": handler})
    arn = machine(sfn, FIVE_STATES)
    first = sfn.start_execution(stateMachineArn=arn, name="run-1", input='{"a": 1}')

    again = sfn.start_execution(stateMachineArn=arn, name="run-1", input='{"a": 1}')
    with pytest.raises(sfn.exceptions.ExecutionAlreadyExists) as refused:
        sfn.start_execution(stateMachineArn=arn, name="run-1", input='{"a": 2}')

    assert again["executionArn"] == first["executionArn"]
    assert isinstance(refused.value, ClientError)
    assert refused.value.response["Error"]["Code"] == "ExecutionAlreadyExists"
    assert len(sfn.list_executions(stateMachineArn=arn)["executions"]) == 1
    handler.release.set()
    ended(sfn, first["executionArn"])
    with pytest.raises(sfn.exceptions.ExecutionAlreadyExists):  # ended: the name is taken
        sfn.start_execution(stateMachineArn=arn, name="run-1", input='{"a": 1}')
    sfn.close()


def test_given_an_express_state_machine_when_started_twice_by_one_name_then_two_executions_run_and_neither_can_be_stopped(
    sfn: LocalStepFunctions,
) -> None:
    arn = machine(sfn, FIVE_STATES, "EXPRESS")

    first = sfn.start_execution(stateMachineArn=arn, name="batch", input="{}")
    second = sfn.start_execution(stateMachineArn=arn, name="batch", input="{}")

    assert first["executionArn"] != second["executionArn"]
    assert ":express:" in first["executionArn"]
    with pytest.raises(sfn.exceptions.ValidationException):
        sfn.stop_execution(executionArn=first["executionArn"])
    assert {ended(sfn, e["executionArn"])["status"] for e in (first, second)} == {"SUCCEEDED"}


def test_given_an_execution_waiting_when_stopped_then_it_is_aborted_at_once_and_its_wait_ends() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    sfn = LocalStepFunctions(clock, {})
    arn = machine(sfn, WAITING)
    execution = sfn.start_execution(stateMachineArn=arn, name="waits")["executionArn"]
    wait_for(clock.waiting)

    stopped = sfn.stop_execution(executionArn=execution, error="Cancelled", cause="by the user")

    described = sfn.describe_execution(executionArn=execution)
    assert (described["status"], described["error"], described["cause"]) == (
        "ABORTED",
        "Cancelled",
        "by the user",
    )
    assert described["stopDate"] == stopped["stopDate"]
    wait_for(lambda: not clock.waiting())  # the hour-long wait ended without the clock moving
    again = sfn.stop_execution(executionArn=execution)  # a no-op once ended
    assert again["stopDate"] == stopped["stopDate"]
    sfn.close()


def test_given_an_execution_in_a_task_when_stopped_then_it_is_aborted_and_its_task_told_to_stop() -> (
    None
):
    handler = Blocking()
    sfn = sfn_with({"arn:aws:states:::test:": handler})
    arn = machine(sfn, FIVE_STATES)
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    wait_for(lambda: handler.contexts)

    sfn.stop_execution(executionArn=execution)

    assert sfn.describe_execution(executionArn=execution)["status"] == "ABORTED"
    assert handler.contexts[0].stopped()
    types = [e["type"] for e in sfn.get_execution_history(executionArn=execution)["events"]]
    assert types[-1] == "ExecutionAborted"
    sfn.close()


def test_given_unknown_names_and_bad_input_when_called_then_the_api_errors_are_raised(
    sfn: LocalStepFunctions,
) -> None:
    arn = machine(sfn, FIVE_STATES)
    missing = arn.replace("stateMachine", "execution") + ":nope"

    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.start_execution(stateMachineArn=arn + "-other")
    with pytest.raises(sfn.exceptions.InvalidExecutionInput):
        sfn.start_execution(stateMachineArn=arn, input="{not json")
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.stop_execution(executionArn=missing)
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=missing)


def test_given_more_ended_executions_than_kept_when_more_end_then_the_oldest_are_forgotten() -> (
    None
):
    sfn = sfn_with(max_ended=3, max_histories=1)
    arn = machine(sfn, FIVE_STATES)
    arns = []
    for i in range(5):
        arns.append(sfn.start_execution(stateMachineArn=arn, name=f"e{i}")["executionArn"])
        ended(sfn, arns[-1])

    assert [e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]] == [
        "e4",
        "e3",
        "e2",
    ]
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=arns[0])
    # the histories of all but the newest are dropped: their start and end remain
    kept = sfn.get_execution_history(executionArn=arns[2])["events"]
    assert [e["type"] for e in kept] == ["ExecutionStarted", "ExecutionSucceeded"]
    assert len(sfn.get_execution_history(executionArn=arns[4])["events"]) > 2
    # a forgotten name may be used again
    again = sfn.start_execution(stateMachineArn=arn, name="e0")["executionArn"]
    assert ended(sfn, again)["status"] == "SUCCEEDED"
    sfn.close()


def test_given_on_end_when_executions_end_then_it_hears_each_with_its_state_transitions() -> None:
    heard: list[ExecutionSummary] = []
    sfn = sfn_with(on_end=heard.append, histories=False)
    arn = machine(sfn, FIVE_STATES)
    map_arn = sfn.create_state_machine(
        name="mapped",
        roleArn=ROLE,
        definition=json.dumps(
            {
                "StartAt": "Each",
                "States": {
                    "Each": {
                        "Type": "Map",
                        "ItemsPath": "$.items",
                        "ItemProcessor": {
                            "StartAt": "One",
                            "States": {
                                "One": {"Type": "Pass", "Next": "Two"},
                                "Two": {"Type": "Succeed"},
                            },
                        },
                        "End": True,
                    }
                },
            }
        ),
    )["stateMachineArn"]

    first = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    mapped = sfn.start_execution(stateMachineArn=map_arn, input='{"items": [1, 2, 3]}')[
        "executionArn"
    ]

    wait_for(lambda: len(heard) == 2)
    by_arn = {summary.execution_arn: summary for summary in heard}
    assert by_arn[first].transitions == 5
    assert by_arn[mapped].transitions == 1 + 3 * 2
    assert by_arn[first].status == "SUCCEEDED"
    assert by_arn[first].type == "STANDARD"
    assert by_arn[first].start <= by_arn[first].stop
    sfn.close()


def test_given_an_observer_when_the_api_is_called_then_it_hears_each_call_with_its_answer_or_error() -> (
    None
):
    heard: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    sfn = sfn_with(observer=lambda op, request, response: heard.append((op, request, response)))
    arn = machine(sfn, FIVE_STATES)

    started = sfn.start_execution(stateMachineArn=arn, name="seen")
    with pytest.raises(ClientError):
        sfn.describe_execution(executionArn=arn + ":missing")

    operations = [op for op, _, _ in heard]
    assert operations == [
        "stepfunctions:CreateStateMachine",
        "stepfunctions:StartExecution",
        "stepfunctions:DescribeExecution",
    ]
    assert heard[1][1] == {"stateMachineArn": arn, "name": "seen"}
    assert heard[1][2] == started
    assert heard[2][2] == {"Error": {"Code": "ExecutionDoesNotExist"}}
    sfn.close()


def test_given_a_task_token_when_heartbeats_are_sent_then_the_task_stays_alive_past_its_heartbeat_seconds() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    handler = Blocking()
    sfn = LocalStepFunctions(clock, {"arn:aws:states:::test:": handler})
    definition = {
        "StartAt": "Work",
        "States": {
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::test:do",
                "Parameters": {"token.$": "$$.Task.Token"},
                "HeartbeatSeconds": 10,
                "End": True,
            }
        },
    }
    arn = machine(sfn, definition)
    execution = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    wait_for(lambda: handler.contexts)
    token = handler.contexts[0].task_token
    assert token is not None

    for _ in range(3):
        clock.advance(6)
        sfn.send_task_heartbeat(taskToken=token)
    handler.release.set()

    assert ended(sfn, execution)["status"] == "SUCCEEDED"
    with pytest.raises(sfn.exceptions.TaskTimedOut):
        sfn.send_task_heartbeat(taskToken=token)
    sfn.close()
