"""Monitoring: the alarms that say what stopped, the topic they tell (with an e-mail
subscription when the deployment names one), one dashboard of the run flow, lag and errors,
and the heartbeat the deployment runs on itself (chronoq.heartbeat).

Each alarm has a entry in the runbook (docs/runbook.md), under its name without the stack's
prefix. chronoq's own metrics come from chronoq.metrics (EMF lines of the functions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from chronoq import heartbeat
from chronoq import resources as r
from chronoq.metrics import Metric, service
from constructs import Construct

from .rules import acknowledge

#: The construct id CDK gives the function behind every AwsCustomResource of a stack.
PROVIDER_ID = "AWS" + cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace("-", "")
MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
#: How old the oldest message on a run queue may get: runs are sent at most about a minute
#: ahead (DelaySeconds) and a worker takes a batch within a second of its due time.
QUEUE_AGE_SECONDS = 300
#: Minutes a shard's checkpoint may lag behind the minute it dispatches up to.
SHARD_MINUTES_BEHIND = 2
#: How long the notifier's stream records may wait (milliseconds).
ITERATOR_AGE_MS = 60_000
#: How long the archiver's may: an ended run reaches the archive within this
#: (docs/api/archive.md), its batching window included.
ARCHIVE_ITERATOR_AGE_MS = r.ARCHIVE_LATENCY_SECONDS * 1000
#: The custom metric of chronoq's own failed executions (a filter on the state machines' log).
OWN_EXECUTION_FAILURES = "OwnExecutionFailures"
#: A STANDARD execution ends failed with these errors when the job's target failed or timed
#: out (the ASL's Fail states Failed and TimedOut): the user's failure, not chronoq's. EXPRESS
#: batches end those runs in Succeed states. A cancelled run's execution is aborted with
#: "Cancelled" (the executor's StopExecution).
USERS_FAILURES = ("RunFailed", "RunTimedOut")
CANCELLED = "Cancelled"
OWN_FAILURES_PATTERN = (
    '{ ($.type = "ExecutionFailed"'
    + "".join(f' && $.details.error != "{e}"' for e in USERS_FAILURES)
    + ') || $.type = "ExecutionTimedOut"'
    + f' || ($.type = "ExecutionAborted" && $.details.error != "{CANCELLED}") }}'
)


@dataclass(frozen=True)
class Watched:
    """What Monitoring watches, built by the other constructs."""

    functions: Mapping[str, lambda_.Function]
    dispatcher: lambda_.Function
    notifier: lambda_.Function
    dispatch_groups: int
    run_queues: Mapping[str, sqs.IQueue]
    dead_letters: Mapping[str, sqs.IQueue]
    state_machine_logs: logs.ILogGroup
    express_state_machine: sfn.StateMachine
    http_api: apigwv2.HttpApi
    #: The runs stream's bulk reader (chronoq.aws.fanout), if the stack has it.
    archiver: lambda_.Function | None = None


def _chronoq(name: str, function: r.Function, statistic: str, period: Duration) -> cw.Metric:
    return cw.Metric(
        namespace=r.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service(function)},
        statistic=statistic,
        period=period,
    )


class Monitoring(Construct):
    def __init__(
        self, scope: Construct, id: str, *, watched: Watched, alarm_email: str = ""
    ) -> None:
        super().__init__(scope, id)
        self.prefix = Stack.of(self).stack_name
        # Alarm states carry no secret; CloudWatch cannot publish to a topic encrypted with
        # SNS's AWS managed key (a key of one's own is $1 a month): not encrypted at rest.
        self.topic = sns.Topic(self, "Alarms", display_name="chronoq alarms", enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self.alarms: dict[str, cw.Alarm] = {}
        self._alarm_dispatch(watched)
        self._alarm_queues(watched)
        self._alarm_executions(watched)
        self._alarm_functions(watched)
        self._alarm_heartbeat()
        self.dashboard = self._dashboard(watched)
        self.heartbeat = self._heartbeat(watched.dispatcher)

    # --- alarms ---------------------------------------------------------------------------

    def _alarm(
        self,
        name: str,
        description: str,
        metric: cw.IMetric,
        threshold: float,
        *,
        evaluation: int = 1,
        datapoints: int | None = None,
        comparison: cw.ComparisonOperator = (
            cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        ),
        missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
    ) -> cw.Alarm:
        alarm = cw.Alarm(
            self,
            name,
            alarm_name=f"{self.prefix}-{name}",
            alarm_description=f"{description} (runbook: docs/runbook.md, {name})",
            metric=metric,
            threshold=threshold,
            evaluation_periods=evaluation,
            datapoints_to_alarm=datapoints or evaluation,
            comparison_operator=comparison,
            treat_missing_data=missing,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        alarm.add_ok_action(actions.SnsAction(self.topic))
        self.alarms[name] = alarm
        return alarm

    def _alarm_dispatch(self, watched: Watched) -> None:
        dispatcher = watched.dispatcher
        self._alarm(
            "DispatcherNotTicking",
            f"The dispatcher was invoked fewer than {watched.dispatch_groups} times a minute"
            " (once per group of shards) for 3 minutes: no run is being sent",
            dispatcher.metric_invocations(period=MINUTE, statistic="Sum"),
            watched.dispatch_groups,
            evaluation=3,
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cw.TreatMissingData.BREACHING,
        )
        self._alarm(
            "DispatcherFailing",
            "Dispatcher invocations failed in 3 of the last 5 minutes: the minutes they did not"
            " dispatch are caught up only once one succeeds",
            dispatcher.metric_errors(period=MINUTE, statistic="Sum"),
            1,
            evaluation=5,
            datapoints=3,
        )
        self._alarm(
            "ShardBehind",
            f"A shard's checkpoint has been {SHARD_MINUTES_BEHIND} or more minutes behind for"
            " 3 minutes: its runs are dispatched late (or MISSED past their start deadline)",
            _chronoq(Metric.SHARD_MINUTES_BEHIND, r.DISPATCHER_FUNCTION, "Maximum", MINUTE),
            SHARD_MINUTES_BEHIND,
            evaluation=3,
        )

    def _alarm_queues(self, watched: Watched) -> None:
        for name, queue in watched.dead_letters.items():
            self._alarm(
                f"{name}DeadLetters",
                f"A message is in the {name.lower()} dead-letter queue: something chronoq"
                " was to do failed every time it was tried",
                queue.metric_approximate_number_of_messages_visible(
                    period=FIVE_MINUTES, statistic="Maximum"
                ),
                1,
            )
        for priority, queue in watched.run_queues.items():
            self._alarm(
                f"{priority.capitalize()}QueueAge",
                f"The oldest message on the {priority} run queue has been older than"
                f" {QUEUE_AGE_SECONDS} s for 5 minutes: workers are not taking its runs",
                queue.metric_approximate_age_of_oldest_message(period=MINUTE, statistic="Maximum"),
                QUEUE_AGE_SECONDS,
                evaluation=5,
                comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )

    def _alarm_executions(self, watched: Watched) -> None:
        logs.MetricFilter(
            self,
            "OwnExecutionFailuresFilter",
            log_group=watched.state_machine_logs,
            metric_namespace=r.METRICS_NAMESPACE,
            metric_name=OWN_EXECUTION_FAILURES,
            filter_pattern=logs.FilterPattern.literal(OWN_FAILURES_PATTERN),
            metric_value="1",
            default_value=0,
        )
        express = watched.express_state_machine
        self._alarm(
            "RunExecutionsFailing",
            "A run state machine's execution failed, timed out or was aborted for chronoq's own"
            " reasons (not a job's target failing, not a cancel)",
            cw.MathExpression(
                expression="FILL(own, 0) + FILL(failed, 0) + FILL(timedout, 0) + FILL(aborted, 0)",
                using_metrics={
                    "own": cw.Metric(
                        namespace=r.METRICS_NAMESPACE,
                        metric_name=OWN_EXECUTION_FAILURES,
                        statistic="Sum",
                        period=FIVE_MINUTES,
                    ),
                    "failed": express.metric_failed(period=FIVE_MINUTES, statistic="Sum"),
                    "timedout": express.metric_timed_out(period=FIVE_MINUTES, statistic="Sum"),
                    "aborted": express.metric_aborted(period=FIVE_MINUTES, statistic="Sum"),
                },
                label="chronoq's own failed executions",
                period=FIVE_MINUTES,
            ),
            1,
        )

    def _alarm_functions(self, watched: Watched) -> None:
        for name, function in watched.functions.items():
            self._alarm(
                f"{name.capitalize()}Throttled",
                f"The {name} function was throttled (its concurrency, or the account's, ran out)",
                function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                1,
            )
        self._alarm(
            "NotifierStreamBehind",
            f"The notifier's runs-stream records waited more than {ITERATOR_AGE_MS // 1000} s"
            " for 5 minutes: notifications of ended runs are late",
            watched.notifier.metric("IteratorAge", period=MINUTE, statistic="Maximum"),
            ITERATOR_AGE_MS,
            evaluation=5,
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )
        if watched.archiver is not None:
            self._alarm(
                "ArchiverStreamBehind",
                f"The archiver's runs-stream records waited more than"
                f" {ARCHIVE_ITERATOR_AGE_MS // 1000} s in 3 of the last 5 minutes: ended runs"
                " reach the archive late (the records are kept 24 hours)",
                watched.archiver.metric("IteratorAge", period=MINUTE, statistic="Maximum"),
                ARCHIVE_ITERATOR_AGE_MS,
                evaluation=5,
                datapoints=3,
                comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            )
        self._alarm(
            "Api5xx",
            "The API answered 5xx: a request failed inside chronoq",
            watched.http_api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            1,
        )

    def _alarm_heartbeat(self) -> None:
        silence = r.HEARTBEAT_MAX_SILENCE_SECONDS // 60
        self._alarm(
            "HeartbeatMissing",
            f"No heartbeat run succeeded for {silence} minutes: somewhere between the"
            " dispatcher and the runner, runs do not get through",
            _chronoq(Metric.HEARTBEAT_SUCCEEDED, r.RUNNER_FUNCTION, "Sum", MINUTE),
            1,
            evaluation=silence,
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cw.TreatMissingData.BREACHING,
        )
        self._alarm(
            "HeartbeatLate",
            f"The heartbeat's runs started more than {r.HEARTBEAT_MAX_LAG_SECONDS} s after"
            " their time for 3 minutes: runs start late",
            _chronoq(Metric.HEARTBEAT_LAG, r.RUNNER_FUNCTION, "Maximum", MINUTE),
            r.HEARTBEAT_MAX_LAG_SECONDS * 1000,
            evaluation=3,
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )

    # --- the dashboard ----------------------------------------------------------------------

    def _dashboard(self, watched: Watched) -> cw.Dashboard:
        def runs(name: str, function: r.Function) -> cw.Metric:
            return _chronoq(name, function, "Sum", MINUTE)

        lag = _chronoq(Metric.START_LAG, r.RUNNER_FUNCTION, "p50", MINUTE)
        timeout = float(r.DISPATCHER_FUNCTION.timeout_seconds)
        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"{self.prefix}-runs")
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Run flow (per minute)",
                width=12,
                left=[
                    runs(Metric.RUNS_DISPATCHED, r.DISPATCHER_FUNCTION),
                    runs(Metric.RUNS_STARTED, r.WORKER_FUNCTION),
                    runs(Metric.RUNS_SUCCEEDED, r.RUNNER_FUNCTION),
                    runs(Metric.RUNS_FAILED, r.RUNNER_FUNCTION),
                    runs(Metric.RUNS_TIMED_OUT, r.RUNNER_FUNCTION),
                    runs(Metric.RUNS_MISSED, r.DISPATCHER_FUNCTION),
                    runs(Metric.RUNS_MISSED, r.WORKER_FUNCTION),
                ],
            ),
            cw.GraphWidget(
                title="Start lag (ms)",
                width=12,
                left=[
                    lag,
                    lag.with_(statistic="p99"),
                    _chronoq(Metric.HEARTBEAT_LAG, r.RUNNER_FUNCTION, "Maximum", MINUTE),
                ],
                left_annotations=[
                    cw.HorizontalAnnotation(
                        value=r.HEARTBEAT_MAX_LAG_SECONDS * 1000, label="HeartbeatLate"
                    )
                ],
            ),
            cw.GraphWidget(
                title="Dispatcher: duration (s) against its timeout; minutes behind",
                width=12,
                left=[_chronoq(Metric.DISPATCH_DURATION, r.DISPATCHER_FUNCTION, "Maximum", MINUTE)],
                left_annotations=[cw.HorizontalAnnotation(value=timeout, label="timeout")],
                right=[
                    _chronoq(Metric.SHARD_MINUTES_BEHIND, r.DISPATCHER_FUNCTION, "Maximum", MINUTE)
                ],
            ),
            cw.GraphWidget(
                title="Errors and throttles (per 5 minutes)",
                width=12,
                left=[
                    f.metric_errors(period=FIVE_MINUTES, label=f"{name} errors")
                    for name, f in watched.functions.items()
                ],
                right=[
                    f.metric_throttles(period=FIVE_MINUTES, label=f"{name} throttles")
                    for name, f in watched.functions.items()
                ],
            ),
            cw.GraphWidget(
                title="Queues: oldest message (s); dead letters",
                width=12,
                left=[
                    q.metric_approximate_age_of_oldest_message(period=MINUTE, label=p)
                    for p, q in watched.run_queues.items()
                ],
                right=[
                    q.metric_approximate_number_of_messages_visible(period=MINUTE, label=n)
                    for n, q in watched.dead_letters.items()
                ],
            ),
            cw.AlarmStatusWidget(title="Alarms", width=12, alarms=list(self.alarms.values())),
        )
        return dashboard

    # --- the heartbeat ----------------------------------------------------------------------

    def _heartbeat(self, dispatcher: lambda_.Function) -> cr.AwsCustomResource:
        """On every deployment that creates or changes it, the dispatcher is asked to create
        the heartbeat job if it is missing (chronoq.heartbeat.ensure: idempotent)."""
        call = cr.AwsSdkCall(
            service="Lambda",
            action="invoke",
            parameters={
                "FunctionName": dispatcher.function_name,
                "Payload": f'{{"{heartbeat.ENSURE}": "ensure"}}',
            },
            physical_resource_id=cr.PhysicalResourceId.of(r.HEARTBEAT_JOB_ID),
        )
        ensure = cr.AwsCustomResource(
            self,
            "Heartbeat",
            on_create=call,
            on_update=call,
            install_latest_aws_sdk=False,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["lambda:InvokeFunction"], resources=[dispatcher.function_arn]
                    )
                ]
            ),
        )
        why = (
            "CDK's own provider of AWS SDK calls on deployment (here: asking the dispatcher"
            " to create the heartbeat job), invoked by CloudFormation only, once per"
            " deployment that changes it; its settings are CDK's."
        )
        for rule in (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]",
            "Serverless-LambdaDefaultMemorySize",
            "Serverless-LambdaDLQ",
            "Serverless-LambdaTracing",
        ):
            acknowledge(self.provider, rule, why)
        return ensure

    @property
    def provider(self) -> lambda_.Function:
        """The function CDK adds to make AWS SDK calls on deployment (one per stack)."""
        found = Stack.of(self).node.try_find_child(PROVIDER_ID)
        assert isinstance(found, lambda_.Function)
        return found
