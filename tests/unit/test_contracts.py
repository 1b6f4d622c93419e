"""The run state machine held to chronoq's contracts: what its DynamoDB states write to a run
item is what the run codec reads, and what it hands the runner (and reads back) is what
chronoq.execution.contract defines."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.aws.codecs import (
    ATTEMPT_ATTRIBUTES,
    RUN_ATTRIBUTES,
    dump,
    new_run_item,
    run_from_item,
)
from chronoq.domain.runs import RunStatus
from chronoq.execution import batches, contract, machines
from chronoq.fakes.asl import gates
from pydantic import BaseModel

from tests.builders import job_spec

ASL = json.loads(machines.STATE_MACHINE.path.read_text())
STATES: dict[str, dict[str, Any]] = ASL["States"]


def _type_of(value: dict[str, Any]) -> str:
    """``{"S": ...}`` or ``{"S.$": ...}`` -> ``S``."""
    (key,) = value
    return str(key).removesuffix(".$")


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _written(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Attribute name -> the typed value an updateItem state writes to it (SET and ADD)."""
    parameters = state["Parameters"]
    names = parameters.get("ExpressionAttributeNames", {})
    values = parameters.get("ExpressionAttributeValues", {})
    written = {}
    expression = parameters["UpdateExpression"]
    for clause in re.split(r"\b(?=SET |ADD |REMOVE |DELETE )", expression):
        action, _, rest = clause.strip().partition(" ")
        if action not in ("SET", "ADD"):
            continue
        for assignment in _top_level(rest):
            target, _, source = assignment.replace("=", " ", 1).strip().partition(" ")
            name = names.get(target, target)
            value = re.findall(r":\w+", source)[-1]  # list_append(if_not_exists(x, :none), :v)
            if value in values:
                written[name] = values[value]
            else:  # a value the runner answered, typed as the contract types it
                path = values[value + ".$"]
                written[name] = {f"{RUNNER_TYPED[path]}.$": path}
    return written


#: Values the ASL writes as the runner typed them (see contract.AttemptResult).
RUNNER_TYPED = {"$.result.logs": "L", "$.result.log_objects": "L"}


RUN_WRITERS = {
    name: state
    for name, state in STATES.items()
    if state.get("Resource", "").startswith("arn:aws:states:::dynamodb:")
    and not state["Resource"].endswith(":getItem")
    and state["Parameters"]["TableName"] == "${" + r.ASL_RUNS_TABLE + "}"
}


def test_given_a_state_reading_a_run_when_compared_with_the_codec_then_it_reads_its_status() -> (
    None
):
    parameters = STATES["StillRunning"]["Parameters"]
    (name,) = parameters["ExpressionAttributeNames"].values()
    assert name == "status"
    assert RUN_ATTRIBUTES[name] == "S"
    assert STATES["StillRunning"]["ResultSelector"] == {"status.$": f"$.Item.{name}.S"}


def test_given_the_asl_when_read_then_it_writes_run_items_in_several_states() -> None:
    assert {"MarkRunning", "MarkSucceeded", "RecordAttempt", "MarkFailed", "MarkTimedOut"} <= set(
        RUN_WRITERS
    )


@pytest.mark.parametrize("state", sorted(RUN_WRITERS))
def test_given_a_state_writing_a_run_when_compared_with_the_codec_then_names_and_types_match(
    state: str,
) -> None:
    written = _written(RUN_WRITERS[state])

    assert written, f"{state} writes nothing the test could read"
    for name, value in written.items():
        assert name in RUN_ATTRIBUTES, f"{state} writes {name}, which the run codec does not know"
        assert _type_of(value) == RUN_ATTRIBUTES[name], f"{state} writes {name} as {value}"
        if name == "attempts":
            (element,) = value["L"]
            for field, typed in element["M"].items():
                assert ATTEMPT_ATTRIBUTES.get(field) == _type_of(typed), (state, field)


def test_given_the_states_writing_a_status_when_read_then_each_writes_the_run_status_it_is_named_for() -> (
    None
):
    written = {
        name: _written(state)["status"]
        for name, state in RUN_WRITERS.items()
        if "status" in _written(state)
    }

    statuses = {name: RunStatus(value["S"]) for name, value in written.items()}

    assert statuses == {
        "MarkRunning": RunStatus.RUNNING,
        "MarkSucceeded": RunStatus.SUCCEEDED,
        "MarkFailed": RunStatus.FAILED,
        "MarkTimedOut": RunStatus.TIMED_OUT,
    }


def test_given_the_asl_when_its_conditional_writes_are_read_then_the_fakes_read_every_one() -> None:
    conditional = {
        name
        for name, state in STATES.items()
        if "ConditionExpression" in state.get("Parameters", {})
    }

    assert set(gates()) == conditional
    assert {
        "MarkRunning",
        "MarkSucceeded",
        "MarkFailed",
        "MarkTimedOut",
        "ReleaseJob",
    } <= conditional
    for name in conditional:  # each as the file gives it
        assert gates()[name].expression == STATES[name]["Parameters"]["ConditionExpression"]


def test_given_a_new_run_when_encoded_then_every_attribute_is_one_the_codec_declares() -> None:
    from datetime import UTC, datetime

    from chronoq.domain.runs import Run, Trigger

    run = Run(
        id="r",
        job_id="j",
        owner="o",
        status=RunStatus.SCHEDULED,
        priority=job_spec().priority,
        trigger=Trigger.SCHEDULE,
        scheduled_at=datetime(2030, 1, 1, tzinfo=UTC),
    )
    item = new_run_item(run, datetime(2030, 1, 1, tzinfo=UTC))
    marked = new_run_item(run.model_copy(update={"notify": True}), datetime(2030, 1, 1, tzinfo=UTC))

    assert set(item) <= set(RUN_ATTRIBUTES)
    assert set(marked) <= set(RUN_ATTRIBUTES)
    assert dump(item).get("notify") is None  # written only when true
    assert dump(marked)["notify"] == {"BOOL": True} == {RUN_ATTRIBUTES["notify"]: True}
    assert run_from_item(dump(marked)).notify is True
    assert run_from_item(dump(item)).notify is False


# --- what the runner is handed, and what the state machine reads from its answers ----------


def _payload_keys(state: str, key: str | None = None) -> set[str]:
    payload = STATES[state]["Parameters"]["Payload"]
    if key is not None:
        payload = payload[key]
    return {k.removesuffix(".$") for k in payload}


def _fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def _selected(state: str) -> set[str]:
    """The answer fields a Task state's ResultSelector reads from the runner's Payload."""
    return {
        path.removeprefix("$.Payload.")
        for path in STATES[state]["ResultSelector"].values()
        if path.startswith("$.Payload.")
    }


@pytest.mark.parametrize(
    ("state", "key", "request_model", "answer_model"),
    [
        ("RunTarget", None, contract.AttemptRequest, contract.AttemptResult),
        (
            "CollectContainer",
            contract.COLLECT_CONTAINER,
            contract.CollectRequest,
            contract.AttemptResult,
        ),
        (
            "PrepareContainer",
            contract.PREPARE_CONTAINER,
            contract.PrepareRequest,
            contract.PrepareResult,
        ),
        ("Decide", contract.DECIDE, contract.DecideRequest, contract.DecideResult),
    ],
)
def test_given_a_runner_state_when_compared_with_the_contract_then_request_and_answer_match(
    state: str, key: str | None, request_model: type[BaseModel], answer_model: type[BaseModel]
) -> None:
    # (logs_with_outcome: only the EXPRESS definition passes it; see the test below)
    assert _payload_keys(state, key) == _fields(request_model) - {"logs_with_outcome"}
    assert _selected(state) <= _fields(answer_model)


def test_given_the_execution_input_when_the_asl_reads_it_then_every_path_is_a_field() -> None:
    written_by_the_asl = {
        path.removeprefix("$.").split(".")[0]
        for path in re.findall(r'"ResultPath": "([^"]+)"', json.dumps(ASL))
    }
    read = set(re.findall(r'"\$\.(\w+)', json.dumps(ASL)))
    # (a Map's iterations read what its ItemSelector hands each: checked below)
    selected = {
        name.removesuffix(".$")
        for state in STATES.values()
        if state["Type"] == "Map"
        for name in state["ItemSelector"]
    }

    # (Payload: what a Lambda invocation answers; Item: what a getItem answers)
    unknown = (
        read
        - _fields(contract.ExecutionInput)
        - written_by_the_asl
        - selected
        - {"Payload", "Item"}
    )
    assert unknown == set()


def test_given_a_run_holding_flow_slots_when_it_ends_then_the_asl_gives_each_back_and_only_then() -> (
    None
):
    """Every end of a run passes ReleaseIfExclusive: a run with flows goes through
    ReleaseFlows (a Map over ``flows``, each iteration taking the run's holder out of the
    flow's item, as FakeStore.release_flow and DynamoStore.release_flow do), then on to
    ReleaseJob for an exclusive job; a run without flows takes no step more than before."""
    choice = STATES["ReleaseIfExclusive"]
    rules = {rule["Next"]: rule for rule in choice["Choices"]}
    assert rules["ReleaseFlows"] == {
        "Variable": "$.flows[0]",
        "IsPresent": True,
        "Next": "ReleaseFlows",
    }
    assert choice["Default"] == "Outcome"
    release = STATES["ReleaseFlows"]
    assert release["ItemsPath"] == "$.flows"
    assert release["ItemSelector"] == {"flow.$": "$$.Map.Item.Value", "run_id.$": "$.run_id"}
    assert release["Next"] == "ReleaseJobIfExclusive"
    (task,) = [s for s in release["ItemProcessor"]["States"].values() if s["Type"] == "Task"]
    parameters = task["Parameters"]
    assert parameters["TableName"] == "${" + r.ASL_JOBS_TABLE + "}"
    assert parameters["Key"] == {"job_id": {"S.$": "$.flow"}}
    assert parameters["UpdateExpression"] == "REMOVE holders.#run"
    assert parameters["ExpressionAttributeNames"] == {"#run.$": "$.run_id"}
    then = {rule["Next"]: rule for rule in STATES["ReleaseJobIfExclusive"]["Choices"]}
    assert set(then) == {"ReleaseJob"}
    assert STATES["ReleaseJobIfExclusive"]["Default"] == "Outcome"
    assert "flows" in _fields(contract.ExecutionInput)


# --- the EXPRESS state machine: the run states, for each run of a batch ----------------------


def test_given_the_express_definition_when_read_then_it_runs_the_run_states_for_each_run_of_a_batch() -> (
    None
):
    express = json.loads(machines.EXPRESS_STATE_MACHINE.text())

    (name,) = express["States"]
    runs = express["States"][name]
    assert express["StartAt"] == name
    assert runs["Type"] == "Map"
    assert runs["ItemsPath"] == f"$.{batches.RUNS}"
    assert runs["MaxConcurrency"] == 0  # side by side
    iteration = runs["ItemProcessor"]
    # each run first waits for its second, its planned start (its fire time plus its window
    # offset, or the second its flow reserved; the worker starts a batch in the second before)
    first = iteration["States"].pop(iteration["StartAt"])
    assert first == {
        "Type": "Wait",
        "Comment": first["Comment"],
        "TimestampPath": "$.starts_at",
        "Next": ASL["StartAt"],
    }
    assert set(iteration["States"]) == set(STATES)
    for state_name, state in STATES.items():
        if state["Type"] == "Fail":  # a run's end is not the batch's: the others go on
            assert iteration["States"][state_name]["Type"] == "Succeed", state_name
        elif state_name in ("RunTarget", "CollectContainer"):
            # the runner hands back the attempt's log lines: MarkSucceeded writes them
            payload = iteration["States"][state_name]["Parameters"]["Payload"]
            request = payload.get(contract.COLLECT_CONTAINER, payload)
            assert request.pop("logs_with_outcome") is True
            assert iteration["States"][state_name] == state, state_name
        else:
            assert iteration["States"][state_name] == state, state_name


def test_given_runs_too_large_for_one_input_when_batched_then_each_execution_input_stays_under_the_limit() -> (
    None
):
    big = "x" * (100 * 1024)
    documents = [{"run_id": f"r{i}", "delivery": {"message": big}} for i in range(5)]

    chunked = list(batches.chunks(documents))

    assert [d["run_id"] for batch in chunked for d in batch] == [f"r{i}" for i in range(5)]
    assert len(chunked) == 3
    for batch in chunked:
        assert len(json.dumps({batches.RUNS: batch}).encode()) <= batches.MAX_INPUT_BYTES
    assert list(batches.chunks([{"run_id": "a"}, {"run_id": "b"}])) == [
        [{"run_id": "a"}, {"run_id": "b"}]
    ]


def test_given_more_runs_than_a_map_runs_at_once_when_batched_then_no_execution_holds_more() -> (
    None
):
    documents = [{"run_id": f"r{i}"} for i in range(2 * batches.MAX_RUNS + 1)]

    chunked = list(batches.chunks(documents))

    assert [len(batch) for batch in chunked] == [batches.MAX_RUNS, batches.MAX_RUNS, 1]
    assert [d for batch in chunked for d in batch] == documents
