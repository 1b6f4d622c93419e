from __future__ import annotations

import random

import pytest
from chronoq.domain.jobs import RetryPolicy
from chronoq.domain.retry import backoff, decide


def test_given_a_policy_when_attempts_fail_then_waits_grow_by_the_backoff_rate_up_to_the_maximum() -> (
    None
):
    policy = RetryPolicy(
        max_attempts=10,
        interval_seconds=10,
        backoff_rate=2.0,
        max_interval_seconds=60,
        jitter=False,
    )

    assert [decide(policy, n, "TargetError").wait_seconds for n in range(1, 6)] == [
        10,
        20,
        40,
        60,
        60,
    ]
    assert [backoff(policy, n) for n in (1, 2, 3)] == [10.0, 20.0, 40.0]


def test_given_the_last_attempt_when_it_fails_then_the_run_gives_up() -> None:
    policy = RetryPolicy(max_attempts=3)

    assert decide(policy, 2, "TargetError").retry
    decision = decide(policy, 3, "TargetError")
    assert not decision.retry
    assert decision.reason == "attempt 3 of 3 failed"


def test_given_max_attempts_1_when_the_attempt_fails_then_there_is_no_retry() -> None:
    assert not decide(RetryPolicy(max_attempts=1), 1, "States.Timeout").retry


@pytest.mark.parametrize(
    "error", ["TargetError", "States.Timeout", "Lambda.ServiceException", "RuntimeError"]
)
def test_given_a_transient_error_when_attempts_remain_then_it_is_retried(error: str) -> None:
    assert decide(RetryPolicy(), 1, error).retry


def test_given_a_permanent_error_when_attempts_remain_then_it_is_not_retried() -> None:
    decision = decide(RetryPolicy(max_attempts=5), 1, "PermanentError")
    assert (decision.retry, decision.reason) == (False, "PermanentError is not retried")


def test_given_jitter_when_many_runs_retry_then_their_waits_spread_between_half_and_all_of_the_backoff() -> (
    None
):
    policy = RetryPolicy(interval_seconds=100, jitter=True)
    rng = random.Random(7)

    waits = [decide(policy, 1, "TargetError", rng).wait_seconds for _ in range(200)]

    assert min(waits) >= 50
    assert max(waits) <= 100
    assert len(set(waits)) > 20
