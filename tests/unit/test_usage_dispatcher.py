"""chronoq cost prices the dispatcher as the stack runs it: one invocation per group of shards
and minute, whatever chronoq local's tick (every second by default)."""

from __future__ import annotations

from chronoq import resources as r
from chronoq.local.usage import Usage, per_million_runs

MEMORY = r.DISPATCHER_FUNCTION.memory_mb


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0  # a minute's start

    def __call__(self) -> float:
        return self.now


def _tick(usage: Usage, group: str, *operations: str) -> None:
    with usage.dispatcher_tick(group, MEMORY):
        for operation in operations:
            usage.request(operation, "dispatcher")
            usage.units(read=0.5)


def test_given_a_tick_every_second_when_priced_then_a_minute_of_them_is_one_invocation() -> None:
    clock = Clock()
    usage = Usage(clock=clock)

    for second in range(60):  # nothing to dispatch: each tick reads the checkpoints only
        clock.now += 1 if second else 0
        _tick(usage, "[0, 1, 2, 3]", "dynamodb:BatchGetItem")
    document = usage.document(runs_finished=1)

    assert document["dispatcher_ticks"] == {"local": 60, "priced": 1}
    assert document["lambda"]["dispatcher"]["invocations"] == 1
    assert document["aws_requests"] == {"dynamodb:BatchGetItem": 1}
    assert document["dynamodb"]["read_units"] == 0.5


def test_given_a_tick_that_dispatched_when_priced_then_its_work_is_the_minutes_invocations() -> (
    None
):
    clock = Clock()
    usage = Usage(clock=clock)

    _tick(usage, "[0]", "dynamodb:BatchGetItem")
    clock.now += 55  # the tick that dispatches the coming minute
    _tick(usage, "[0]", "dynamodb:BatchGetItem", "dynamodb:Query", "sqs:SendMessageBatch")
    clock.now += 1
    _tick(usage, "[0]", "dynamodb:BatchGetItem")
    document = usage.document(runs_finished=1)

    assert document["lambda"]["dispatcher"]["invocations"] == 1
    assert document["aws_requests"] == {
        "dynamodb:BatchGetItem": 2,
        "dynamodb:Query": 1,
        "sqs:SendMessageBatch": 1,
    }


def test_given_groups_and_minutes_when_priced_then_one_invocation_each() -> None:
    clock = Clock()
    usage = Usage(clock=clock)

    for _ in range(3):  # three minutes
        for _second in range(4):
            _tick(usage, "[0, 2]", "dynamodb:BatchGetItem")
            _tick(usage, "[1, 3]", "dynamodb:BatchGetItem")
            clock.now += 15
    document = usage.document(runs_finished=1)

    assert document["lambda"]["dispatcher"]["invocations"] == 6
    assert document["dispatcher_ticks"] == {"local": 24, "priced": 6}
    # per million runs, the idle ticks chronoq local adds cost nothing
    one_each = Usage(clock=clock)
    for minute in range(3):
        clock.now = 1_800_000_000.0 + 60 * minute
        _tick(one_each, "[0, 2]", "dynamodb:BatchGetItem")
        _tick(one_each, "[1, 3]", "dynamodb:BatchGetItem")
    assert (
        per_million_runs(document)["dynamodb"]
        == per_million_runs(one_each.document(runs_finished=1))["dynamodb"]
    )


def test_given_a_reset_when_counted_again_then_ticks_start_again() -> None:
    usage = Usage(clock=Clock())
    _tick(usage, "[0]", "dynamodb:BatchGetItem")

    usage.reset()
    _tick(usage, "[0]", "dynamodb:BatchGetItem")

    assert usage.document(runs_finished=0)["dispatcher_ticks"] == {"local": 1, "priced": 1}
