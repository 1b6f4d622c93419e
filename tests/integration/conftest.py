from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from chronoq import compose
from chronoq import resources as r
from chronoq.aws import clients
from chronoq.domain import ids
from chronoq.domain.runs import Run, RunStatus
from chronoq.domain.time import utc_now
from chronoq.local.aws import LocalAWS, function_name
from chronoq.local.drivers import StreamPoller
from chronoq.settings import ApiSettings, WorkerSettings
from chronoq.usecases.ports import Clock

from tests.builders import Wiring, message_for, worker_event
from tests.support import Sink, api_event, http_sink, wait_for


class Harness:
    """moto with chronoq's resources, and the handlers invoked through the local Lambda
    runtime exactly as Step Functions and the drivers invoke them."""

    def __init__(self, aws: LocalAWS) -> None:
        self.aws = aws
        #: Every run id whose stream record reached the notifier through ``notify``.
        self.heard: list[str] = []
        # The runs table's stream, from now on, as the notifier's event source mapping reads it.
        self.stream = StreamPoller(
            aws.client("dynamodbstreams"),
            aws.runs_stream_arn,
            self._to_notifier,
            threading.Event(),
            aws.notifier_filter,  # as chronoq local and the CDK stack filter the stream
            r.NOTIFIER_BATCH_SIZE,
            r.NOTIFIER_MAX_RETRIES,
        )

        self._sqs_calls = self.record("sqs", "SendMessageBatch")

    def executions(self) -> list[dict[str, Any]]:
        """Every execution started, on either state machine, oldest first: the run it
        executes (from its input), its status and ARN."""
        sfn = self.aws.client("stepfunctions")
        found = []
        for machine in (self.aws.state_machine_arn, self.aws.express_state_machine_arn):
            for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine):
                for e in page["executions"]:
                    described = sfn.describe_execution(executionArn=e["executionArn"])
                    found.append(
                        {
                            "run_id": json.loads(described["input"])["run_id"],
                            "status": described["status"],
                            "arn": e["executionArn"],
                            "started": e["startDate"],
                        }
                    )
        return sorted(found, key=lambda e: e["started"])

    def execution_status(self, run_id: str) -> str:
        """The status of the run's (one) execution once it has ended."""

        def ended() -> str | None:
            (execution,) = [e for e in self.executions() if e["run_id"] == run_id]
            return None if execution["status"] == "RUNNING" else str(execution["status"])

        result: str = wait_for(ended)
        return result

    def record(self, service: str, operation: str) -> list[dict[str, Any]]:
        """The parameters of every ``operation`` call chronoq's ``service`` client makes from
        now on (a botocore hook on the client every function shares in this process)."""
        calls: list[dict[str, Any]] = []

        def keep(params: dict[str, Any], **_: Any) -> None:
            calls.append(dict(params))

        clients.client(service).meta.events.register(
            f"provide-client-params.{service}.{operation}", keep
        )
        return calls

    def bodies(self, priority: str = "normal") -> list[dict[str, Any]]:
        """Every message chronoq sent to a priority's queue, in order (delayed ones too)."""
        url = self.aws.queue_urls[priority]
        return [
            json.loads(entry["MessageBody"])
            for call in self._sqs_calls
            if call["QueueUrl"] == url
            for entry in call["Entries"]
        ]

    def wiring(self, clock: Clock = utc_now) -> Wiring:
        """Every use case over the AWS adapters of this deployment (as the api, dispatcher
        and worker functions build them), with ``clock``."""
        api = compose.api(self.aws.settings(ApiSettings))
        worker = compose.worker(self.aws.settings(WorkerSettings))
        return Wiring(
            store=api.jobs.store,
            queues=api.jobs.index.queues,
            executor=worker.executor,
            artifacts=api.runs.artifacts,
            clock=clock,
            sleep=time.sleep,
            shards=api.jobs.index.shards,
            output_buckets=api.jobs.output_buckets,
            tasks=_AnyRegisteredTask(),
        )

    def notify(self) -> None:
        """Feed the notifier every stream record written so far (that passes the filter)."""
        while self.stream.poll_once():
            pass

    def _to_notifier(self, event: dict[str, Any]) -> Any:
        self.heard.extend(rec["dynamodb"]["NewImage"]["run_id"]["S"] for rec in event["Records"])
        return self.invoke(r.NOTIFIER_FUNCTION, event)

    def invoke(self, function: r.Function, event: Any) -> Any:
        assert self.aws.runtime is not None
        return self.aws.runtime.invoke(function_name(function), event)

    def api(self, event: dict[str, Any]) -> tuple[int, Any]:
        answer = self.invoke(r.API_FUNCTION, event)
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None

    def create_job(self, target: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """POST a one-time job for tomorrow (no retries unless ``extra`` says); ``run`` runs
        it now."""
        at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
        body = {
            "name": "t",
            "schedule": {"type": "at", "at": at.isoformat()},
            "target": target,
            "retry": {"max_attempts": 1},
            **extra,
        }
        status, job = self.api(api_event("create_at_job", body=body))
        assert status == 201, job
        return dict(job)

    def deliver(self, run_id: str) -> None:
        """Hand a run's message to the worker, as the queue poller would."""
        run = self.wiring().store.get_run(ids.job_id_of_run(run_id), run_id)
        assert run is not None
        self.invoke(r.WORKER_FUNCTION, worker_event(message_for(run)))

    def run(self, job: dict[str, Any], timeout: float = 20) -> Run:
        """Trigger a run of the job, deliver it to the worker and wait for it to end."""
        service = self.wiring().runs
        status, triggered = self.api(
            api_event(
                "get_job", user=job["owner"], path=f"/jobs/{job['id']}/trigger", method="POST"
            )
        )
        assert status == 202, triggered
        run_id = triggered["id"]
        self.deliver(run_id)

        def ended() -> Run | None:
            found = service.get_run(job["owner"], run_id)
            active = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SCHEDULED)
            return None if found.status in active else found

        result: Run = wait_for(ended, timeout=timeout)
        return result

    def receive(self, priority: str = "normal") -> list[dict[str, Any]]:
        """Every message on a queue, delayed ones included (waits out their delay)."""
        sqs = self.aws.client("sqs")
        url = self.aws.queue_urls[priority]
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return list(answer.get("Messages", []))


class _AnyRegisteredTask(set[str]):
    """The task check the api uses: registered in chronoq.tasks."""

    def __contains__(self, name: object) -> bool:
        from chronoq import tasks

        return isinstance(name, str) and tasks.lookup(name) is not None


@pytest.fixture
def topic_statuses() -> str:
    """The final statuses the deployment's topic hears of (a test module may widen them by
    overriding this fixture)."""
    return ",".join(r.DEFAULT_TOPIC_STATUSES)


@pytest.fixture
def harness(topic_statuses: str) -> Iterator[Harness]:
    saved = dict(os.environ)
    aws = LocalAWS(shards=4, topic_statuses=topic_statuses).start()
    try:
        yield Harness(aws)
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s
