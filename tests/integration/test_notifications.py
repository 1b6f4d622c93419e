"""Notifications of ended runs, fed by the runs table's stream (filtered as the CDK stack
filters it): the SNS topic, for the deployment's topic statuses, with filterable attributes;
signed webhooks verified by a real receiving server and e-mail through SES, as each job asks;
and nothing at all, not even a notifier invocation, for a run nobody is to hear of."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from chronoq import resources as r
from chronoq.domain import ids
from chronoq.domain.notifications import verify
from chronoq.domain.runs import Run, RunMessage, RunStatus

from tests.builders import job_spec, worker_event
from tests.integration.conftest import Harness
from tests.support import Sink, api_event, load_event, wait_for


def python_target(task: str, **args: Any) -> dict[str, Any]:
    return {"type": "python", "task": f"chronoq.tasks:{task}", "args": args}


def subscribe(harness: Harness, policy: dict[str, Any] | None = None) -> str:
    """An SQS queue subscribed to the deployment's topic (with a filter policy)."""
    sqs = harness.aws.client("sqs")
    url = sqs.create_queue(QueueName="ops")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    attributes = {"FilterPolicy": json.dumps(policy)} if policy else {}
    harness.aws.client("sns").subscribe(
        TopicArn=harness.aws.env[r.ENV_TOPIC_ARN],
        Protocol="sqs",
        Endpoint=arn,
        Attributes=attributes,
    )
    return str(url)


def received(harness: Harness, url: str) -> list[dict[str, Any]]:
    answer = harness.aws.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    return [json.loads(m["Body"]) for m in answer.get("Messages", [])]


def run_item(harness: Harness, run: Run) -> dict[str, Any]:
    """The run's item as DynamoDB keeps it."""
    item: dict[str, Any] = harness.aws.client("dynamodb").get_item(
        TableName=harness.aws.env[r.ENV_RUNS_TABLE],
        Key={"job_id": {"S": run.job_id}, "run_id": {"S": run.id}},
    )["Item"]
    return item


def test_given_the_default_topic_statuses_when_runs_fail_and_succeed_then_the_topic_gets_the_failure_with_filterable_attributes_and_the_success_reaches_nobody(
    harness: Harness,
) -> None:
    url = subscribe(harness, policy={"owner": ["alice"]})
    failed = harness.run(harness.create_job(python_target("fail")))
    succeeded = harness.run(harness.create_job(python_target("echo")))

    harness.notify()

    (envelope,) = received(harness, url)
    attributes = {k: v["Value"] for k, v in envelope["MessageAttributes"].items()}
    assert attributes == {"job_id": failed.job_id, "owner": "alice", "status": "FAILED"}
    document = json.loads(envelope["Message"])
    assert (document["run_id"], document["status"]) == (failed.id, "FAILED")
    assert document["error"].startswith("RuntimeError")
    # the success reached the notifier only to give back its owner's slot (a manual run:
    # one of its owner's runs asked for under way): its job has no notify block, nobody is told
    assert harness.heard == [failed.id, succeeded.id]
    assert run_item(harness, succeeded).get("notify") in (None, {"BOOL": False})
    assert harness.wiring().runs.get_run("alice", succeeded.id).notifications == {}


def test_given_a_deployment_that_widens_the_topic_to_successes_when_a_run_succeeds_then_the_topic_gets_it(
    harness: Harness,
) -> None:
    harness.aws.configure(r.ENV_TOPIC_STATUSES, "SUCCEEDED,FAILED,TIMED_OUT,MISSED")
    url = subscribe(harness)
    succeeded = harness.run(harness.create_job(python_target("echo")))

    harness.notify()

    (envelope,) = received(harness, url)
    assert json.loads(envelope["Message"])["run_id"] == succeeded.id
    assert envelope["MessageAttributes"]["status"]["Value"] == "SUCCEEDED"
    assert harness.heard == [succeeded.id]


def test_given_a_job_asking_for_successes_when_its_run_succeeds_then_its_webhook_gets_it_and_the_topic_does_not(
    harness: Harness, sink: Sink
) -> None:
    url = subscribe(harness)
    job = harness.create_job(
        python_target("echo"), notify={"on": ["SUCCEEDED"], "webhook": sink.url + "/ok"}
    )

    run = harness.run(job)
    harness.notify()

    assert run.status is RunStatus.SUCCEEDED
    assert run_item(harness, run)["notify"] == {"BOOL": True}  # how the stream let it through
    assert harness.heard == [run.id]
    (hit,) = sink.hits_to("/ok")
    assert json.loads(hit.body)["status"] == "SUCCEEDED"
    assert received(harness, url) == []
    outcome = harness.api(api_event("get_run", path=f"/runs/{run.id}"))[1]
    assert outcome["notifications"] == {"webhook": "delivered (HTTP 200, attempt 1)"}
    assert "notify" not in outcome  # bookkeeping, not part of the API


def test_given_a_job_with_a_notify_block_when_a_scheduled_run_of_it_succeeds_then_the_state_machine_marks_the_record_notify_and_its_webhook_gets_it(
    harness: Harness, sink: Sink
) -> None:
    url = subscribe(harness)
    service = harness.wiring()
    at = (harness.now() + timedelta(seconds=2)).replace(microsecond=0)
    job = service.jobs.create_job(
        "alice",
        job_spec(
            {"type": "at", "at": at.isoformat()},
            python_target("echo"),
            notify={"on": ["SUCCEEDED"], "webhook": sink.url + "/ok"},
        ),
    )
    run_id = ids.run_id(job.id, at)
    message = RunMessage(job_id=job.id, run_id=run_id, scheduled_at=at, queued_at=at)

    # the run has no record until it starts: its execution's first state writes it, marked
    # notify from the execution's input
    harness.invoke(r.WORKER_FUNCTION, worker_event(message))

    def succeeded() -> bool:
        kept = service.store.get_run(job.id, run_id)
        return kept is not None and kept.status is RunStatus.SUCCEEDED

    wait_for(succeeded)
    harness.notify()

    run = harness.wiring().runs.get_run("alice", run_id)
    assert run_item(harness, run)["notify"] == {"BOOL": True}
    assert harness.heard == [run_id]
    (hit,) = sink.hits_to("/ok")
    assert json.loads(hit.body)["run_id"] == run_id
    assert received(harness, url) == []  # (the topic hears of failures only)


def test_given_a_webhook_when_a_run_fails_then_it_receives_one_request_signed_with_the_owners_secret(
    harness: Harness, sink: Sink
) -> None:
    job = harness.create_job(
        python_target("fail"), notify={"on": ["FAILED"], "webhook": sink.url + "/chronoq"}
    )
    run = harness.run(job)

    harness.notify()
    harness.notify()  # nothing more: the run ended once

    (hit,) = sink.hits_to("/chronoq")
    status, secret = harness.api(api_event("get_run", path="/notifications/secret"))
    assert status == 200
    assert verify(secret["secret"], hit.headers[r.SIGNATURE_HEADER], hit.body, now=time.time())
    assert not verify(
        secret["secret"], hit.headers[r.SIGNATURE_HEADER], hit.body + b" ", time.time()
    )
    _, bobs = harness.api(api_event("get_run", path="/notifications/secret", user="bob"))
    assert not verify(bobs["secret"], hit.headers[r.SIGNATURE_HEADER], hit.body, time.time())
    assert hit.headers[r.DELIVERY_HEADER] == f"{run.id}:FAILED"
    assert json.loads(hit.body)["job_id"] == job["id"]
    outcome = harness.api(api_event("get_run", path=f"/runs/{run.id}"))[1]["notifications"]
    assert outcome["webhook"] == "delivered (HTTP 200, attempt 1)"


def test_given_a_status_the_job_did_not_ask_for_when_the_run_ends_then_no_webhook_is_called(
    harness: Harness, sink: Sink
) -> None:
    url = subscribe(harness)
    job = harness.create_job(python_target("echo"), notify={"webhook": sink.url})  # default on

    run = harness.run(job)
    harness.notify()

    assert run.status is RunStatus.SUCCEEDED
    assert harness.heard == [run.id]  # marked notify: the notifier decides, and tells nobody
    assert sink.hits == []
    assert received(harness, url) == []
    assert harness.wiring().runs.get_run("alice", run.id).notifications == {}


def test_given_an_email_when_a_run_times_out_then_ses_sends_it(harness: Harness) -> None:
    emails = harness.record("ses", "SendEmail")
    job = harness.create_job(
        python_target("sleep", seconds=5),
        timeout_seconds=1,
        notify={"on": ["TIMED_OUT"], "email": "oncall@example.com"},
    )
    run = harness.run(job)

    harness.notify()

    assert run.status is RunStatus.TIMED_OUT
    (sent,) = emails
    assert sent["Destination"]["ToAddresses"] == ["oncall@example.com"]
    assert sent["Message"]["Subject"]["Data"] == f"[chronoq] {job['name']}: run TIMED_OUT"
    assert f"run_id: {run.id}" in sent["Message"]["Body"]["Text"]["Data"]
    statistics = harness.aws.client("ses").get_send_statistics()["SendDataPoints"]
    assert sum(p["DeliveryAttempts"] for p in statistics) == 1  # SES took it


def test_given_the_sample_stream_event_when_the_notifier_gets_it_then_it_publishes_the_failure(
    harness: Harness,
) -> None:
    url = subscribe(harness)

    answer = harness.invoke(r.NOTIFIER_FUNCTION, load_event("notifier/run_finished"))

    assert answer == {"batchItemFailures": []}
    (envelope,) = received(harness, url)
    document = json.loads(envelope["Message"])
    assert document["status"] == "FAILED"
    assert document["error"] == (
        "TargetError: POST https://example.com/hooks/report answered HTTP 503"
    )
    assert document["job_name"] is None  # the job is not (or no longer) stored


def test_given_a_stream_batch_delivered_again_when_notified_then_nobody_is_told_twice(
    harness: Harness, sink: Sink
) -> None:
    url = subscribe(harness)
    job = harness.create_job(python_target("fail"), notify={"on": ["FAILED"], "webhook": sink.url})
    run = harness.run(job)
    item = harness.aws.client("dynamodb").get_item(
        TableName=harness.aws.env[r.ENV_RUNS_TABLE],
        Key={"job_id": {"S": run.job_id}, "run_id": {"S": run.id}},
    )["Item"]
    event = load_event("notifier/run_finished")
    event["Records"][0]["dynamodb"]["NewImage"] = item

    harness.invoke(r.NOTIFIER_FUNCTION, event)
    harness.invoke(r.NOTIFIER_FUNCTION, event)  # the event source mapping retries the batch

    assert len(sink.hits) == 1
    assert len(received(harness, url)) == 1
