"""The DynamoDB tables (jobs, the schedule time index and runs) and the output bucket."""

from __future__ import annotations

import math

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from chronoq import resources as r
from constructs import Construct

#: Tables whose loss would lose jobs or history: point-in-time recovery, kept on stack deletion.
DURABLE = frozenset({r.JOBS_TABLE.id, r.RUNS_TABLE.id})


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class Storage(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.tables = {spec.id: self._table(spec) for spec in r.TABLES}
        self.jobs = self.tables[r.JOBS_TABLE.id]
        self.schedule = self.tables[r.SCHEDULE_TABLE.id]
        self.runs = self.tables[r.RUNS_TABLE.id]
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
