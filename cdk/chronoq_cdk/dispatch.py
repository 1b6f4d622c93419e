"""Dispatch: the dispatcher function, invoked once a minute by an EventBridge rule."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from chronoq import resources as r
from constructs import Construct

from .functions import python_function
from .queues import Queues
from .rules import acknowledge
from .storage import Storage, grant_items

#: Why a failed tick is not kept anywhere to be replayed.
CAUGHT_UP = (
    "A failed or undelivered tick is not retried: the next one, a minute later, catches up"
    " from each shard's checkpoint, so a dead letter would hold nothing to replay; the"
    " dispatcher's alarms say when ticks fail or stop."
)


class Dispatch(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        storage: Storage,
        queues: Queues,
        shards: int = r.DEFAULT_SHARDS,
        groups: int = r.DEFAULT_DISPATCH_GROUPS,
    ) -> None:
        super().__init__(scope, id)
        # A failed tick is not retried: the next one catches up from the per-shard
        # checkpoints. Two overlapping ticks are harmless (checkpoints only move forward and
        # a run dispatched twice is dropped by the worker's claim), so no concurrency is
        # reserved, which would fail on accounts with the default concurrency quota.
        self.function = python_function(
            self,
            "Function",
            r.DISPATCHER_FUNCTION,
            layer=layer,
            environment=environment,
            no_dead_letters=CAUGHT_UP,
        )
        self.function.configure_async_invoke(retry_attempts=0, max_event_age=Duration.minutes(1))
        for child in self.function.node.children:
            if isinstance(child, lambda_.EventInvokeConfig):
                acknowledge(child, "Serverless-LambdaAsyncFailureDestination", CAUGHT_UP)
        # The jobs of a minute's occurrences (one batch read); the heartbeat job, created if
        # missing (chronoq.heartbeat); jobs' expectations of success, read when their deadline
        # comes (batch read) and marked silent (UpdateItem, in one transaction with the SILENT
        # record: PutItem on the runs table, below).
        grant_items(
            self.function,
            storage.jobs,
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        )
        # The time index: checkpoints and progress (read together, then moved on), a minute's
        # occurrences (key-range queries), the next occurrences (batch writes).
        grant_items(
            self.function,
            storage.schedule,
            "dynamodb:BatchGetItem",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:UpdateItem",
            "dynamodb:BatchWriteItem",
        )
        # An occurrence past its start deadline is recorded MISSED.
        grant_items(
            self.function,
            storage.runs,
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        )
        queues.grant_send_messages(self.function)
        # One invocation per group of shards each minute, in parallel (each event names its
        # shards); a rule holds up to 5 targets.
        invocations = [
            targets.LambdaFunction(
                self.function, event=events.RuleTargetInput.from_object({"shards": group})
            )
            for group in r.shard_groups(shards, groups)
        ]
        self.rules = [
            events.Rule(
                self,
                "EveryMinute" if i == 0 else f"EveryMinute{i // r.RULE_TARGETS}",
                # at the start of every minute (a rate rule ticks at whatever second it was
                # created: late in a minute, it would leave the next one's first seconds
                # too little time)
                schedule=events.Schedule.cron(minute="*"),
                targets=invocations[i : i + r.RULE_TARGETS],
            )
            for i in range(0, len(invocations), r.RULE_TARGETS)
        ]
        for rule in self.rules:
            acknowledge(rule, "Serverless-EventBusDLQ", CAUGHT_UP)
