"""Erasure: the eraser function, which an operator invokes to take one owner's data out of
chronoq everywhere (``chronoq admin erase``). Nothing invokes it on its own: no rule, no event
source, no route. Its role may delete what the api's may not (the audit trail's entries)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from chronoq import resources as r
from constructs import Construct

from .api import EXECUTIONS_REASON, executions_of
from .functions import python_function
from .rules import grant_wildcards
from .secrets import grant_secrets
from .storage import OBJECTS_REASON, Storage, grant_index_query, grant_items

#: Why a failed erasure is not kept to be replayed.
INVOKED_BY_AN_OPERATOR = (
    "An operator invokes the eraser synchronously and reads its answer; an erasure that"
    " failed is invoked again (it is idempotent), so nothing is kept to replay."
)


class Erasure(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        storage: Storage,
        state_machines: tuple[sfn.StateMachine, ...],
        archive: s3.IBucket,
    ) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            "Function",
            r.ERASER_FUNCTION,
            layer=layer,
            environment=environment,
            no_dead_letters=INVOKED_BY_AN_OPERATOR,
        )
        function = self.function
        # The owner's jobs (listed by the owner index, read, deleted, as a delete does: the
        # count, names, secrets' uses, backfills' usage), and the owner's own items.
        grant_items(
            function,
            storage.jobs,
            "dynamodb:Query",
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:ConditionCheckItem",
            indexes=[r.JOBS_BY_OWNER_INDEX],
        )
        # The jobs' runs under way, cancelled; then their partitions, read by key and deleted.
        grant_items(
            function,
            storage.runs,
            "dynamodb:Query",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:BatchWriteItem",
        )
        # The owner's audit entries, found through the owner index and deleted one by one
        # (DeleteItem: it can only delete; BatchWriteItem's action could write one over), and
        # the erasure's own entry added (PartiQL INSERT: never over another).
        grant_index_query(function, storage.audit, r.AUDIT_BY_OWNER_INDEX)
        grant_items(function, storage.audit, "dynamodb:DeleteItem", "dynamodb:PartiQLInsert")
        # The jobs' outputs and logs in the deployment's bucket.
        grant_wildcards(
            function,
            ["s3:ListBucket"],
            [storage.outputs.bucket_arn],
            OBJECTS_REASON,
            conditions={"StringLike": {"s3:prefix": ["runs/*"]}},
        )
        grant_wildcards(
            function,
            ["s3:DeleteObject"],
            [storage.outputs.arn_for_objects("runs/*")],
            OBJECTS_REASON,
        )
        # The owner's archive (its ``owner=`` prefix of the archive's bucket).
        grant_wildcards(
            function,
            ["s3:ListBucket"],
            [archive.bucket_arn],
            OBJECTS_REASON,
            conditions={"StringLike": {"s3:prefix": [f"{r.ARCHIVE_PREFIX}/*"]}},
        )
        grant_wildcards(
            function,
            ["s3:DeleteObject"],
            [archive.arn_for_objects(f"{r.ARCHIVE_PREFIX}/*")],
            OBJECTS_REASON,
        )
        grant_secrets(self, function, ["ssm:DeleteParameter"])
        grant_wildcards(
            function,
            ["states:StopExecution"],
            [executions_of(machine) for machine in state_machines],
            EXECUTIONS_REASON,
        )
