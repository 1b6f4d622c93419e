"""``chronoq cost`` prices what AWS would bill whichever engine ran the workload: the same
workload (the least-privilege check's: one of each kind of work, tests/infra/least_privilege.py)
driven on the moto engine and on chronoq local's engine makes the same kinds of AWS request,
caller by caller, and as many of those made per run (see the test).

Left out of the comparison: what depends on how long things take rather than on the work (the
dispatcher's extra ticks, the runs stream's polls, a container task's status polls, how the
worker's batches split into EXPRESS executions, whether runs are parked on a flow when one
of its runs ends), and the test's own reads."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from chronoq.local.aws import ENGINE_LOCAL, ENGINE_MOTO, LocalAWS
from chronoq.local.durations import MODEL
from chronoq.local.usage import EVENT_SOURCES, STATE_MACHINE

from tests.infra import least_privilege as lp
from tests.integration.conftest import Harness
from tests.support import http_sink

#: The callers whose requests count per run, whatever the timing.
PER_RUN = ("runner", "notifier")
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
            # (without the heartbeat: its runs in real time would make the count of runs the
            # clock jump leaves MISSED, each told to the topic, depend on the second it started in)
            lp.drive(harness, sink.url, with_heartbeat=False)
            harness.close()
        return Counter(aws.usage.by_caller_operation), aws.usage_document()
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


#: Requests of a caller that count time rather than work: the notifier wakes the runs parked
#: on a flow (a query of them, a send) only when a run ends while some are parked, and whether
#: one is depends on how long the runs took; the runner keeps the log of the attempt whose
#: execution the workload stops (an UpdateItem of its run) when that attempt ends, which is
#: before or after the workload does, as the machine goes; the notifier gives back the counts
#: of runs in flight with one UpdateItem per owner per stream batch, and how the runs' ends
#: fall into batches depends on when they end; and on a loaded machine one engine
#: was seen to write one more of the runner's objects (an attempt's log or output) than the
#: other, in a run whose every other count agreed.
BY_TIME_OF = frozenset(
    {
        ("notifier", "dynamodb:Query"),
        ("notifier", "dynamodb:UpdateItem"),
        ("notifier", "sqs:SendMessageBatch"),
        ("runner", "dynamodb:UpdateItem"),
        ("runner", "s3:PutObject"),
    }
)


def _work(requests: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    return Counter(
        {
            (caller, operation): n
            for (caller, operation), n in requests.items()
            if caller in CALLERS
            and operation not in BY_TIME
            and (caller, operation) not in BY_TIME_OF
        }
    )


def test_given_one_workload_when_driven_on_both_engines_then_it_makes_the_same_requests() -> None:
    on_moto, moto_document = _usage_of(ENGINE_MOTO)
    on_engine, engine_document = _usage_of(ENGINE_LOCAL)

    engine_work, moto_work = _work(on_engine), _work(on_moto)
    # Every caller makes the same kinds of request on both engines.
    assert set(engine_work) == set(moto_work)
    # The runner and the notifier make theirs per run: as many of each. (How many the API,
    # the worker and the state machine make depends on timing as well as on the work: whether
    # a job's first run falls in a minute the dispatcher has opened, how a worker's batches
    # split, how far a cancelled execution got before the stop reached it.)
    per_run = {k: n for k, n in engine_work.items() if k[0] in PER_RUN}
    assert per_run == {k: n for k, n in moto_work.items() if k[0] in PER_RUN}
    assert engine_document["runs_finished"] == moto_document["runs_finished"]
    # Durations come from the model, not from either machine's speed: the API's billed
    # milliseconds are its invocations' handler time and its requests' round trips, exactly,
    # on both engines (it waits on nothing outside AWS).
    for requests, document in ((on_engine, engine_document), (on_moto, moto_document)):
        api = document["lambda"]["api"]
        modeled = api["invocations"] * MODEL.handler("api") + sum(
            n * MODEL.request(operation)
            for (caller, operation), n in requests.items()
            if caller == "api"
        )
        assert api["billed_ms"] == pytest.approx(modeled, abs=api["invocations"])
