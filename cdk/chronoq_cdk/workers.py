"""Workers: the worker function, fed by one SQS event source per priority queue."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .functions import python_function
from .queues import Queues
from .storage import Storage


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
        state_machine: sfn.IStateMachine,
        express_state_machine: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self, "Function", r.WORKER_FUNCTION, layer=layer, environment=environment
        )
        # Claiming is a transaction over the job (its active runs) and the run; a batch's
        # jobs are read together; flow items are read and updated; runs that end without
        # starting, and a backfill's next runs, are recorded.
        storage.jobs.grant(
            self.function, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem"
        )
        storage.runs.grant(
            self.function,
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        state_machine.grant_start_execution(self.function)
        express_state_machine.grant_start_execution(self.function)
        # concurrency "replace" stops the active run's execution.
        state_machine.grant_execution(self.function, "states:StopExecution")
        # a run its flow holds back is sent again; a backfill's next run is sent.
        queues.grant_send_messages(self.function)
        for queue in queues.by_priority.values():
            self.function.add_event_source(
                sources.SqsEventSource(
                    queue,
                    batch_size=r.WORKER_BATCH_SIZE,
                    max_batching_window=Duration.seconds(r.WORKER_BATCHING_WINDOW_SECONDS),
                    report_batch_item_failures=True,
                )
            )
