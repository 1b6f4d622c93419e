"""Notifications: the notifier function, fed by the runs table's stream (filtered to the runs
someone is to hear of), and what it tells owners through: an SNS topic (the runs whose final
status is in the deployment's topic_statuses), webhooks signed with a secret derived from one
Secrets Manager secret, and (when the deployment names a sender) SES e-mail."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
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
from .storage import Storage

SIGNING_SECRET_LENGTH = 64
#: Construct id of the queue keeping the stream records the notifier failed on.
DEAD_LETTER_QUEUE_ID = "NotifierDeadLetter"


def finished_runs(topic_statuses: Iterable[RunStatus]) -> list[Mapping[str, Any]]:
    """The stream filters: a run written with a status it ends in, or changed into one (later
    changes of an ended run, such as the notes of its notifications, stay out), when its
    status is one the topic hears of or its job asked to be notified (see aws.streams)."""
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
        topic_statuses: frozenset[RunStatus],
        email_sender: str = "",
    ) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(
            self, r.TOPIC_ID, display_name="chronoq finished runs", enforce_ssl=True
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
        )
        # whom to tell, and how (GetItem); a job deleted on completion once its last run has
        # ended: the job, its name's item (DeleteItem) and its owner's job count (UpdateItem)
        storage.jobs.grant(
            self.function, "dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem"
        )
        # Which channels a retried record already reached (GetItem), and how each one went
        # (Store.note_notification: UpdateItem).
        storage.runs.grant(self.function, "dynamodb:GetItem", "dynamodb:UpdateItem")
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
