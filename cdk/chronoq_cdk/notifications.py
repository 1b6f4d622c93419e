"""Notifications: the notifier function, fed by the runs table's stream (filtered to the runs
someone is to hear of), and what it tells owners through: an SNS topic (the runs whose final
status is in the deployment's topic_statuses), webhooks signed with a secret derived from one
Secrets Manager secret, and (when the deployment names a sender) SES e-mail."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from chronoq import resources as r
from chronoq.aws import fanout
from chronoq.domain.runs import RunStatus
from constructs import Construct

from .functions import python_function
from .queues import Queues
from .rules import acknowledge
from .storage import Storage, grant_index_query, grant_items
from .streams import runs_stream_source, stream_dead_letter

SIGNING_SECRET_LENGTH = 64
#: The AWS managed key of SNS.
SNS_MANAGED_KEY = "alias/aws/sns"
#: Construct id of the queue keeping the stream records the notifier failed on.
DEAD_LETTER_QUEUE_ID = "NotifierDeadLetter"


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
        # ending backfills: usecases.progress); an upstream run's end: its followers (GetItem)
        # and their fan-in items (UpdateItem: usecases.after)
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
        # one transaction with its expectation's item, above). An after job's run made by its
        # upstreams' ends (PutItem, on condition that it is new).
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
        # The runs stream's prompt reader (chronoq.aws.fanout); records still failing once
        # their retries are spent are kept in its dead-letter queue, not lost.
        self.dead_letter = stream_dead_letter(self, DEAD_LETTER_QUEUE_ID)
        self.function.add_event_source(
            runs_stream_source(fanout.NOTIFIER, storage.runs, self.dead_letter, topic_statuses)
        )

    def grant_read_signing_secret(self, grantee: iam.IGrantable) -> None:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["secretsmanager:GetSecretValue"],
            resource_arns=[self.signing_secret.secret_arn],
        )
