"""Containers: where container targets run on Fargate, and the rights to run them.

The runner registers one task definition per image, size and environment (family
``chronoq-<hash>``, see chronoq.execution.targets) with the two roles made here; the state
machine runs it with ``ecs:runTask.sync`` in the cluster, on the public subnets, with the security
group.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .access import TargetAccess
from .functions import LOG_RETENTION
from .rules import acknowledge, grant_wildcards

ECS_TASKS = "ecs-tasks.amazonaws.com"
#: The rule Step Functions manages to hear when an ``ecs:runTask.sync`` task stops.
SYNC_RULE = "StepFunctionsGetEventsForECSTaskRule"


class Containers(Construct):
    def __init__(self, scope: Construct, id: str, *, access: TargetAccess) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        # Public subnets only: tasks get a public IP to pull images and reach their targets,
        # so no NAT gateway is paid for by the hour.
        self.vpc = ec2.Vpc(
            self,
            "Network",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC)
            ],
        )
        acknowledge(
            self.vpc,
            "AwsSolutions-VPC7",
            "The VPC holds only container targets' tasks, whose security group takes no"
            " inbound traffic; a flow log would be paid per GB of their outbound traffic.",
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "Tasks",
            vpc=self.vpc,
            description="chronoq container tasks: outbound only",
            allow_all_outbound=True,
        )
        self.cluster = ecs.Cluster(
            self,
            r.CONTAINER_CLUSTER_ID,
            vpc=self.vpc,
            container_insights_v2=ecs.ContainerInsights.DISABLED,
        )
        acknowledge(
            self.cluster,
            "AwsSolutions-ECS4",
            "Container Insights is paid per task's metrics; each run's own record keeps its"
            " outcome, duration and log (chronoq's metrics count runs of every target).",
        )
        self.log_group = logs.LogGroup(
            self,
            r.CONTAINER_LOG_GROUP_ID,
            retention=LOG_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Only ECS tasks of this account may take either role.
        principal = iam.ServicePrincipal(
            ECS_TASKS, conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
        )
        # What ECS itself needs to start a task: pull the image (only from the ECR
        # repositories of the images the deployment allows: container_images), write its log.
        self.execution_role = iam.Role(
            self, "ExecutionRole", assumed_by=principal, description="ECS starts chronoq tasks"
        )
        repositories = access.ecr_repository_arns(self)
        if repositories:
            ecr.AuthorizationToken.grant_read(self.execution_role)
            acknowledge(
                self.execution_role,
                "AwsSolutions-IAM5[Resource::*]",
                "ecr:GetAuthorizationToken supports no resource-level permission (the pulls"
                " themselves are granted on the allowed images' repositories only).",
            )
            grant_wildcards(
                self.execution_role,
                [
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchGetImage",
                ],
                repositories,
                "The repositories are the deployment's own setting (container_images): a"
                " wildcard there is the operator's choice, and the API refuses any other image.",
            )
        self.log_group.grant(self.execution_role, "logs:CreateLogStream", "logs:PutLogEvents")
        # What the job's own code may do: only report to its run (see allow_task_responses).
        self.task_role = iam.Role(
            self, "TaskRole", assumed_by=principal, description="chronoq container jobs"
        )

    @property
    def subnet_ids(self) -> str:
        """The public subnets, comma-separated (the ASL splits them)."""
        return Fn.join(",", [s.subnet_id for s in self.vpc.public_subnets])

    def allow_task_responses(self, state_machine: sfn.IStateMachine) -> None:
        """Containers heartbeat (and may end) their run with the task token they are given."""
        state_machine.grant_task_response(self.task_role)

    def grant_prepare(self, grantee: iam.IGrantable) -> None:
        """Find or register task definitions using the two roles; read the tasks' logs."""
        # Neither action supports resource-level permissions.
        grant_wildcards(
            grantee,
            ["ecs:DescribeTaskDefinition", "ecs:RegisterTaskDefinition"],
            ["*"],
            "ecs:RegisterTaskDefinition and ecs:DescribeTaskDefinition support no"
            " resource-level permissions.",
        )
        self._grant_pass_roles(grantee)
        self.log_group.grant(grantee, "logs:GetLogEvents")

    def grant_run(self, grantee: iam.IGrantable) -> None:
        """Run chronoq's task definitions in the cluster and wait for them (.sync)."""
        stack = Stack.of(self)
        grant_wildcards(
            grantee,
            ["ecs:RunTask"],
            [stack.format_arn(service="ecs", resource="task-definition/chronoq-*")],
            "The runner registers a task definition per image, size and environment (family"
            " chronoq-<hash>); only those run, and only in chronoq's cluster (the condition).",
            conditions={"ArnEquals": {"ecs:cluster": self.cluster.cluster_arn}},
        )
        grant_wildcards(
            grantee,
            ["ecs:StopTask", "ecs:DescribeTasks"],
            [
                stack.format_arn(
                    service="ecs",
                    resource="task",
                    resource_name=f"{self.cluster.cluster_name}/*",
                    arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                )
            ],
            "Tasks are named by ECS as they start: the grant names the tasks of chronoq's cluster.",
        )
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
            resource_arns=[stack.format_arn(service="events", resource=f"rule/{SYNC_RULE}")],
        )
        self._grant_pass_roles(grantee)

    def _grant_pass_roles(self, grantee: iam.IGrantable) -> None:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["iam:PassRole"],
            resource_arns=[self.execution_role.role_arn, self.task_role.role_arn],
        )
