"""Billed durations from a model (chronoq.local.durations), not from this machine's speed."""

from __future__ import annotations

import contextvars
import threading

import pytest
from chronoq.execution import waits
from chronoq.local import durations
from chronoq.local.durations import MODEL
from chronoq.local.usage import Usage


def test_given_an_invocation_making_requests_when_modeled_then_its_handler_and_each_round_trip_count() -> (
    None
):
    usage = Usage()

    with durations.modeled(MODEL.handler("api")) as ledger:
        for operation in ("dynamodb:GetItem", "dynamodb:PutItem", "sqs:SendMessageBatch"):
            usage.request(operation, "api")

    assert (
        ledger.milliseconds
        == MODEL.handler("api") + 2 * MODEL.request_ms["dynamodb"] + (MODEL.request_ms["sqs"])
    )


def test_given_requests_made_side_by_side_when_modeled_then_the_longest_thread_counts_not_their_sum() -> (
    None
):
    def starts(count: int) -> None:
        for _ in range(count):
            durations.request("stepfunctions:StartExecution")

    with durations.modeled(5.0) as ledger:
        durations.request("dynamodb:GetItem")
        # (the worker hands its context to the threads it starts: so does this)
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(starts, n))
            for n in (1, 3, 2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert (
        ledger.milliseconds
        == 5.0 + MODEL.request_ms["dynamodb"] + 3 * MODEL.request_ms["stepfunctions"]
    )


def test_given_an_invocation_within_a_task_when_it_ends_then_the_task_waited_for_all_of_it() -> (
    None
):
    spent: list[float] = []

    def invoke() -> str:
        durations.request("lambda:Invoke")
        with durations.modeled(MODEL.handler("runner")):
            durations.request("dynamodb:UpdateItem")
            durations.outside(0.25)  # the target's answer took a quarter of a second
        return "answer"

    assert durations.task_cost(invoke, spent.append) == "answer"
    assert spent == [
        MODEL.request_ms["lambda"] + MODEL.handler("runner") + MODEL.request_ms["dynamodb"] + 250
    ]


def test_given_a_task_that_fails_when_costed_then_its_time_is_spent_all_the_same() -> None:
    spent: list[float] = []

    def failing() -> None:
        durations.request("dynamodb:UpdateItem")
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        durations.task_cost(failing, spent.append)

    assert spent == [MODEL.request_ms["dynamodb"]]


def test_given_a_wait_on_a_target_when_someone_listens_then_they_are_told_its_seconds() -> None:
    heard: list[float] = []
    with waits.waiting():  # (nobody listens: nothing measured)
        pass
    waits.listen(heard.append)
    try:
        with waits.waiting():
            pass
    finally:
        waits.unlisten(heard.append)
    with waits.waiting():
        pass

    assert len(heard) == 1
    assert 0 <= heard[0] < 60


def test_given_no_ledger_when_requests_are_made_then_nothing_is_modeled() -> None:
    durations.request("dynamodb:GetItem")
    durations.outside(1.0)  # (no error, no effect: outside any invocation)

    with durations.modeled() as ledger:
        pass
    assert ledger.milliseconds == 0.0
