"""Notifications: the notifier function, fed by the runs table's stream (filtered to the runs
someone is to hear of), and what it tells owners through: an SNS topic (the runs whose final
status is in the deployment's topic_statuses), webhooks signed with a secret derived from one
Secrets Manager secret, and (when the deployment names a sender) SES e-mail."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from chronoq import resources as r
from chronoq.aws.streams import notifier_filters
from chronoq.domain.runs import RunStatus
from constructs import Construct

from .functions import python_function
from .queues import END_OF_THE_LINE, Queues
from .rules import acknowledge
from .storage import Storage, grant_index_query, grant_items

SIGNING_SECRET_LENGTH = 64
#: The AWS managed key of SNS.
SNS_MANAGED_KEY = "alias/aws/sns"
#: Construct id of the queue keeping the stream records the notifier failed on.
DEAD_LETTER_QUEUE_ID = "NotifierDeadLetter"


def finished_runs(topic_statuses: Iterable[RunStatus]) -> list[Mapping[str, Any]]:
    """The stream filters: a run written with a status it ends in, or changed into one (later
    changes of an ended run, such as the notes of its notifications, stay out), when its
    status is one the topic hears of or its job asked to be notified; and a run that held
    flow slots, once ended (see aws.streams)."""
    return [lambda_.FilterCriteria.filter(p) for p in notifier_filters(topic_statuses)]


class Notifications(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        storage: Storage,
        queues: Queues,
        topic_statuses: frozenset[RunStatus],
        email_sender: str = "",
    ) -> None:
        super().__init__(scope, id)
        # Encrypted at rest with SNS's AWS managed key (no key to pay for or to grant:
        # publishers and subscribers need no KMS rights of their own).
        self.topic = sns.Topic(
            self,
            r.TOPIC_ID,
            display_name="chronoq finished runs",
            enforce_ssl=True,
            master_key=kms.Alias.from_alias_name(self, "TopicKey", SNS_MANAGED_KEY),
        )
        # Owners' webhook secrets are derived from it: replacing it would invalidate every
        # one they configured, so it outlives the stack like the tables of record.
        self.signing_secret = secretsmanager.Secret(
            self,
            r.SIGNING_SECRET_ID,
            description="chronoq: the key each owner's webhook signing secret is derived from",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                exclude_punctuation=True, password_length=SIGNING_SECRET_LENGTH
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.signing_secret,
            "AwsSolutions-SMG4",
            "Owners' webhook signing secrets are derived from it: rotating it would break the"
            " verification every receiver has configured.",
        )
        #: The variables this construct provides to the functions that name them.
        self.environment = {
            r.ENV_TOPIC_ARN: self.topic.topic_arn,
            r.ENV_TOPIC_STATUSES: ",".join(sorted(topic_statuses)),
            r.ENV_SIGNING_SECRET_ARN: self.signing_secret.secret_arn,
            r.ENV_EMAIL_SENDER: email_sender,
        }
        self.function = python_function(
            self,
            "Function",
            r.NOTIFIER_FUNCTION,
            layer=layer,
            environment={**environment, **self.environment},
            no_dead_letters=(
                "The runs stream's event source mapping invokes it synchronously; records it"
                " still fails on after their retries go to the mapping's own dead-letter"
                " queue (below)."
            ),
            unscoped=(
                "Its event source mapping lists the runs table's streams"
                " (dynamodb:ListStreams, which supports no resource-level permission)."
            ),
        )
        # whom to tell, and how (GetItem); a job deleted on completion once its last run has
        # ended: the job, its name's item (DeleteItem) and its owner's job count (UpdateItem);
        # owners' usage items (GetItem, UpdateItem, in the transactions counting run ends and
        # ending backfills: usecases.progress)
        grant_items(
            self.function,
            storage.jobs,
            "dynamodb:GetItem",
            "dynamodb:DeleteItem",
            "dynamodb:UpdateItem",
        )
        # Which channels a retried record already reached (GetItem), and how each one went
        # (Store.note_notification: UpdateItem); backfills read (GetItem), their runs' ends
        # counted on them, each run marked counted (UpdateItem, in one transaction). A job
        # with expect: its silence ended by a success with its RECOVERED record (PutItem, in
        # one transaction with its expectation's item, above).
        grant_items(
            self.function,
            storage.runs,
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:PutItem",
        )
        # A success of a job with expect: its next deadline in the time index (batch write).
        grant_items(self.function, storage.schedule, "dynamodb:BatchWriteItem")
        # A run that held flow slots ends: its flows' items (GetItem, above), the runs parked
        # on them (Query of the runs table's waiting index), sent again (the run queues).
        grant_index_query(self.function, storage.runs, r.RUNS_WAITING_INDEX)
        queues.grant_send_messages(self.function)
        self.topic.grant_publish(self.function)
        self.grant_read_signing_secret(self.function)
        if email_sender:
            iam.Grant.add_to_principal(
                grantee=self.function,
                actions=["ses:SendEmail", "ses:SendRawEmail"],
                resource_arns=["*"],  # identities are checked by the sender condition instead
                conditions={"StringEquals": {"ses:FromAddress": email_sender}},
            )
        # Records still failing once their retries are spent are kept here (as pointers to
        # their stream position), not lost.
        self.dead_letter = sqs.Queue(
            self,
            DEAD_LETTER_QUEUE_ID,
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(
            self.dead_letter,
            "AwsSolutions-SQS3",
            "It is itself a dead-letter queue: the on-failure destination of the runs stream's"
            " event source mapping (not a redrive target, which is what the rule looks for).",
        )
        acknowledge(self.dead_letter, "Serverless-SQSRedrivePolicy", END_OF_THE_LINE)
        self.function.add_event_source(
            sources.DynamoEventSource(
                storage.runs,
                starting_position=lambda_.StartingPosition.LATEST,
                batch_size=r.NOTIFIER_BATCH_SIZE,
                retry_attempts=r.NOTIFIER_MAX_RETRIES,
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
                filters=finished_runs(topic_statuses),
                on_failure=sources.SqsDlq(self.dead_letter),
            )
        )

    def grant_read_signing_secret(self, grantee: iam.IGrantable) -> None:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["secretsmanager:GetSecretValue"],
            resource_arns=[self.signing_secret.secret_arn],
        )
