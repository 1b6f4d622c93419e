"""Execution: the run state machine and the runner function it invokes."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .functions import LOG_RETENTION, python_function


class Execution(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        task_layers: Sequence[lambda_.ILayerVersion],
        runs_table: dynamodb.ITable,
        jobs_table: dynamodb.ITable,
        task_modules: str,
    ) -> None:
        super().__init__(scope, id)
        self.runner = python_function(
            self,
            "Runner",
            r.RUNNER_FUNCTION,
            layer=layer,
            extra_layers=task_layers,
            environment={r.ENV_TASK_MODULES: task_modules},
        )
        values = {
            r.ASL_RUNS_TABLE: runs_table.table_name,
            r.ASL_JOBS_TABLE: jobs_table.table_name,
            r.ASL_RUNNER_FUNCTION: self.runner.function_arn,
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
        runs_table.grant(self.state_machine, "dynamodb:UpdateItem")
        jobs_table.grant(self.state_machine, "dynamodb:UpdateItem")
        self.runner.grant_invoke(self.state_machine)
