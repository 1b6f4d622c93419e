from __future__ import annotations

import signal
import threading
import time

import pytest
from chronoq.domain.errors import PermanentError
from chronoq.domain.targets import PythonTarget
from chronoq.execution.targets import (
    AttemptTimedOut,
    lines_collector,
    run_python,
    runner_deadline,
)


def sleep_target(seconds: float) -> PythonTarget:
    return PythonTarget(type="python", task="chronoq.tasks:sleep", args={"seconds": seconds})


def test_given_a_task_still_running_at_its_timeout_when_run_then_it_is_interrupted() -> None:
    lines, log = lines_collector(1)

    with pytest.raises(AttemptTimedOut):
        run_python(sleep_target(30), (), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)

    assert any("raised AttemptTimedOut" in line for line in lines)


def test_given_a_task_that_ends_in_time_when_run_then_no_alarm_is_left_behind() -> None:
    _, log = lines_collector(1)

    result = run_python(sleep_target(0.01), (), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)

    assert result == {"slept": 0.01}
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_given_a_multi_line_message_when_logged_then_every_line_has_the_attempts_prefix() -> None:
    lines, log = lines_collector(2)

    log("one\ntwo")

    assert [line.split(" ", 1)[1] for line in lines] == ["[attempt 2] one", "[attempt 2] two"]


def test_given_an_outer_timer_when_a_task_runs_then_the_timer_is_given_back() -> None:
    _, log = lines_collector(1)
    signal.setitimer(signal.ITIMER_REAL, 50)
    try:
        run_python(sleep_target(0.01), (), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

    assert 49 < remaining <= 50


def test_given_a_task_raising_permanent_error_when_run_then_its_message_is_kept_as_it_is() -> None:
    _, log = lines_collector(1)
    target = PythonTarget(
        type="python",
        task="chronoq.tasks:fail",
        args={"message": "no such account", "permanent": True},
    )

    with pytest.raises(PermanentError) as raised:
        run_python(target, (), "job", "run", 1, "2030-01-01T00:00:00Z", 5, log)

    assert str(raised.value) == "no such account"


def test_given_a_task_running_off_the_main_thread_when_its_timeout_passes_then_it_is_given_up_with_its_log() -> (
    None
):
    lines, log = lines_collector(1)
    outcome: list[BaseException] = []

    def runner() -> None:  # chronoq local runs the runner function in a thread
        try:
            run_python(sleep_target(30), (), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)
        except AttemptTimedOut as error:
            outcome.append(error)

    thread = threading.Thread(target=runner)
    started = time.monotonic()
    thread.start()
    thread.join(10)

    assert outcome, "the attempt was not given up"
    assert time.monotonic() - started < 10
    assert any("sleeping 30.0 s" in line for line in lines)  # what it logged is kept
    assert any("raised AttemptTimedOut" in line for line in lines)


def test_given_a_timeout_when_the_runner_sets_its_deadline_then_it_answers_before_the_state_machine_gives_up() -> (
    None
):
    assert runner_deadline(300) == 298
    assert runner_deadline(1) == 0.9
    assert all(0 < runner_deadline(t) < t for t in (1, 2, 10, 900))
