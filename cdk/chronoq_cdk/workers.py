"""Workers: the worker function, fed by one SQS event source per priority queue."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .api import EXECUTIONS_REASON, executions_of
from .functions import python_function
from .queues import Queues
from .rules import acknowledge, grant_wildcards
from .storage import Storage, grant_index_query, grant_items


class Workers(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        storage: Storage,
        queues: Queues,
        state_machine: sfn.StateMachine,
        express_state_machine: sfn.StateMachine,
        max_concurrency: int = r.DEFAULT_WORKER_MAX_CONCURRENCY,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            r.WORKER_FUNCTION,
            layer=layer,
            environment=environment,
            no_dead_letters=(
                "Its event source mappings invoke it synchronously; a message it fails on"
                " goes back to its queue, and to the queue's dead-letter queue after 5"
                " receives."
            ),
        )
        # The jobs of a batch's runs are read together (consistent); claiming a run of a
        # forbid/replace job enters it in the job's active runs and records it QUEUED; flow
        # items are read and updated; runs that end without starting, and a backfill's next
        # runs, are recorded; a run its flow holds back is parked (UpdateItem), and a run
        # replaced before it started wakes the runs parked on its flows (the waiting index).
        grant_items(
            self.function,
            storage.jobs,
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
        )
        grant_items(
            self.function,
            storage.runs,
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        grant_index_query(self.function, storage.runs, r.RUNS_WAITING_INDEX)
        for machine in (state_machine, express_state_machine):
            iam.Grant.add_to_principal(
                grantee=self.function,
                actions=["states:StartExecution"],
                resource_arns=[machine.state_machine_arn],
            )
        # concurrency "replace" stops the active run's execution.
        stops = [executions_of(state_machine)]
        grant_wildcards(self.function, ["states:StopExecution"], stops, EXECUTIONS_REASON)
        # a run its flow holds back is sent again; a backfill's next run is sent.
        queues.grant_send_messages(self.function)
        for queue in queues.by_priority.values():
            self.function.add_event_source(
                sources.SqsEventSource(
                    queue,
                    batch_size=r.WORKER_BATCH_SIZE,
                    max_batching_window=Duration.seconds(r.WORKER_BATCHING_WINDOW_SECONDS),
                    report_batch_item_failures=True,
                    # a burst of one priority takes at most this many batches at once
                    max_concurrency=max_concurrency,
                )
            )
        for mapping in self.function.node.children:
            if isinstance(mapping, lambda_.EventSourceMapping):
                acknowledge(
                    mapping,
                    "Serverless-LambdaEventSourceMappingDestination",
                    "The run queues' redrive policy moves a message the worker failed on 5"
                    " times to the dead-letter queue (alarmed on).",
                )
