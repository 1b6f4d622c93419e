"""Requests first (chronoq.local.foreground): while chronoq local answers an API request, the
engine's background calls make way (for a bounded time), the request's own calls never wait;
and what chronoq local built as it started is kept out of full garbage collections."""

from __future__ import annotations

import contextvars
import gc
import threading
import time
from typing import Any

from chronoq import resources as r
from chronoq.local.clock import LocalClock
from chronoq.local.engine.services import Engine
from chronoq.local.foreground import Foreground, freeze_startup_heap
from chronoq.local.lambdas import LambdaRuntime
from chronoq.local.system import LocalSystem

from tests.support import wait_for

REGION, ACCOUNT = "us-east-1", "123456789012"
#: Long enough that a background call ends only because the request did.
FOREVER = 60.0


def _in_background(call: Any) -> tuple[threading.Thread, list[str]]:
    done: list[str] = []

    def run() -> None:
        call()
        done.append("made way")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def test_given_a_request_being_answered_when_background_work_calls_then_it_waits_until_the_request_ends() -> (
    None
):
    foreground = Foreground(pause_seconds=FOREVER)
    with foreground.serving():
        thread, done = _in_background(foreground.make_way)
        wait_for(lambda: foreground.waiting == 1, timeout=10)
        assert done == []
    thread.join(timeout=10)
    assert done == ["made way"]
    assert foreground.waiting == 0


def test_given_no_request_when_background_work_calls_then_it_goes_on_at_once() -> None:
    foreground = Foreground(pause_seconds=FOREVER)
    started = time.monotonic()
    foreground.make_way()
    assert time.monotonic() - started < FOREVER / 2


def test_given_a_request_when_its_own_calls_make_way_then_they_never_wait_even_in_a_copy_of_its_context_on_another_thread() -> (
    None
):
    foreground = Foreground(pause_seconds=FOREVER)
    with foreground.serving():
        started = time.monotonic()
        foreground.make_way()
        context = contextvars.copy_context()
        thread, done = _in_background(lambda: context.run(foreground.make_way))
        thread.join(timeout=10)
        assert done == ["made way"]
        assert time.monotonic() - started < FOREVER / 2


def test_given_a_request_that_does_not_end_when_background_work_calls_then_it_goes_on_after_the_pause() -> (
    None
):
    foreground = Foreground(pause_seconds=0.05)
    with foreground.serving():
        thread, done = _in_background(foreground.make_way)
        thread.join(timeout=10)  # (the pause, not the request, ends the wait)
        assert done == ["made way"]


def test_given_an_engine_when_a_request_is_answered_then_its_tables_calls_from_other_threads_make_way() -> (
    None
):
    def embedded(service: str) -> Any:
        raise AssertionError(f"no embedded {service} here")

    engine = Engine(
        None,
        LocalClock(),
        LambdaRuntime({}, region=REGION, account=ACCOUNT),
        embedded,
        {t.id: t.id for t in r.TABLES},
        REGION,
        ACCOUNT,
    )
    engine.foreground = Foreground(pause_seconds=FOREVER)
    item = {"job_id": {"S": "job-1"}}
    with engine.foreground.serving():
        engine.tables.put_item(TableName=r.JOBS_TABLE.id, Item=item)  # (its own: no wait)
        thread, done = _in_background(
            lambda: engine.tables.get_item(TableName=r.JOBS_TABLE.id, Key=item)
        )
        wait_for(lambda: engine.foreground is not None and engine.foreground.waiting == 1, 10)
        assert done == []
    thread.join(timeout=10)
    assert done == ["made way"]


def test_given_chronoq_local_when_the_gateway_hands_it_a_request_then_the_api_function_answers_it_in_the_foreground() -> (
    None
):
    system = LocalSystem(in_memory=True)
    seen: list[tuple[r.Function, int]] = []

    def invoke(function: r.Function, event: Any) -> Any:
        seen.append((function, system.foreground.in_flight))
        return {"statusCode": 200}

    system.invoke = invoke  # type: ignore[method-assign]
    assert system._answer({"rawPath": "/jobs"}) == {"statusCode": 200}
    assert seen == [(r.API_FUNCTION, 1)]
    assert system.foreground.in_flight == 0


def test_given_a_started_process_when_its_heap_is_frozen_then_what_it_built_leaves_the_collections() -> (
    None
):
    built = [object() for _ in range(1000)]
    before = gc.get_freeze_count()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() >= before + len(built)
    finally:
        gc.unfreeze()


def test_given_requests_that_never_stop_when_a_thread_has_just_made_way_then_it_goes_on_before_making_way_again() -> (
    None
):
    now = [100.0]
    foreground = Foreground(pause_seconds=0.01, clock=lambda: now[0])
    steps: list[str] = []
    again = threading.Event()

    def background() -> None:
        foreground.make_way()  # (waits the pause: the request does not end)
        foreground.pause_seconds = FOREVER
        foreground.make_way()  # (it made way a moment ago: it goes on at once)
        steps.append("went on")
        again.wait(timeout=10)
        foreground.make_way()  # (a while later: it makes way again)
        steps.append("made way again")

    with foreground.serving():
        thread = threading.Thread(target=background, daemon=True)
        thread.start()
        wait_for(lambda: steps == ["went on"], timeout=10)
        now[0] += 2 * FOREVER
        again.set()
        wait_for(lambda: foreground.waiting == 1, timeout=10)
        assert steps == ["went on"]
    thread.join(timeout=10)
    assert steps == ["went on", "made way again"]
