"""chronoq's ASL interpreter: each state type and field the run state machine uses, with
in-test task handlers and a clock the test controls.

Why this module is long: it is one interpreter of one language (as
chronoq/local/engine/interpreter.py is): a section per state type and field the run state
machine uses, over the same task handlers and clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.execution import machines
from chronoq.local.clock import LocalClock, Waits
from chronoq.local.engine.interpreter import (
    Execution,
    Interpreter,
    Outcome,
    TaskContext,
    TaskFailed,
    TaskHandler,
)

from tests.support import wait_for

ARN = "arn:aws:states:us-east-1:123456789012:execution:machine:run-1"


class RecordingClock(LocalClock):
    """A clock that skips (or holds) its waits and remembers how long each was."""

    def __init__(self, waits: Waits = Waits.SKIP) -> None:
        super().__init__(waits)
        self.waited: list[float] = []
        #: Whether each wait was announced (see LocalClock.wait).
        self.announced: list[bool] = []

    def wait(
        self,
        seconds: float,
        woken: threading.Event | None = None,
        running: Callable[[], bool] = lambda: True,
        announced: bool = True,
    ) -> None:
        self.waited.append(seconds)
        self.announced.append(announced)
        super().wait(seconds, woken, running, announced)


def execution(document: Any = None, name: str = "run-1") -> Execution:
    return Execution(
        arn=ARN,
        name=name,
        state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:machine",
        state_machine_name="machine",
        input={} if document is None else document,
        start_time=datetime(2030, 1, 1, 8, tzinfo=UTC),
        events=[],
    )


def run(
    definition: Mapping[str, Any],
    document: Any = None,
    tasks: Mapping[str, TaskHandler] | None = None,
    clock: LocalClock | None = None,
    random: Callable[[], float] = lambda: 0.5,
) -> Outcome:
    interpreter = Interpreter(definition, tasks or {}, clock or RecordingClock(), random=random)
    return interpreter.execute(execution(document))


def one(state: dict[str, Any]) -> dict[str, Any]:
    """A machine of one state that ends."""
    return {"StartAt": "Only", "States": {"Only": {**state, "End": True}}}


def task(**fields: Any) -> dict[str, Any]:
    return one({"Type": "Task", "Resource": "arn:aws:states:::test:do", **fields})


class Handler:
    """A task handler that answers from a script: results, or errors to raise."""

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        self.calls.append(parameters)
        step = self.script.pop(0) if self.script else {"ok": True}
        if isinstance(step, BaseException):
            raise step
        return step

    def tasks(self) -> dict[str, TaskHandler]:
        return {"arn:aws:states:::test:": self}


# --- Pass, paths, context ----------------------------------------------------------------


def test_given_a_pass_state_with_parameters_when_run_then_paths_context_and_result_path_shape_its_output() -> (
    None
):
    definition = one(
        {
            "Type": "Pass",
            "Parameters": {
                "id.$": "$.job.id",
                "name.$": "$$.Execution.Name",
                "state.$": "$$.State.Name",
                "entered.$": "$$.State.EnteredTime",
                "fixed": {"nested": [1, "two"]},
            },
            "ResultPath": "$.made",
        }
    )

    outcome = run(definition, {"job": {"id": "j1"}})

    assert outcome.status == "SUCCEEDED"
    made = outcome.output["made"]
    assert outcome.output["job"] == {"id": "j1"}
    assert (made["id"], made["name"], made["state"]) == ("j1", "run-1", "Only")
    assert made["fixed"] == {"nested": [1, "two"]}
    assert made["entered"].endswith("Z")


def test_given_input_and_output_paths_when_run_then_they_select_and_null_paths_give_empty_objects() -> (
    None
):
    definition = {
        "StartAt": "Select",
        "States": {
            "Select": {"Type": "Pass", "InputPath": "$.a", "ResultPath": "$.b", "Next": "Out"},
            "Out": {"Type": "Pass", "OutputPath": "$.b", "Next": "Drop"},
            "Drop": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": None, "End": True},
        },
    }

    outcome = run(definition, {"a": {"v": 1}})

    assert outcome.output == {"v": 1}
    nulled = run(one({"Type": "Pass", "InputPath": None}), {"a": 1})
    assert nulled.output == {}


def test_given_a_result_path_into_the_input_when_run_then_the_input_document_is_left_unchanged() -> (
    None
):
    document = {"a": {"b": 1}}
    definition = one({"Type": "Pass", "Result": 2, "ResultPath": "$.a.c"})

    outcome = run(definition, document)

    assert outcome.output == {"a": {"b": 1, "c": 2}}
    assert document == {"a": {"b": 1}}


def test_given_a_path_that_does_not_resolve_when_run_then_the_execution_fails_with_states_runtime_even_with_a_catch() -> (
    None
):
    handler = Handler()
    definition = task(
        Parameters={"x.$": "$.missing"},
        Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Only"}],
    )

    outcome = run(definition, {}, handler.tasks())

    assert (outcome.status, outcome.error) == ("FAILED", "States.Runtime")
    assert "$.missing" in (outcome.cause or "")
    assert handler.calls == []


# --- Task -------------------------------------------------------------------------------------


def test_given_a_task_when_run_then_the_handler_gets_the_parameters_and_the_result_is_selected_and_placed() -> (
    None
):
    handler = Handler({"Payload": {"output": "o", "extra": 1}, "StatusCode": 200})
    definition = task(
        Parameters={"FunctionName": "f", "Payload": {"id.$": "$.id"}},
        ResultSelector={"output.$": "$.Payload.output"},
        ResultPath="$.result",
    )

    outcome = run(definition, {"id": "r1"}, handler.tasks())

    assert handler.calls == [{"FunctionName": "f", "Payload": {"id": "r1"}}]
    assert outcome.output == {"id": "r1", "result": {"output": "o"}}


def test_given_resources_of_several_prefixes_when_run_then_the_longest_matching_prefix_handles_each() -> (
    None
):
    general, specific = Handler("general"), Handler("specific")
    definition = one(
        {"Type": "Task", "Resource": "arn:aws:states:::test:special", "ResultPath": "$.r"}
    )
    tasks = {"arn:aws:states:::test:": general, "arn:aws:states:::test:special": specific}

    outcome = run(definition, {}, tasks)

    assert outcome.output == {"r": "specific"}
    assert general.calls == []


def test_given_a_failing_task_with_retries_when_run_then_the_clock_is_asked_for_each_backoff_wait() -> (
    None
):
    handler = Handler(*[TaskFailed("Boom", "again")] * 3, {"done": True})
    clock = RecordingClock()
    definition = task(
        Retry=[
            {"ErrorEquals": ["Other"], "MaxAttempts": 5},
            {"ErrorEquals": ["Boom"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 3},
        ]
    )

    outcome = run(definition, {}, handler.tasks(), clock)

    assert outcome.output == {"done": True}
    assert clock.waited == [2, 6, 18]
    assert len(handler.calls) == 4


def test_given_retries_capped_and_jittered_when_run_then_the_waits_are_capped_then_drawn_below_the_cap() -> (
    None
):
    handler = Handler(*[TaskFailed("Boom", "")] * 3)
    clock = RecordingClock()
    definition = task(
        Retry=[
            {
                "ErrorEquals": ["States.ALL"],
                "IntervalSeconds": 4,
                "BackoffRate": 2,
                "MaxAttempts": 3,
                "MaxDelaySeconds": 10,
                "JitterStrategy": "FULL",
            }
        ]
    )

    run(definition, {}, handler.tasks(), clock, random=lambda: 0.25)

    assert clock.waited == [1.0, 2.0, 2.5]  # 4, 8, min(16, 10), each x 0.25


def test_given_max_attempts_zero_when_the_task_fails_then_it_is_not_retried_and_the_catch_takes_it() -> (
    None
):
    handler = Handler(TaskFailed("Boom", "why"))
    definition = {
        "StartAt": "Work",
        "States": {
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::test:do",
                "Retry": [{"ErrorEquals": ["Boom"], "MaxAttempts": 0}],
                "Catch": [
                    {
                        "ErrorEquals": ["States.TaskFailed"],
                        "ResultPath": "$.error",
                        "Next": "Caught",
                    }
                ],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }

    outcome = run(definition, {"keep": 1}, handler.tasks())

    assert len(handler.calls) == 1
    assert outcome.output == {"keep": 1, "error": {"Error": "Boom", "Cause": "why"}}


def test_given_an_uncaught_task_failure_when_run_then_the_execution_fails_with_its_error() -> None:
    handler = Handler(TaskFailed("DynamoDB.ConditionalCheckFailedException", "no"))

    outcome = run(task(), {}, handler.tasks())

    assert (outcome.status, outcome.error, outcome.cause) == (
        "FAILED",
        "DynamoDB.ConditionalCheckFailedException",
        "no",
    )


def test_given_a_handler_that_raises_an_exception_of_its_own_when_run_then_the_task_fails_as_states_task_failed() -> (
    None
):
    outcome = run(task(), {}, Handler(RuntimeError("broken")).tasks())

    assert outcome.error == "States.TaskFailed"
    assert "broken" in (outcome.cause or "")


class Blocking:
    """A handler that blocks until released (or its context says stop), beating if told."""

    def __init__(self, beats: bool = False) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.contexts: list[TaskContext] = []
        self.beats = beats
        #: Heartbeats sent so far.
        self.beaten = 0

    def __call__(self, resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        self.contexts.append(context)
        self.started.set()
        while not self.release.wait(0.01) and not context.stopped():
            if self.beats:
                context.heartbeat()
                self.beaten += 1
        return {"released": self.release.is_set()}


def start_in_thread(
    definition: Mapping[str, Any], handler: TaskHandler, clock: LocalClock, document: Any = None
) -> tuple[Execution, list[Outcome]]:
    interpreter = Interpreter(definition, {"arn:aws:states:::test:": handler}, clock)
    running = execution(document if document is not None else {})
    outcomes: list[Outcome] = []
    threading.Thread(target=lambda: outcomes.append(interpreter.execute(running))).start()
    return running, outcomes


def test_given_a_task_with_a_timeout_when_the_held_clock_passes_it_then_the_task_times_out_and_is_abandoned() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    handler = Blocking()
    definition = task(TimeoutSecondsPath="$.timeout")

    _, outcomes = start_in_thread(definition, handler, clock, {"timeout": 30})
    handler.started.wait(5)  # (its time counts from before it started)
    clock.advance(29)
    assert not outcomes  # not yet
    clock.advance(2)

    (outcome,) = wait_for(lambda: outcomes)
    assert (outcome.status, outcome.error) == ("FAILED", "States.Timeout")
    assert handler.contexts[0].stopped()  # abandoned: told to stop


def test_given_a_timeout_when_the_task_answers_in_time_then_its_result_is_used() -> None:
    clock = LocalClock(Waits.HELD)
    handler = Blocking()

    _, outcomes = start_in_thread(task(TimeoutSeconds=30), handler, clock)
    handler.started.wait(5)
    handler.release.set()

    (outcome,) = wait_for(lambda: outcomes)
    assert outcome.output == {"released": True}


def test_given_a_timeout_on_a_skipping_clock_when_the_task_takes_a_moment_then_it_is_not_timed_out() -> (
    None
):
    handler = Blocking()
    timer = threading.Timer(0.2, handler.release.set)
    timer.start()

    outcome = run(
        task(TimeoutSeconds=30), {}, {"arn:aws:states:::test:": handler}, LocalClock(Waits.SKIP)
    )

    assert outcome.output == {"released": True}


def test_given_heartbeat_seconds_when_the_task_stops_beating_then_it_fails_with_a_heartbeat_timeout_and_a_beating_one_does_not() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    silent, beating = Blocking(), Blocking(beats=True)
    definition = task(HeartbeatSecondsPath="$.beat", TimeoutSeconds=100)

    _, silent_outcomes = start_in_thread(definition, silent, clock, {"beat": 5})
    _, beating_outcomes = start_in_thread(definition, beating, clock, {"beat": 5})
    silent.started.wait(5)
    beating.started.wait(5)
    for _ in range(6):  # a second at a time, the beating task beating in each
        beaten = beating.beaten
        clock.advance(1)
        wait_for(lambda b=beaten: beating.beaten > b + 1)  # type: ignore[misc]

    (outcome,) = wait_for(lambda: silent_outcomes)
    assert outcome.error == "States.HeartbeatTimeout"
    assert not beating_outcomes
    beating.release.set()
    assert wait_for(lambda: beating_outcomes)[0].status == "SUCCEEDED"


def test_given_a_heartbeat_timeout_when_a_catch_names_states_timeout_then_it_catches_it_but_task_failed_does_not() -> (
    None
):
    definition = {
        "StartAt": "Work",
        "States": {
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::test:do",
                "TimeoutSeconds": 5,
                "Catch": [
                    {"ErrorEquals": ["States.TaskFailed"], "Next": "Failed"},
                    {"ErrorEquals": ["States.Timeout"], "Next": "TimedOut"},
                ],
                "End": True,
            },
            "Failed": {"Type": "Fail", "Error": "WrongCatch"},
            "TimedOut": {"Type": "Succeed"},
        },
    }
    clock = LocalClock(Waits.HELD)
    handler = Blocking()

    _, outcomes = start_in_thread(definition, handler, clock)
    handler.started.wait(5)
    clock.advance(6)

    (outcome,) = wait_for(lambda: outcomes)
    assert outcome.status == "SUCCEEDED"


# --- Choice -----------------------------------------------------------------------------------


def choice(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "StartAt": "Pick",
        "States": {
            "Pick": {
                "Type": "Choice",
                "Choices": [{**rule, "Next": "Yes"}],
                "Default": "No",
            },
            "Yes": {"Type": "Pass", "Result": "yes", "End": True},
            "No": {"Type": "Pass", "Result": "no", "End": True},
        },
    }


DOCUMENT = {
    "s": "sqs",
    "n": 3,
    "f": 2.5,
    "b": True,
    "t": "2030-01-01T08:00:00Z",
    "other": "sqs",
    "nothing": None,
    "list": [1],
}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"Variable": "$.s", "StringEquals": "sqs"}, "yes"),
        ({"Variable": "$.s", "StringEquals": "sns"}, "no"),
        ({"Variable": "$.s", "StringEqualsPath": "$.other"}, "yes"),
        ({"Variable": "$.s", "StringLessThan": "t"}, "yes"),
        ({"Variable": "$.s", "StringGreaterThanEquals": "sqs"}, "yes"),
        ({"Variable": "$.s", "StringMatches": "s*s"}, "yes"),
        ({"Variable": "$.s", "StringMatches": "s\\*s"}, "no"),
        ({"Variable": "$.n", "NumericEquals": 3}, "yes"),
        ({"Variable": "$.n", "NumericLessThan": 3}, "no"),
        ({"Variable": "$.f", "NumericGreaterThan": 2}, "yes"),
        ({"Variable": "$.f", "NumericLessThanEqualsPath": "$.n"}, "yes"),
        ({"Variable": "$.s", "NumericEquals": 3}, "no"),  # another type: false
        ({"Variable": "$.b", "BooleanEquals": True}, "yes"),
        ({"Variable": "$.n", "BooleanEquals": True}, "no"),
        ({"Variable": "$.t", "TimestampLessThan": "2030-01-01T09:00:00Z"}, "yes"),
        ({"Variable": "$.t", "TimestampGreaterThan": "2030-01-01T09:00:00+00:00"}, "no"),
        ({"Variable": "$.t", "TimestampEquals": "2030-01-01T08:00:00+00:00"}, "yes"),
        ({"Variable": "$.s", "IsPresent": True}, "yes"),
        ({"Variable": "$.missing", "IsPresent": True}, "no"),
        ({"Variable": "$.list[0]", "IsPresent": True}, "yes"),
        ({"Variable": "$.list[1]", "IsPresent": True}, "no"),
        ({"Variable": "$.nothing", "IsNull": True}, "yes"),
        ({"Variable": "$.n", "IsNumeric": True}, "yes"),
        ({"Variable": "$.b", "IsNumeric": True}, "no"),
        ({"Variable": "$.s", "IsString": True}, "yes"),
        ({"Variable": "$.b", "IsBoolean": True}, "yes"),
        ({"Variable": "$.t", "IsTimestamp": True}, "yes"),
        (
            {
                "And": [
                    {"Variable": "$.n", "IsPresent": True},
                    {"Variable": "$.n", "IsNumeric": True},
                ]
            },
            "yes",
        ),
        (
            {
                "And": [
                    {"Variable": "$.m", "IsPresent": True},
                    {"Variable": "$.m", "IsNumeric": True},
                ]
            },
            "no",
        ),
        (
            {
                "Or": [
                    {"Variable": "$.s", "StringEquals": "x"},
                    {"Variable": "$.n", "NumericEquals": 3},
                ]
            },
            "yes",
        ),
        ({"Not": {"Variable": "$.s", "StringEquals": "sqs"}}, "no"),
    ],
)
def test_given_a_choice_rule_when_evaluated_then_it_picks_as_the_spec_says(
    rule: dict[str, Any], expected: str
) -> None:
    assert run(choice(rule), DOCUMENT).output == expected


def test_given_no_matching_choice_and_no_default_when_run_then_the_execution_fails_with_no_choice_matched() -> (
    None
):
    definition = {
        "StartAt": "Pick",
        "States": {
            "Pick": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.s", "StringEquals": "x", "Next": "End"}],
            },
            "End": {"Type": "Succeed"},
        },
    }

    assert run(definition, DOCUMENT).error == "States.NoChoiceMatched"


def test_given_a_comparison_on_a_missing_variable_when_evaluated_then_the_execution_fails_with_states_runtime() -> (
    None
):
    assert run(choice({"Variable": "$.missing", "StringEquals": "x"}), {}).error == "States.Runtime"


# --- Wait, Succeed, Fail -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ({"Seconds": 7}, 7.0),
        ({"SecondsPath": "$.seconds"}, 12.0),
        ({"TimestampPath": "$.at"}, 90.0),
    ],
)
def test_given_a_wait_state_when_run_then_it_waits_on_the_clock_for_as_long_as_it_says(
    field: dict[str, Any], expected: float
) -> None:
    clock = RecordingClock(Waits.HELD)
    at = clock.now() + timedelta(seconds=90)
    document = {"seconds": 12, "at": at.isoformat().replace("+00:00", "Z")}
    interpreter = Interpreter(one({"Type": "Wait", **field}), {}, clock)
    outcomes: list[Outcome] = []
    threading.Thread(
        target=lambda: outcomes.append(interpreter.execute(execution(document)))
    ).start()

    wait_for(clock.waiting)
    assert not outcomes
    clock.advance(expected)

    assert wait_for(lambda: outcomes)[0].output == document
    assert clock.waited == [pytest.approx(expected)]


def test_given_a_fail_state_with_error_and_cause_paths_when_reached_then_the_execution_fails_with_them() -> (
    None
):
    definition = one({"Type": "Fail", "ErrorPath": "$.e.Error", "CausePath": "$.e.Cause"})
    definition["States"]["Only"].pop("End")

    outcome = run(definition, {"e": {"Error": "Oops", "Cause": "because"}})

    assert (outcome.status, outcome.error, outcome.cause) == ("FAILED", "Oops", "because")


def test_given_a_succeed_state_when_reached_then_the_execution_succeeds_with_its_input() -> None:
    definition = one({"Type": "Succeed", "OutputPath": "$.keep"})
    definition["States"]["Only"].pop("End")

    assert run(definition, {"keep": [1]}).output == [1]


# --- Map --------------------------------------------------------------------------------------


def map_of(processor: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return one(
        {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **processor},
            **fields,
        }
    )


class Concurrency:
    """A handler that counts how many of its calls run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.release = threading.Event()

    def __call__(self, resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        self.release.wait(0.1)
        with self.lock:
            self.now -= 1
        return parameters["value"] * 10


def test_given_a_map_with_max_concurrency_when_run_then_at_most_that_many_iterations_run_at_once_and_results_keep_their_order() -> (
    None
):
    handler = Concurrency()
    processor = {
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": "arn:aws:states:::test:do", "End": True}},
    }
    definition = map_of(
        processor,
        MaxConcurrency=2,
        ItemSelector={"value.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
        ResultPath="$.results",
    )

    outcome = run(definition, {"items": [1, 2, 3, 4, 5]}, {"arn:aws:states:::test:": handler})

    assert outcome.output["results"] == [10, 20, 30, 40, 50]
    assert handler.peak == 2


def test_given_a_map_without_max_concurrency_when_run_then_all_iterations_run_at_once() -> None:
    handler = Concurrency()
    processor = {
        "StartAt": "Work",
        "States": {
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::test:do",
                "Parameters": {"value.$": "$"},
                "End": True,
            }
        },
    }

    outcome = run(
        map_of(processor, MaxConcurrency=0),
        {"items": [1, 2, 3, 4]},
        {"arn:aws:states:::test:": handler},
    )

    assert outcome.output == [10, 20, 30, 40]
    assert handler.peak == 4


def test_given_a_failing_iteration_when_the_map_runs_then_the_map_fails_with_its_error_and_its_catch_takes_it() -> (
    None
):
    processor = {
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Choice",
                "Choices": [{"Variable": "$", "NumericEquals": 2, "Next": "Bad"}],
                "Default": "Good",
            },
            "Bad": {"Type": "Fail", "Error": "ItemFailed", "Cause": "two"},
            "Good": {"Type": "Succeed"},
        },
    }
    definition: dict[str, Any] = {
        "StartAt": "Each",
        "States": {
            "Each": {
                **map_of(processor)["States"]["Only"],
                "End": False,
                "Catch": [
                    {"ErrorEquals": ["ItemFailed"], "ResultPath": "$.error", "Next": "Caught"}
                ],
                "Next": "Caught",
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    definition["States"]["Each"].pop("End")

    outcome = run(definition, {"items": [1, 2, 3]})

    assert outcome.output["error"] == {"Error": "ItemFailed", "Cause": "two"}


def test_given_a_failing_iteration_when_others_wait_then_their_waits_end_and_the_map_fails() -> (
    None
):
    clock = LocalClock(Waits.HELD)
    processor = {
        "StartAt": "Check",
        "States": {
            "Check": {
                "Type": "Choice",
                "Choices": [{"Variable": "$", "NumericEquals": 1, "Next": "Bad"}],
                "Default": "Long",
            },
            "Bad": {"Type": "Wait", "Seconds": 1, "Next": "Fail"},
            "Fail": {"Type": "Fail", "Error": "ItemFailed"},
            "Long": {"Type": "Wait", "Seconds": 3600, "End": True},
        },
    }
    interpreter = Interpreter(map_of(processor), {}, clock)
    outcomes: list[Outcome] = []
    threading.Thread(
        target=lambda: outcomes.append(interpreter.execute(execution({"items": [1, 2, 3]})))
    ).start()

    wait_for(lambda: len(clock.waiting()) == 3)
    clock.advance(1)

    (outcome,) = wait_for(lambda: outcomes)
    assert outcome.error == "ItemFailed"
    wait_for(lambda: not clock.waiting())  # the hour-long waits ended with the Map


# --- Intrinsics -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("States.Format('{}', $.n)", "3"),
        ("States.Format('run/{}/{}', $.s, $.f)", "run/sqs/2.5"),
        ("States.Format('{} \\{literal\\}', $.b)", "true {literal}"),
        ("States.Format('it\\'s {}', $.list)", "it's [1, 2]"),
        ("States.JsonToString($.obj)", '{"a":1,"b":[true,null]}'),
        ("States.StringToJson($.text)", {"x": 1}),
        ("States.MathAdd($.n, 1)", 4),
        ("States.MathAdd($.n, -5)", -2),
        ("States.StringSplit('a,b,,c', ',')", ["a", "b", "c"]),
        ("States.Array($.s, States.Format('x{}', $.n))", ["sqs", "x3"]),
        ("States.ArrayGetItem($.list, 1)", 2),
        ("States.ArrayLength($.list)", 2),
        ("States.ArrayContains($.list, 2)", True),
        ("States.Array()", []),
    ],
)
def test_given_an_intrinsic_function_when_evaluated_then_it_answers_as_step_functions_does(
    expression: str, expected: Any
) -> None:
    document = {
        "n": 3,
        "s": "sqs",
        "f": 2.5,
        "b": True,
        "list": [1, 2],
        "obj": {"a": 1, "b": [True, None]},
        "text": '{"x": 1}',
    }
    definition = one({"Type": "Pass", "Parameters": {"v.$": expression}, "OutputPath": "$.v"})

    assert run(definition, document).output == expected


def test_given_uuid_when_evaluated_then_each_call_answers_a_new_uuid() -> None:
    definition = one(
        {"Type": "Pass", "Parameters": {"a.$": "States.UUID()", "b.$": "States.UUID()"}}
    )

    output = run(definition).output

    assert output["a"] != output["b"]
    assert len(output["a"]) == 36


def test_given_an_intrinsic_given_the_wrong_types_when_evaluated_then_it_fails_with_intrinsic_failure() -> (
    None
):
    definition = one({"Type": "Pass", "Parameters": {"v.$": "States.MathAdd($.s, 1)"}})

    assert run(definition, {"s": "x"}).error == "States.IntrinsicFailure"


# --- The run state machine's file -------------------------------------------------------------

PLACEHOLDERS = {
    r.ASL_RUNS_TABLE: "runs",
    r.ASL_JOBS_TABLE: "jobs",
    r.ASL_RUNNER_FUNCTION: "arn:aws:lambda:us-east-1:123456789012:function:runner",
    r.ASL_CONTAINER_CLUSTER: "cluster",
    r.ASL_CONTAINER_SUBNETS: "subnet-1,subnet-2",
    r.ASL_CONTAINER_SECURITY_GROUP: "sg-1",
}
SERVICES = ("lambda:invoke", "dynamodb:", "sqs:", "sns:", "events:", "ecs:runTask")


@pytest.mark.parametrize("machine", [machines.STATE_MACHINE, machines.EXPRESS_STATE_MACHINE])
def test_given_the_run_state_machine_file_when_compiled_then_every_state_and_resource_is_understood(
    machine: machines.StateMachine,
) -> None:
    definition = json.loads(machine.definition(PLACEHOLDERS))
    tasks = {f"arn:aws:states:::{s}": Handler() for s in SERVICES}

    interpreter = Interpreter(definition, tasks, LocalClock(Waits.SKIP))

    top = interpreter.machine
    states = top.states if not machine.express else top.states["Runs"].machine.states  # type: ignore[attr-defined]
    assert "MarkRunning" in states
    assert all(
        interpreter.handler_for(s["Resource"]) is not None
        for s in definition_states(definition)
        if s["Type"] == "Task"
    )


def definition_states(definition: dict[str, Any]) -> list[Mapping[str, Any]]:
    from chronoq.local.engine.interpreter import states_of

    return [state for _, state in states_of(definition)]


def test_given_the_run_state_machine_when_a_sqs_run_goes_through_with_instant_handlers_then_it_succeeds_recording_its_states() -> (
    None
):
    definition = machines.STATE_MACHINE.definition(PLACEHOLDERS)
    calls: list[str] = []

    def service(resource: str, parameters: dict[str, Any], context: TaskContext) -> Any:
        calls.append(resource.rsplit(":", 1)[-1])
        return {"MessageId": "m1"}

    interpreter = Interpreter(definition, {"arn:aws:states:::": service}, LocalClock(Waits.SKIP))
    running = execution(run_input("sqs"))

    outcome = interpreter.execute(running)

    assert outcome.status == "SUCCEEDED"
    assert calls == ["updateItem", "sendMessage", "updateItem"]
    entered = [d["name"] for kind, _, d in running.events or [] if kind.endswith("StateEntered")]
    assert entered == [
        "MarkRunning",
        "StartAttempt",
        "Route",
        "SendToQueue",
        "MarkSucceeded",
        "ReleaseIfExclusive",
        "Outcome",
        "Succeeded",
    ]
    assert running.transitions == len(entered)


def run_input(target: str) -> dict[str, Any]:
    return {
        "job_id": "job_1",
        "run_id": "job_1_20300101T080000Z",
        "owner": "alice",
        "priority": "normal",
        "trigger": "schedule",
        "generation": 1,
        "scheduled_at": "2030-01-01T08:00:00Z",
        "queued_at": "2030-01-01T08:00:00Z",
        "expires_at": 1900000000,
        "notify": False,
        "timeout_seconds": 60,
        "target": {"type": target, "queue_url": "https://sqs/q"},
        "delivery": {"message": "hello"},
        "attempt": {"number": 1},
        "retry": {"max_attempts": 1},
        "output_location": "",
        "exclusive": False,
        "flows": [],
        "slots": "",
        "parameters": "",
    }


def test_given_a_task_running_under_a_timeout_when_it_waits_on_the_clock_then_the_wait_is_not_announced() -> (
    None
):
    """A task at work is not waiting for its timeout to come: whoever moves a held clock to
    the next instant something waits for (chronoq local's tests) must not jump to it."""
    clock = RecordingClock(Waits.HELD)
    handler = Blocking()

    _, outcomes = start_in_thread(task(TimeoutSeconds=30), handler, clock)
    handler.started.wait(5)
    handler.release.set()

    assert wait_for(lambda: outcomes)[0].status == "SUCCEEDED"
    assert clock.announced
    assert not any(clock.announced)


# --- the cost model of an execution's duration ------------------------------------------------


def test_given_a_cost_model_when_an_execution_runs_then_its_billed_duration_follows_its_path_not_the_machine() -> (
    None
):
    """States entered, each task's modeled call (a failed one too), the seconds of its waits
    and retries, and a Map's iterations side by side up to its MaxConcurrency: 5 states at the
    top, 2 in each iteration; the top task fails once (30 ms) then succeeds (99 ms) after a 1 s
    retry; iterations of 50, 10 and 40 ms of work, two at a time: 60 and 20, then 50 after the
    second, so 70 ms; and a 2 s wait."""
    first = iter([30.0, 99.0])

    def cost(call: Callable[[], Any], spend: Callable[[float], None]) -> Any:
        result: Any = None
        try:
            result = call()
            return result
        finally:
            spend(
                float(result["ms"]) if isinstance(result, dict) and "ms" in result else next(first)
            )

    flaky = Handler(TaskFailed("Boom", ""), {"ok": True})
    tasks: dict[str, TaskHandler] = {
        **flaky.tasks(),
        "arn:aws:states:::work:": lambda resource, parameters, context: parameters,
    }
    definition = {
        "StartAt": "Wait",
        "States": {
            "Wait": {"Type": "Wait", "Seconds": 2, "Next": "Task"},
            "Task": {
                "Type": "Task",
                "Resource": "arn:aws:states:::test:do",
                "Retry": [{"ErrorEquals": ["Boom"], "IntervalSeconds": 1, "BackoffRate": 1}],
                "ResultPath": None,
                "Next": "Map",
            },
            "Map": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 2,
                "ItemProcessor": {
                    "StartAt": "Pass",
                    "States": {
                        "Pass": {"Type": "Pass", "Next": "Work"},
                        "Work": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::work:do",
                            "Parameters": {"ms.$": "$"},
                            "End": True,
                        },
                    },
                },
                "ResultPath": None,
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "Next": "End"},
            "End": {"Type": "Succeed"},
        },
    }
    interpreter = Interpreter(definition, tasks, RecordingClock(), task_cost=cost, state_ms=5.0)
    ran = execution({"items": [50, 10, 40]})

    outcome = interpreter.execute(ran)

    assert (outcome.status, outcome.error, outcome.cause) == ("SUCCEEDED", None, None)
    assert ran.billed_ms == pytest.approx(5 * 5 + 2000 + 30 + 1000 + 99 + 70)


def test_given_no_cost_model_when_an_execution_runs_then_only_its_waits_and_states_count() -> None:
    interpreter = Interpreter(one({"Type": "Wait", "Seconds": 3}), {}, RecordingClock())
    ran = execution()

    interpreter.execute(ran)

    assert ran.billed_ms == pytest.approx(3000)
