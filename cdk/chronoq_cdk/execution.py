"""Execution: the run state machines (STANDARD and EXPRESS, one ASL) and the runner function
they invoke."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from chronoq.execution import machines
from constructs import Construct

from .access import TargetAccess
from .containers import Containers
from .functions import LOG_RETENTION, python_function
from .rules import acknowledge, grant_wildcards
from .storage import OBJECTS_REASON, Storage, grant_items

#: Why a target's grant may hold a wildcard: the deployment's own lists say so.
SETTING_REASON = (
    "What targets may reach is the deployment's own setting (lambda_targets, queue_targets,"
    " topic_targets, event_bus_targets, output_buckets): a wildcard there is the operator's"
    " choice, and the API refuses any target outside the same list."
)


class Execution(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        task_layers: Sequence[lambda_.ILayerVersion],
        environment: Mapping[str, str],
        storage: Storage,
        containers: Containers,
        access: TargetAccess,
        reserved_concurrency: int = r.DEFAULT_RUNNER_RESERVED_CONCURRENCY,
    ) -> None:
        super().__init__(scope, id)
        self.runner = python_function(
            self,
            "Runner",
            r.RUNNER_FUNCTION,
            layer=layer,
            extra_layers=task_layers,
            environment=environment,
            no_dead_letters=(
                "The run state machines invoke it synchronously and handle its failures"
                " (retries per the job's policy, then the run's recorded outcome)."
            ),
            reserved_concurrency=reserved_concurrency or None,
        )
        values = {
            r.ASL_RUNS_TABLE: storage.runs.table_name,
            r.ASL_JOBS_TABLE: storage.jobs.table_name,
            r.ASL_RUNNER_FUNCTION: self.runner.function_arn,
            r.ASL_CONTAINER_CLUSTER: containers.cluster.cluster_arn,
            r.ASL_CONTAINER_SUBNETS: containers.subnet_ids,
            r.ASL_CONTAINER_SECURITY_GROUP: containers.security_group.security_group_id,
        }
        log_group = logs.LogGroup(
            self, "StateMachineLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        # One ASL, two kinds: EXPRESS for the runs that fit it, STANDARD for the rest.
        self.state_machine, self.express_state_machine = (
            sfn.StateMachine(
                self,
                machine.id,
                # STANDARD: the ASL file as it is; EXPRESS: its batches, made from it
                definition_body=(
                    sfn.DefinitionBody.from_string(machine.text())
                    if machine.express
                    else sfn.DefinitionBody.from_file(str(machine.path))
                ),
                definition_substitutions={name: values[name] for name in machine.substitutions},
                state_machine_type=(
                    sfn.StateMachineType.EXPRESS
                    if machine.express
                    else sfn.StateMachineType.STANDARD
                ),
                logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ERROR),
                tracing_enabled=True,
            )
            for machine in (machines.STATE_MACHINE, machines.EXPRESS_STATE_MACHINE)
        )
        #: Where both state machines log their errors (and chronoq's own failed executions
        #: are counted from: see Monitoring).
        self.log_group = log_group
        self.state_machines = (self.state_machine, self.express_state_machine)
        for machine in self.state_machines:
            # the run's record: RUNNING, attempts, outcome; is it still running (retries)
            grant_items(machine, storage.runs, "dynamodb:UpdateItem", "dynamodb:GetItem")
            # a forbid/replace job's active runs: the run taken off at its end
            grant_items(machine, storage.jobs, "dynamodb:UpdateItem")
            # the runner, by its unqualified ARN (as the ASL names it): no version or alias
            iam.Grant.add_to_principal(
                grantee=machine,
                actions=["lambda:InvokeFunction"],
                resource_arns=[self.runner.function_arn],
            )
            acknowledge(
                machine.role,
                "AwsSolutions-IAM5[Resource::*]",
                "Logging to CloudWatch Logs (logs:CreateLogDelivery and the like) and X-Ray"
                " tracing (xray:PutTraceSegments and the like) support no resource-level"
                " permissions.",
            )
            acknowledge(
                machine,
                "AwsSolutions-SF1",
                "Executions log at level ERROR: ALL would write every state of every run to"
                " CloudWatch Logs (paid per GB, a million times); each run's own record keeps"
                " its times, attempts, output and logs.",
            )
        containers.grant_run(self.state_machine)  # containers run on STANDARD only
        self._grant_deliveries(access)
        self._grant_runner(storage, containers, access)

    def _grant_deliveries(self, access: TargetAccess) -> None:
        """The state machine delivers sqs, sns and eventbridge targets itself."""
        for action, arns in (
            ("sqs:SendMessage", access.queue_arns(self)),
            ("sns:Publish", access.topic_arns(self)),
            ("events:PutEvents", access.event_bus_arns(self)),
        ):
            if arns:
                for machine in self.state_machines:
                    grant_wildcards(machine, [action], arns, SETTING_REASON)

    def _grant_runner(self, storage: Storage, containers: Containers, access: TargetAccess) -> None:
        # Each attempt's log lines are appended to its run.
        grant_items(self.runner, storage.runs, "dynamodb:UpdateItem")
        # Outputs and logs too large for the record; the runner writes them, never reads.
        grant_wildcards(
            self.runner,
            ["s3:PutObject"],
            [storage.outputs.arn_for_objects("*"), *access.output_object_arns(self)],
            OBJECTS_REASON,
        )
        containers.grant_prepare(self.runner)
        functions = access.lambda_function_arns(self)
        if functions:
            grant_wildcards(self.runner, ["lambda:InvokeFunction"], functions, SETTING_REASON)

    def deny_own_resources(
        self,
        *,
        functions: Iterable[lambda_.IFunction],
        queues: Iterable[sqs.IQueue],
        topics: Iterable[sns.ITopic],
    ) -> None:
        """Keep targets away from chronoq itself, whatever their scopes allow (by default
        nothing; ``*``: anything in the account and region): the runner may invoke none of
        ``functions`` (its lambda targets), the state machine may send to none of ``queues``
        nor publish to any of ``topics`` (its sqs and sns targets).

        The state machine still invokes the runner: that right is its own, not the runner's.
        """
        function_arns = [
            arn for f in functions for arn in (f.function_arn, f"{f.function_arn}:*")
        ]  # the qualified ARNs (versions, aliases) too
        # A policy of its own, not the runner role's default policy: the runner (like every
        # function) waits for its role's default policy, and the other functions wait, through
        # the state machine, for the runner, so naming them there would be a cycle.
        assert self.runner.role is not None  # python_function gives each function its role
        iam.Policy(
            self,
            "RunnerDenials",
            roles=[self.runner.role],
            statements=[
                iam.PolicyStatement(
                    effect=iam.Effect.DENY,
                    actions=["lambda:InvokeFunction"],
                    resources=function_arns,
                )
            ],
        )
        for action, arns in (
            ("sqs:SendMessage", [q.queue_arn for q in queues]),
            ("sns:Publish", [t.topic_arn for t in topics]),
        ):
            for machine in self.state_machines:
                machine.add_to_role_policy(
                    iam.PolicyStatement(effect=iam.Effect.DENY, actions=[action], resources=arns)
                )
