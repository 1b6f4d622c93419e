"""Execution: the run state machine and the runner function it invokes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .access import TargetAccess
from .containers import Containers
from .functions import LOG_RETENTION, python_function
from .storage import Storage


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
    ) -> None:
        super().__init__(scope, id)
        self.runner = python_function(
            self,
            "Runner",
            r.RUNNER_FUNCTION,
            layer=layer,
            extra_layers=task_layers,
            environment=environment,
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
        self.state_machine = sfn.StateMachine(
            self,
            r.STATE_MACHINE.id,
            definition_body=sfn.DefinitionBody.from_file(str(r.STATE_MACHINE.path)),
            definition_substitutions={name: values[name] for name in r.STATE_MACHINE.substitutions},
            state_machine_type=sfn.StateMachineType.STANDARD,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ERROR),
        )
        storage.runs.grant(self.state_machine, "dynamodb:UpdateItem")
        storage.jobs.grant(self.state_machine, "dynamodb:UpdateItem")
        self.runner.grant_invoke(self.state_machine)
        containers.grant_run(self.state_machine)
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
                iam.Grant.add_to_principal(
                    grantee=self.state_machine, actions=[action], resource_arns=arns
                )

    def _grant_runner(self, storage: Storage, containers: Containers, access: TargetAccess) -> None:
        # Each attempt's log lines are appended to its run.
        storage.runs.grant(self.runner, "dynamodb:UpdateItem")
        # Outputs and logs too large for the record; the runner writes them, never reads.
        iam.Grant.add_to_principal(
            grantee=self.runner,
            actions=["s3:PutObject"],
            resource_arns=[
                storage.outputs.arn_for_objects("*"),
                *access.output_object_arns(self),
            ],
        )
        containers.grant_prepare(self.runner)
        functions = access.lambda_function_arns(self)
        if functions:
            iam.Grant.add_to_principal(
                grantee=self.runner, actions=["lambda:InvokeFunction"], resource_arns=functions
            )
