from __future__ import annotations

import signal

import pytest
from chronoq.models import PythonTarget
from chronoq.targets import AttemptTimedOut, lines_collector, run_python


def sleep_target(seconds: float) -> PythonTarget:
    return PythonTarget(type="python", task="chronoq.tasks:sleep", args={"seconds": seconds})


def test_given_a_task_still_running_at_its_timeout_when_run_then_it_is_interrupted() -> None:
    lines, log = lines_collector(1)

    with pytest.raises(AttemptTimedOut):
        run_python(sleep_target(30), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)

    assert any("raised AttemptTimedOut" in line for line in lines)


def test_given_a_task_that_ends_in_time_when_run_then_no_alarm_is_left_behind() -> None:
    _, log = lines_collector(1)

    result = run_python(sleep_target(0.01), "job", "run", 1, "2030-01-01T00:00:00Z", 0.2, log)

    assert result == {"slept": 0.01}
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_given_a_multi_line_message_when_logged_then_every_line_has_the_attempts_prefix() -> None:
    lines, log = lines_collector(2)

    log("one\ntwo")

    assert [line.split(" ", 1)[1] for line in lines] == ["[attempt 2] one", "[attempt 2] two"]
