"""The DynamoDB tables (jobs, the schedule time index, runs and the audit trail) and the output
bucket."""

from __future__ import annotations

import math
from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from chronoq import resources as r
from constructs import Construct

from .rules import acknowledge

#: Tables whose loss would lose jobs, pending occurrences or history: every one of them (the
#: schedule table holds each job's next occurrence and the dispatcher's checkpoints). Each
#: has point-in-time recovery and deletion protection, and is kept when the stack is deleted.
DURABLE = frozenset(t.id for t in r.TABLES)
#: Why a grant on the output bucket's objects names them with a wildcard.
OBJECTS_REASON = (
    "Outputs and logs are objects named by their run (one per run and attempt): the grant"
    " names the bucket's objects, not one of them."
)


def grant_items(
    grantee: iam.IGrantable,
    table: dynamodb.ITable,
    *actions: str,
    indexes: Sequence[str] = (),
) -> None:
    """Exactly ``actions`` on ``table`` (and on the named ``indexes`` of it, by name): no
    wildcard, unlike Table.grant, which adds every index (``index/*``)."""
    index_arns = [f"{table.table_arn}/index/{name}" for name in indexes]
    iam.Grant.add_to_principal(
        grantee=grantee, actions=list(actions), resource_arns=[table.table_arn, *index_arns]
    )


def grant_index_query(grantee: iam.IGrantable, table: dynamodb.ITable, index: str) -> None:
    """Query on ``table``'s index ``index`` only (not on the table itself)."""
    iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["dynamodb:Query"],
        resource_arns=[f"{table.table_arn}/index/{index}"],
    )


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class Storage(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.tables = {spec.id: self._table(spec) for spec in r.TABLES}
        self.jobs = self.tables[r.JOBS_TABLE.id]
        self.schedule = self.tables[r.SCHEDULE_TABLE.id]
        self.runs = self.tables[r.RUNS_TABLE.id]
        self.audit = self.tables[r.AUDIT_TABLE.id]
        # Outputs and logs too large for the run record: history, like the runs table, so
        # kept on stack deletion; they expire with the runs they belong to.
        self.outputs = s3.Bucket(
            self,
            r.OUTPUT_BUCKET_ID,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(math.ceil(r.RUN_RETENTION_SECONDS / 86400))
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.outputs,
            "AwsSolutions-S1",
            "Server access logs would need a bucket of their own and a log object per request;"
            " every object here is written by the runner and read by the api function for the"
            " run's owner, both of which log their requests.",
        )

    def _table(self, spec: r.Table) -> dynamodb.Table:
        durable = spec.id in DURABLE
        table = dynamodb.Table(
            self,
            spec.id,
            partition_key=_string(spec.partition_key),
            sort_key=_string(spec.sort_key) if spec.sort_key else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=spec.ttl_attribute,
            point_in_time_recovery_specification=(
                dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True)
                if durable
                else None
            ),
            deletion_protection=durable,
            removal_policy=RemovalPolicy.RETAIN if durable else RemovalPolicy.DESTROY,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if spec.stream else None,
        )
        for index in spec.indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_string(index.partition_key),
                sort_key=_string(index.sort_key) if index.sort_key else None,
                projection_type=dynamodb.ProjectionType(index.projection.value),
            )
        return table
