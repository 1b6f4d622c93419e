"""What happens after a failed attempt: retry (after how long) or give up. Pure."""

from __future__ import annotations

import random
from dataclasses import dataclass

from chronoq.domain.jobs import RetryPolicy

#: Errors that trying again cannot fix: a task's PermanentError, an HTTP 4xx other than
#: 408 (timeout) and 429 (too many requests), a target the runner refuses.
PERMANENT_ERRORS = frozenset({"PermanentError"})


@dataclass(frozen=True)
class Decision:
    retry: bool
    wait_seconds: int
    reason: str


def backoff(policy: RetryPolicy, attempt: int) -> float:
    """The wait before attempt ``attempt + 1``, before jitter: the first interval grown by
    the backoff rate per attempt, capped at the maximum interval."""
    grown = policy.interval_seconds * policy.backoff_rate ** (attempt - 1)
    return float(min(policy.max_interval_seconds, grown))


def decide(
    policy: RetryPolicy, attempt: int, error: str, rng: random.Random | None = None
) -> Decision:
    """After attempt number ``attempt`` (1-based) failed with ``error`` (Step Functions'
    error name, e.g. ``TargetError`` or ``States.Timeout``), retry or give up."""
    if error in PERMANENT_ERRORS:
        return Decision(False, 0, f"{error} is not retried")
    if attempt >= policy.max_attempts:
        return Decision(False, 0, f"attempt {attempt} of {policy.max_attempts} failed")
    wait = backoff(policy, attempt)
    if policy.jitter:  # "full jitter": anywhere between half and all of the wait
        wait = (rng or random.Random()).uniform(wait / 2, wait)  # noqa: S311 - not a secret
    return Decision(True, max(1, round(wait)), f"retrying after attempt {attempt}")


def worst_case_seconds(policy: RetryPolicy, timeout_seconds: int) -> float:
    """The longest a run under ``policy`` can take: every attempt to its timeout, and the
    longest wait before each retry."""
    waits = sum(round(backoff(policy, attempt)) for attempt in range(1, policy.max_attempts))
    return float(policy.max_attempts * timeout_seconds + waits)
