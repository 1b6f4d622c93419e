"""The Chronoq stack: storage, queues, layer, containers, notifications, the archive, execution,
dispatch and the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_lambda as lambda_
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.limits import Limits
from chronoq.domain.network import NetworkPolicy
from chronoq.domain.notifications import topic_statuses as final_statuses
from constructs import Construct

from .access import TargetAccess
from .api import Api
from .archive import Archive
from .console import Console
from .containers import Containers
from .dispatch import Dispatch
from .erasure import Erasure
from .execution import Execution
from .layer import CoreLayer
from .monitoring import Monitoring, Watched
from .notifications import Notifications
from .queues import Queues
from .secrets import grant_secrets, secrets_path
from .storage import Storage, grant_items
from .workers import Workers

MAX_SHARDS = 1000
#: An SQS event source mapping's maximum concurrency (Lambda's bounds).
MIN_EVENT_SOURCE_CONCURRENCY = 2
MAX_EVENT_SOURCE_CONCURRENCY = 1000


class ChronoqStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        shards: int = r.DEFAULT_SHARDS,
        dispatch_groups: int = r.DEFAULT_DISPATCH_GROUPS,
        task_modules: str = "",
        task_layer_arns: Sequence[str] = (),
        email_sender: str = "",
        topic_statuses: Sequence[str] = r.DEFAULT_TOPIC_STATUSES,
        target_access: TargetAccess | None = None,
        block_private_targets: bool = True,
        allowed_target_networks: Sequence[str] = (),
        max_jobs_per_owner: int = lim.DEFAULT_MAX_JOBS_PER_OWNER,
        owner_limits: Limits | None = None,
        api_burst_limit: int = r.DEFAULT_API_BURST_LIMIT,
        api_rate_limit: float = r.DEFAULT_API_RATE_LIMIT,
        mfa_required: bool = False,
        worker_max_concurrency: int = r.DEFAULT_WORKER_MAX_CONCURRENCY,
        runner_reserved_concurrency: int = r.DEFAULT_RUNNER_RESERVED_CONCURRENCY,
        alarm_email: str = "",
        archive_infrequent_access_days: int = r.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS,
        archive_expiry_days: int = r.DEFAULT_ARCHIVE_EXPIRY_DAYS,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, description="chronoq: serverless job scheduler", **kwargs)
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards must be between 1 and {MAX_SHARDS}, not {shards}")
        if not 1 <= dispatch_groups <= shards:
            raise ValueError(f"dispatch_groups must be between 1 and shards, not {dispatch_groups}")
        try:
            # The final statuses of the runs published to the SNS topic.
            audience = final_statuses(topic_statuses)
        except ValueError as error:
            raise ValueError(f"topic_statuses: {error}") from None
        try:
            NetworkPolicy.of(block_private_targets, allowed_target_networks)
        except ValueError as error:
            raise ValueError(f"allowed_target_networks: {error}") from None
        if max_jobs_per_owner < 1:
            raise ValueError(f"max_jobs_per_owner must be at least 1, not {max_jobs_per_owner}")
        limits = owner_limits or Limits()
        for name, value in r.owner_limits_environment(limits).items():
            if int(value) < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        if api_burst_limit < 1 or api_rate_limit <= 0:
            raise ValueError("api_burst_limit and api_rate_limit must be positive")
        concurrency = (MIN_EVENT_SOURCE_CONCURRENCY, MAX_EVENT_SOURCE_CONCURRENCY)
        if not concurrency[0] <= worker_max_concurrency <= concurrency[1]:
            raise ValueError(
                f"worker_max_concurrency must be between {MIN_EVENT_SOURCE_CONCURRENCY} and"
                f" {MAX_EVENT_SOURCE_CONCURRENCY}, not {worker_max_concurrency}"
            )
        if runner_reserved_concurrency < 0:
            raise ValueError(
                f"runner_reserved_concurrency must be 0 (none) or more, not"
                f" {runner_reserved_concurrency}"
            )
        access = target_access or TargetAccess()
        access.check()
        self.storage = Storage(self, "Storage")
        self.queues = Queues(self, "Queues")
        self.layer = CoreLayer(self, "CoreLayer").layer
        # The deployment's own Python tasks, in layers of its own (see chronoq.tasks).
        task_layers = [
            lambda_.LayerVersion.from_layer_version_arn(self, f"TaskLayer{i}", arn)
            for i, arn in enumerate(task_layer_arns)
        ]
        self.containers = Containers(self, "Containers", access=access)
        environment = {
            **{t.env: self.storage.tables[t.id].table_name for t in r.TABLES},
            **{q.env: self.queues.by_priority[q.priority].queue_url for q in r.QUEUES},
            r.ENV_SHARDS: str(shards),
            r.ENV_TASK_MODULES: task_modules,
            r.ENV_OUTPUT_BUCKET: self.storage.outputs.bucket_name,
            # The other buckets an output_location may name ("": only the deployment's own).
            r.ENV_OUTPUT_BUCKETS: ",".join(access.output_buckets),
            r.ENV_CONTAINER_LOG_GROUP: self.containers.log_group.log_group_name,
            r.ENV_CONTAINER_EXECUTION_ROLE_ARN: self.containers.execution_role.role_arn,
            r.ENV_CONTAINER_TASK_ROLE_ARN: self.containers.task_role.role_arn,
            # The SSRF guard of http targets and webhooks: on unless turned off.
            r.ENV_BLOCK_PRIVATE_TARGETS: "true" if block_private_targets else "false",
            r.ENV_ALLOWED_TARGET_NETWORKS: ",".join(allowed_target_networks),
            r.ENV_MAX_JOBS_PER_OWNER: str(max_jobs_per_owner),
            # Where owners' secrets' values live: SSM Parameter Store, under the stack's path.
            r.ENV_SECRETS_PATH: secrets_path(self),
            # What each owner's backfills and re-runs may hold at once.
            **r.owner_limits_environment(limits),
            # What service targets and container images the API accepts: what IAM allows.
            **access.api_environment(),
        }
        self.notifications = Notifications(
            self,
            "Notifications",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            queues=self.queues,
            topic_statuses=audience,
            email_sender=email_sender,
        )
        environment = {**environment, **self.notifications.environment}
        # Every ended run, kept in S3: the runs stream's second (bulk) reader.
        self.archive = Archive(
            self,
            "Archive",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            topic_statuses=audience,
            infrequent_access_days=archive_infrequent_access_days,
            expiry_days=archive_expiry_days,
        )
        environment = {**environment, **self.archive.environment}
        self.execution = Execution(
            self,
            "Execution",
            layer=self.layer,
            task_layers=task_layers,
            environment=environment,
            storage=self.storage,
            containers=self.containers,
            access=access,
            reserved_concurrency=runner_reserved_concurrency,
        )
        self.containers.allow_task_responses(self.execution.state_machine)
        environment = {
            **environment,
            r.ENV_STATE_MACHINE_ARN: self.execution.state_machine.state_machine_arn,
            r.ENV_EXPRESS_STATE_MACHINE_ARN: (
                self.execution.express_state_machine.state_machine_arn
            ),
        }
        self.dispatch = Dispatch(
            self,
            "Dispatch",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            queues=self.queues,
            shards=shards,
            groups=dispatch_groups,
        )
        self.workers = Workers(
            self,
            "Workers",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            queues=self.queues,
            state_machine=self.execution.state_machine,
            express_state_machine=self.execution.express_state_machine,
            max_concurrency=worker_max_concurrency,
        )
        self.api = Api(
            self,
            "Api",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            queues=self.queues,
            state_machine=self.execution.state_machine,
            task_layers=task_layers,
            notifications=self.notifications,
            access=access,
            burst_limit=api_burst_limit,
            rate_limit=api_rate_limit,
            hosted_ui_prefix=self.node.try_get_context("console_domain_prefix") or None,
            mfa_required=mfa_required,
        )
        self.console = Console(self, "Console", layer=self.layer, api=self.api)
        self.erasure = Erasure(
            self,
            "Erasure",
            layer=self.layer,
            environment=environment,
            storage=self.storage,
            state_machines=(
                self.execution.state_machine,
                self.execution.express_state_machine,
            ),
            archive=self.archive.bucket,
        )
        self.archive.grant_links(self.api.function)  # (GET /archive)
        self._grant_secrets()
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            watched=Watched(
                # (not the eraser: an operator invokes it and reads its answer, an error or a
                # throttle included; nothing else does, so no alarm would tell more)
                functions={
                    **{n: f for n, f in self.functions.items() if n != r.ERASER_FUNCTION.name},
                    "console": self.console.function,
                },
                dispatcher=self.dispatch.function,
                notifier=self.notifications.function,
                dispatch_groups=dispatch_groups,
                run_queues=self.queues.by_priority,
                dead_letters={
                    "Runs": self.queues.dead_letter,
                    "Notifier": self.notifications.dead_letter,
                    "Archiver": self.archive.dead_letter,
                },
                state_machine_logs=self.execution.log_group,
                express_state_machine=self.execution.express_state_machine,
                http_api=self.api.http_api,
                archiver=self.archive.function,
            ),
            alarm_email=alarm_email,
        )
        # Targets reach whatever their scopes allow, but never chronoq itself (the function
        # that creates the heartbeat on deployment included).
        self.execution.deny_own_resources(
            functions=[
                *self.functions.values(),
                self.console.function,
                self.monitoring.provider,
            ],
            queues=[
                *self.queues.by_priority.values(),
                self.queues.dead_letter,
                self.notifications.dead_letter,
                self.archive.dead_letter,
            ],
            topics=[self.notifications.topic],
        )

        CfnOutput(self, "ApiUrl", value=self.api.http_api.api_endpoint)
        CfnOutput(self, "ConsoleUrl", value=self.console.url)
        CfnOutput(self, "UserPoolId", value=self.api.user_pool.user_pool_id)
        CfnOutput(self, "UserPoolClientId", value=self.api.client.user_pool_client_id)
        CfnOutput(self, "StateMachineArn", value=self.execution.state_machine.state_machine_arn)
        CfnOutput(
            self,
            "ExpressStateMachineArn",
            value=self.execution.express_state_machine.state_machine_arn,
        )
        CfnOutput(self, "NotificationTopicArn", value=self.notifications.topic.topic_arn)
        CfnOutput(self, "OutputBucketName", value=self.storage.outputs.bucket_name)
        CfnOutput(self, "EraserFunctionName", value=self.erasure.function.function_name)
        CfnOutput(self, "ArchiveBucketName", value=self.archive.bucket.bucket_name)
        CfnOutput(self, "ArchiveDatabase", value=self.archive.database_name)
        CfnOutput(self, "ArchiveWorkGroup", value=self.archive.workgroup.ref)
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        CfnOutput(
            self,
            "DashboardUrl",
            value=f"https://console.aws.amazon.com/cloudwatch/home?region={self.region}"
            f"#dashboards:name={self.monitoring.dashboard.dashboard_name}",
        )

    def _grant_secrets(self) -> None:
        """Owners' secrets' values (see .secrets): the api keeps and deletes them; the runner
        and the notifier read the versions a run names; ECS reads those a container target
        names as it starts its task. No other function may reach them."""
        grant_secrets(self, self.api.function, ["ssm:PutParameter", "ssm:DeleteParameter"])
        grant_secrets(self, self.execution.runner, ["ssm:GetParameter"])
        grant_secrets(self, self.notifications.function, ["ssm:GetParameter"])
        grant_secrets(self, self.containers.execution_role, ["ssm:GetParameters"])
        # The runner reads its owner's secrets' versions: the owner's ``secrets#<owner>``
        # item of the jobs table (the notifier may read jobs already). On the whole table:
        # the least-privilege check evaluates no ``dynamodb:LeadingKeys`` condition, which
        # would narrow it to the items whose key begins ``secrets#``.
        grant_items(self.execution.runner, self.storage.jobs, "dynamodb:GetItem")

    @property
    def functions(self) -> dict[str, lambda_.Function]:
        """Every function, by its name in chronoq.resources."""
        return {
            r.API_FUNCTION.name: self.api.function,
            r.DISPATCHER_FUNCTION.name: self.dispatch.function,
            r.WORKER_FUNCTION.name: self.workers.function,
            r.RUNNER_FUNCTION.name: self.execution.runner,
            r.NOTIFIER_FUNCTION.name: self.notifications.function,
            r.ERASER_FUNCTION.name: self.erasure.function,
            r.ARCHIVER_FUNCTION.name: self.archive.function,
        }
