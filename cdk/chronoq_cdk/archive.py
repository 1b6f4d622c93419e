"""The archive (docs/api/archive.md): every ended run's record kept in S3 after the runs table
lets it expire, and every audit entry after the audit table does. The archiver function, the
runs stream's bulk reader and the audit stream's only one (chronoq.aws.fanout), writes a
batch as one gzip JSON Lines object per owner and day; two Glue tables (runs, audit
entries) with partition projection (no crawler) let Athena query it, in a workgroup of its
own whose results stay in the bucket; the api function lists an owner's day and signs links
to it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_athena as athena
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.domain import archive
from chronoq.domain import limits as lim
from chronoq.domain.runs import RunStatus
from constructs import Construct

from .functions import python_function
from .rules import acknowledge, grant_wildcards
from .storage import Storage
from .streams import runs_stream_source, stream_dead_letter

#: Construct id of the queue keeping the stream records the archiver failed on.
DEAD_LETTER_QUEUE_ID = "ArchiverDeadLetter"
#: S3's least number of days before an object may move to Standard-IA.
MIN_INFREQUENT_ACCESS_DAYS = 30
#: Why a grant on the archive names its objects with a wildcard.
OBJECTS_REASON = (
    "The archive's objects are named by owner, day and the versions they hold (one per owner"
    " and day per batch): the grant names the archive's prefix, not one object."
)
JSON_SERDE = "org.openx.data.jsonserde.JsonSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
#: The first day the projection knows (no run has a fire time before EARLIEST_YEAR).
FIRST_DAY = f"{lim.EARLIEST_YEAR}-01-01"


def check_lifecycle(infrequent_access_days: int, expiry_days: int) -> None:
    """Refuse a lifecycle S3 would refuse (or that deletes objects before moving them)."""
    if infrequent_access_days < 0 or expiry_days < 0:
        raise ValueError("archive_infrequent_access_days and archive_expiry_days are days: >= 0")
    if infrequent_access_days and infrequent_access_days < MIN_INFREQUENT_ACCESS_DAYS:
        raise ValueError(
            f"archive_infrequent_access_days must be 0 (never) or at least"
            f" {MIN_INFREQUENT_ACCESS_DAYS}, not {infrequent_access_days}"
        )
    if expiry_days and infrequent_access_days and expiry_days <= infrequent_access_days:
        raise ValueError(
            f"archive_expiry_days ({expiry_days}) must come after"
            f" archive_infrequent_access_days ({infrequent_access_days}), or be 0 (never)"
        )


def glue_name(stack_name: str) -> str:
    """The archive's Glue database: the stack's name, as Glue takes names."""
    return "".join(c if c.isalnum() else "_" for c in stack_name.lower()) + "_archive"


class Archive(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        storage: Storage,
        topic_statuses: Iterable[RunStatus],
        infrequent_access_days: int = r.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS,
        expiry_days: int = r.DEFAULT_ARCHIVE_EXPIRY_DAYS,
    ) -> None:
        super().__init__(scope, id)
        check_lifecycle(infrequent_access_days, expiry_days)
        stack = Stack.of(self)
        # History, like the runs table: kept on stack deletion.
        self.bucket = s3.Bucket(
            self,
            r.ARCHIVE_BUCKET_ID,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            lifecycle_rules=self._lifecycle(infrequent_access_days, expiry_days),
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "Server access logs would need a bucket of their own and a log object per request;"
            " the archive is written by the archiver and listed by the api function, both of"
            " which log what they do, and read by links those sign.",
        )
        #: The variables this construct provides to the functions that name them.
        self.environment = {r.ENV_ARCHIVE_BUCKET: self.bucket.bucket_name}
        self.function = python_function(
            self,
            "Function",
            r.ARCHIVER_FUNCTION,
            layer=layer,
            environment={**environment, **self.environment},
            no_dead_letters=(
                "The runs stream's event source mapping invokes it synchronously; records it"
                " still fails on after their retries go to the mapping's own dead-letter"
                " queue (below)."
            ),
            unscoped=(
                "Its event source mappings list the runs and audit tables' streams"
                " (dynamodb:ListStreams, which supports no resource-level permission)."
            ),
        )
        # Its one right of its own: writing objects under the archive's prefix.
        grant_wildcards(
            self.function,
            ["s3:PutObject"],
            [self.bucket.arn_for_objects(f"{r.ARCHIVE_PREFIX}/*")],
            OBJECTS_REASON,
        )
        # The runs stream's bulk reader (chronoq.aws.fanout).
        self.dead_letter = stream_dead_letter(self, DEAD_LETTER_QUEUE_ID)
        self.function.add_event_source(
            runs_stream_source(fanout.ARCHIVER, storage.runs, self.dead_letter, topic_statuses)
        )
        # The audit stream's only reader (its records failing to the same dead-letter queue).
        self.function.add_event_source(
            runs_stream_source(
                fanout.AUDIT_ARCHIVER, storage.audit, self.dead_letter, topic_statuses
            )
        )
        self.database_name = glue_name(stack.stack_name)
        self.database = glue.CfnDatabase(
            self,
            "Database",
            catalog_id=stack.account,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=self.database_name,
                description="chronoq: the archive of ended runs and audit entries"
                " (docs/api/archive.md)",
            ),
        )
        self.table = self._table(
            stack,
            "Table",
            r.ARCHIVE_TABLE,
            "Every version of every ended run (readers keep the highest version of each id)",
            "day=${day}/",
            archive.COLUMNS,
        )
        self.table.node.add_dependency(self.database)
        self.audit_table = self._table(
            stack,
            "AuditTable",
            r.ARCHIVE_AUDIT_TABLE,
            "Every audit entry of every job (one line each), by the day of its at",
            f"{archive.AUDIT}/day=${{day}}/",
            archive.AUDIT_COLUMNS,
        )
        self.audit_table.node.add_dependency(self.database)
        self.workgroup = athena.CfnWorkGroup(
            self,
            "WorkGroup",
            name=f"{stack.stack_name}-archive",
            description="chronoq: queries of the archive of ended runs",
            recursive_delete_option=True,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=self.bucket.s3_url_for_object(f"{r.ATHENA_RESULTS_PREFIX}/"),
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_S3"
                    ),
                ),
            ),
        )

    @staticmethod
    def _lifecycle(infrequent_access_days: int, expiry_days: int) -> list[s3.LifecycleRule]:
        archived = s3.LifecycleRule(
            id="archive",
            prefix=f"{r.ARCHIVE_PREFIX}/",
            transitions=(
                [
                    s3.Transition(
                        storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                        transition_after=Duration.days(infrequent_access_days),
                    )
                ]
                if infrequent_access_days
                else None
            ),
            expiration=Duration.days(expiry_days) if expiry_days else None,
        )
        results = s3.LifecycleRule(
            id="athena-results",
            prefix=f"{r.ATHENA_RESULTS_PREFIX}/",
            expiration=Duration.days(r.ATHENA_RESULTS_DAYS),
            abort_incomplete_multipart_upload_after=Duration.days(1),
        )
        return [archived, results] if infrequent_access_days or expiry_days else [results]

    def _table(
        self,
        stack: Stack,
        id: str,
        name: str,
        description: str,
        days: str,
        pairs: Iterable[tuple[str, str]],
    ) -> glue.CfnTable:
        """A table of the archive (the runs', one row per version; the audit entries', one
        row per entry), partitioned by owner and day with partition projection: a query
        names the owner's segment (``owner_key``, injected) and should name days (``day``):
        it reads those objects only (``days``: where an owner's days are, in its prefix),
        and no crawler is needed."""
        location = self.bucket.s3_url_for_object(f"{r.ARCHIVE_PREFIX}/")
        template = location + "owner=${owner_key}/" + days

        def columns(pairs: Iterable[tuple[str, str]]) -> list[glue.CfnTable.ColumnProperty]:
            return [glue.CfnTable.ColumnProperty(name=n, type=t) for n, t in pairs]

        return glue.CfnTable(
            self,
            id,
            catalog_id=stack.account,
            database_name=self.database_name,
            table_input=glue.CfnTable.TableInputProperty(
                name=name,
                description=description,
                table_type="EXTERNAL_TABLE",
                partition_keys=columns(archive.PARTITIONS),
                parameters={
                    "classification": "json",
                    "compressionType": "gzip",
                    "projection.enabled": "true",
                    "projection.owner_key.type": "injected",
                    "projection.day.type": "date",
                    "projection.day.format": "yyyy-MM-dd",
                    "projection.day.range": f"{FIRST_DAY},NOW+1DAYS",
                    "projection.day.interval": "1",
                    "projection.day.interval.unit": "DAYS",
                    "storage.location.template": template,
                },
                storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                    location=location,
                    input_format=TEXT_INPUT,
                    output_format=TEXT_OUTPUT,
                    compressed=True,
                    columns=columns(pairs),
                    serde_info=glue.CfnTable.SerdeInfoProperty(
                        serialization_library=JSON_SERDE,
                        parameters={"ignore.malformed.json": "false", "dots.in.keys": "false"},
                    ),
                ),
            ),
        )

    def grant_links(self, grantee: iam.IGrantable) -> None:
        """What listing an owner's day and signing links to its objects takes: ListBucket for
        prefixes under the archive's only, GetObject on the archive's objects (a presigned
        GET is made with the signer's rights)."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:ListBucket"],
            resource_arns=[self.bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{r.ARCHIVE_PREFIX}/*"]}},
        )
        grant_wildcards(
            grantee,
            ["s3:GetObject"],
            [self.bucket.arn_for_objects(f"{r.ARCHIVE_PREFIX}/*")],
            OBJECTS_REASON,
        )
