"""The run queues, one per priority, and their shared dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from chronoq import resources as r
from constructs import Construct

from .rules import acknowledge

#: Why a dead-letter queue has no dead-letter queue of its own.
END_OF_THE_LINE = (
    "A dead-letter queue is where failed messages end: it has no redrive of its own (a"
    " message in it raises an alarm)."
)


class Queues(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.dead_letter = sqs.Queue(
            self,
            r.DEAD_LETTER_QUEUE_ID,
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(self.dead_letter, "Serverless-SQSRedrivePolicy", END_OF_THE_LINE)
        self.by_priority = {
            spec.priority: sqs.Queue(
                self,
                spec.id,
                visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
                dead_letter_queue=sqs.DeadLetterQueue(
                    queue=self.dead_letter, max_receive_count=spec.max_receive_count
                ),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
            )
            for spec in r.QUEUES
        }

    def grant_send_messages(self, grantee: iam.IGrantable) -> None:
        for queue in self.by_priority.values():
            queue.grant_send_messages(grantee)
