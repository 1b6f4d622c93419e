"""``chronoq cost`` prices what AWS would bill whichever engine ran the workload: the same
workload (the least-privilege check's: one of each kind of work, tests/infra/least_privilege.py)
driven on the moto engine and on chronoq local's engine makes the same AWS requests, caller by
caller and operation by operation (the state machine's: the same kinds, see below).

Left out of the comparison: what depends on how long things take rather than on the work (the
dispatcher's extra ticks, the runs stream's polls, a container task's status polls, how the
worker's batches split into EXPRESS executions), and the test's own reads."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from chronoq.local.aws import ENGINE_LOCAL, ENGINE_MOTO, LocalAWS
from chronoq.local.usage import EVENT_SOURCES, STATE_MACHINE

from tests.infra import least_privilege as lp
from tests.integration.conftest import Harness
from tests.support import http_sink

#: The callers compared, and the operations of theirs that count time rather than work.
CALLERS = ("api", "worker", "runner", "notifier", STATE_MACHINE, EVENT_SOURCES)
BY_TIME = frozenset(
    {
        "ecs:DescribeTasks",
        "stepfunctions:StartExecution",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessageBatch",
    }
)


def _usage_of(engine: str) -> tuple[Counter[tuple[str, str]], dict[str, Any]]:
    saved = dict(os.environ)
    aws = LocalAWS(shards=4, allow_host_commands=True, engine=engine).start()
    try:
        with http_sink() as sink:
            harness = Harness(aws)
            aws.reset_usage()
            lp.drive(harness, sink.url)
            harness.close()
        return Counter(aws.usage.by_caller_operation), aws.usage_document()
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


def _work(requests: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    return Counter(
        {
            (caller, operation): n
            for (caller, operation), n in requests.items()
            if caller in CALLERS and operation not in BY_TIME
        }
    )


def test_given_one_workload_when_driven_on_both_engines_then_it_makes_the_same_requests() -> None:
    on_moto, moto_document = _usage_of(ENGINE_MOTO)
    on_engine, engine_document = _usage_of(ENGINE_LOCAL)

    engine_work, moto_work = _work(on_engine), _work(on_moto)
    # The workload cancels a STANDARD run while its execution retries: how many states that
    # execution went through before the stop reached it depends on timing (and so its writes,
    # its decisions, its transitions). The state machine makes the same kinds of request.
    machine = {k: engine_work.pop(k) for k in list(engine_work) if k[0] == STATE_MACHINE}
    assert set(machine) == {k for k in list(moto_work) if k[0] == STATE_MACHINE}
    for key in set(machine):
        moto_work.pop(key)
    assert engine_work == moto_work
    assert engine_document["runs_finished"] == moto_document["runs_finished"]
