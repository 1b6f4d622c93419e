"""chronoq's own metrics: what each function counts as it works, written once per invocation as
one CloudWatch embedded-metric-format (EMF) log line (Powertools Metrics: no API call, nothing
per run but a number in a line the function writes anyway).

One namespace (resources.METRICS_NAMESPACE); one low-cardinality dimension, ``service`` (the
function: ``chronoq-dispatcher``, ``chronoq-worker``, ``chronoq-runner``); never a job, run or
shard id. The alarms and the dashboard of the stack (cdk: Monitoring) read these names.

- RunsDispatched (dispatcher): occurrences sent to the run queues;
- RunsMissed (dispatcher, worker): runs recorded MISSED (past their start deadline);
- DispatchDuration (dispatcher, seconds): one invocation, against its timeout;
- ShardMinutesBehind (dispatcher): how many minutes the latest of its shards' checkpoints is
  behind the minute it dispatches up to (0: caught up);
- RunsStarted (worker): executions started;
- StartLag (runner, milliseconds): a run's first attempt's start minus its scheduled time;
- RunsSucceeded (runner): runs whose target the runner ran (http, python, lambda, container)
  that succeeded (sqs, sns and eventbridge deliveries are the state machine's own);
- RunsFailed, RunsTimedOut (runner): runs given up on after their last attempt (every target);
- HeartbeatSucceeded, HeartbeatLag (runner, milliseconds): the heartbeat's runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from chronoq import resources as r


class Metric(StrEnum):
    RUNS_DISPATCHED = "RunsDispatched"
    RUNS_MISSED = "RunsMissed"
    DISPATCH_DURATION = "DispatchDuration"
    SHARD_MINUTES_BEHIND = "ShardMinutesBehind"
    RUNS_STARTED = "RunsStarted"
    START_LAG = "StartLag"
    RUNS_SUCCEEDED = "RunsSucceeded"
    RUNS_FAILED = "RunsFailed"
    RUNS_TIMED_OUT = "RunsTimedOut"
    HEARTBEAT_SUCCEEDED = "HeartbeatSucceeded"
    HEARTBEAT_LAG = "HeartbeatLag"


#: The error names a run's last attempt times out with (the state machine's Outcome state).
TIMEOUTS = frozenset({"States.Timeout", "AttemptTimedOut"})


def service(function: r.Function) -> str:
    """The ``service`` dimension of a function's metrics."""
    return f"chronoq-{function.name}"


def for_function(function: r.Function) -> Metrics:
    """The metrics of one function (built once, at cold start)."""
    return Metrics(namespace=r.METRICS_NAMESPACE, service=service(function))


def flush(metrics: Metrics) -> None:
    """Write what this invocation counted as one EMF line (nothing when it counted nothing;
    nothing either, and forgotten, when metrics are disabled, as in chronoq local)."""
    if not metrics.metric_set:
        return
    if is_metrics_disabled():
        metrics.clear_metrics()
        return
    metrics.flush_metrics()


def dispatched(
    metrics: Metrics, dispatched: int, missed: int, behind_minutes: int, seconds: float
) -> None:
    """One dispatcher invocation: what it sent and recorded MISSED, how far behind its
    shards still are, how long it took."""
    metrics.add_metric(Metric.RUNS_DISPATCHED, MetricUnit.Count, dispatched)
    metrics.add_metric(Metric.RUNS_MISSED, MetricUnit.Count, missed)
    metrics.add_metric(Metric.SHARD_MINUTES_BEHIND, MetricUnit.Count, behind_minutes)
    metrics.add_metric(Metric.DISPATCH_DURATION, MetricUnit.Seconds, round(seconds, 3))


def started(metrics: Metrics, outcomes: Iterable[object]) -> None:
    """One worker batch: how many of its runs were started, and recorded MISSED."""
    counted = Counter(o for o in outcomes if isinstance(o, str))
    metrics.add_metric(Metric.RUNS_STARTED, MetricUnit.Count, counted["started"])
    if counted["missed"]:
        metrics.add_metric(Metric.RUNS_MISSED, MetricUnit.Count, counted["missed"])


def attempt_started(
    metrics: Metrics, job_id: str, attempt: int, scheduled_at: str, now: datetime
) -> None:
    """The runner begins an attempt: a first attempt's start lag."""
    if attempt != 1:
        return
    scheduled = datetime.fromisoformat(scheduled_at.replace("Z", "+00:00"))
    lag_ms = max(0.0, (now - scheduled).total_seconds() * 1000)
    metrics.add_metric(Metric.START_LAG, MetricUnit.Milliseconds, round(lag_ms))
    if job_id == r.HEARTBEAT_JOB_ID:
        metrics.add_metric(Metric.HEARTBEAT_LAG, MetricUnit.Milliseconds, round(lag_ms))


def attempt_succeeded(metrics: Metrics, job_id: str) -> None:
    """An attempt the runner ran succeeded: its run succeeds (the state machine records it)."""
    metrics.add_metric(Metric.RUNS_SUCCEEDED, MetricUnit.Count, 1)
    if job_id == r.HEARTBEAT_JOB_ID:
        metrics.add_metric(Metric.HEARTBEAT_SUCCEEDED, MetricUnit.Count, 1)


def given_up(metrics: Metrics, error: str) -> None:
    """After its last attempt a run is given up on: FAILED, or TIMED_OUT."""
    timed_out = error in TIMEOUTS
    metrics.add_metric(
        Metric.RUNS_TIMED_OUT if timed_out else Metric.RUNS_FAILED, MetricUnit.Count, 1
    )
