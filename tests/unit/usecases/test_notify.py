"""The notifier on the fake store, with stub SNS, SES and HTTP pool: the topic for the
deployment's topic statuses (default FAILED, TIMED_OUT, MISSED), the job's webhook and e-mail
when its ``notify`` asks, each channel at most once per run; a run nobody is to hear of is let
go without a read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import urllib3
from chronoq import resources as r
from chronoq.domain.jobs import Job
from chronoq.domain.notifications import signing_secret, topic_statuses, verify
from chronoq.domain.runs import Run, RunStatus
from chronoq.execution.egress import Egress
from chronoq.usecases.notify import Notifier
from chronoq.usecases.secrets import Resolver

from tests.builders import OWNER, Fakes
from tests.unit.usecases.helpers import due_job, finish, message, started_run, stored

TOPIC = "arn:aws:sns:us-east-1:123456789012:chronoq-runs"
SENDER = "chronoq@example.com"
WEBHOOK = "https://hooks.example.com/chronoq/T0KEN"
NOW = 1_800_000_000.0
#: The topic statuses of a deployment that left the setting alone.
DEFAULT = topic_statuses(r.DEFAULT_TOPIC_STATUSES)


@dataclass
class StubSns:
    published: list[dict[str, Any]] = field(default_factory=list)

    def publish(self, **request: Any) -> dict[str, str]:
        self.published.append(request)
        return {"MessageId": f"sns-{len(self.published)}"}


class MessageRejectedError(Exception):
    pass


class SesExceptions:
    MessageRejected = MessageRejectedError


@dataclass
class StubSes:
    sent: list[dict[str, Any]] = field(default_factory=list)
    reject: bool = False
    exceptions: type[SesExceptions] = SesExceptions

    def send_email(self, **request: Any) -> dict[str, str]:
        if self.reject:
            raise MessageRejectedError("Email address is not verified.")
        self.sent.append(request)
        return {"MessageId": f"ses-{len(self.sent)}"}


@dataclass
class Answer:
    status: int


@dataclass
class Request:
    method: str
    url: str
    body: bytes
    headers: dict[str, str]


@dataclass
class StubHttp:
    """urllib3's pool manager: answers with ``statuses`` in turn (200 when they run out);
    ``None`` in there is a network error."""

    statuses: list[int | None] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def request(
        self, method: str, url: str, *, body: bytes, headers: dict[str, str], **_: Any
    ) -> Answer:
        self.requests.append(Request(method, url, body, headers))
        status = self.statuses.pop(0) if self.statuses else 200
        if status is None:
            raise urllib3.exceptions.ProtocolError("connection reset by peer")
        return Answer(status)


@dataclass
class Channels:
    sns: StubSns = field(default_factory=StubSns)
    ses: StubSes = field(default_factory=StubSes)
    http: StubHttp = field(default_factory=StubHttp)
    slept: list[float] = field(default_factory=list)


@pytest.fixture
def channels() -> Channels:
    return Channels()


@pytest.fixture
def reads(fakes: Fakes, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every read of the store from now on: ``job <id>``, ``run <id>``."""
    seen: list[str] = []
    get_job, get_run = fakes.store.get_job, fakes.store.get_run

    def job(job_id: str) -> Job | None:
        seen.append(f"job {job_id}")
        return get_job(job_id)

    def run(job_id: str, run_id: str) -> Run | None:
        seen.append(f"run {run_id}")
        return get_run(job_id, run_id)

    monkeypatch.setattr(fakes.store, "get_job", job)
    monkeypatch.setattr(fakes.store, "get_run", run)
    return seen


def notifier(
    fakes: Fakes,
    channels: Channels,
    email_sender: str = SENDER,
    statuses: frozenset[RunStatus] = DEFAULT,
) -> Notifier:
    return Notifier(
        store=fakes.store,
        sns=channels.sns,
        ses=channels.ses,
        topic_arn=TOPIC,
        topic_statuses=statuses,
        email_sender=email_sender,
        master_secret=lambda: "master",
        sleep=channels.slept.append,
        clock=lambda: NOW,
        egress=Egress(_http=channels.http),  # type: ignore[arg-type]
        secrets=Resolver(fakes.store, fakes.secret_values),
    )


def ended_run(
    fakes: Fakes, status: RunStatus, notify: dict[str, Any] | None = None, **changes: Any
) -> tuple[Job, Run]:
    """A job (with ``notify``) whose run just ended so: the run as the runs stream shows it.
    A MISSED run never started: the worker recorded it so, too late to start it."""
    extra: dict[str, Any] = {"notify": notify} if notify else {}
    if status is RunStatus.MISSED:
        job, run = due_job(fakes, **extra)
        fakes.clock.set(run.scheduled_at + timedelta(seconds=job.start_deadline_seconds + 1))
        assert fakes.starter.start_run(message(fakes, run)) == "missed"
    else:
        job, run = started_run(fakes, **extra)
        finish(fakes, run, status, **changes)
    ended = stored(fakes, run)
    assert ended.status is status
    return job, ended


# --- the topic ------------------------------------------------------------------------------


def test_given_a_run_that_ends_when_notified_then_the_topic_gets_it_with_filterable_attributes(
    fakes: Fakes, channels: Channels
) -> None:
    job, run = ended_run(fakes, RunStatus.FAILED, error="TargetError: answered HTTP 503")

    outcomes = notifier(fakes, channels).run_finished(run)

    (published,) = channels.sns.published
    assert published["TopicArn"] == TOPIC
    assert {k: v["StringValue"] for k, v in published["MessageAttributes"].items()} == {
        "job_id": job.id,
        "owner": OWNER,
        "status": "FAILED",
    }
    assert {v["DataType"] for v in published["MessageAttributes"].values()} == {"String"}
    document = json.loads(published["Message"])
    assert (document["run_id"], document["status"], document["job_name"]) == (
        run.id,
        "FAILED",
        job.name,
    )
    assert document["error"] == "TargetError: answered HTTP 503"
    assert outcomes == {"sns": "published sns-1"}
    assert stored(fakes, run).notifications == outcomes


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.MISSED])
def test_given_the_default_topic_statuses_when_a_run_ends_so_then_the_topic_gets_it(
    fakes: Fakes, channels: Channels, status: RunStatus
) -> None:
    _, run = ended_run(fakes, status)

    outcomes = notifier(fakes, channels).run_finished(run)

    assert [json.loads(p["Message"])["status"] for p in channels.sns.published] == [status.value]
    assert outcomes == {"sns": "published sns-1"}


@pytest.mark.parametrize(
    "status", [RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.CANCELLED], ids=str
)
def test_given_a_job_that_asks_for_nothing_when_its_run_ends_with_a_status_the_topic_does_not_hear_of_then_nobody_is_told_and_nothing_is_read(
    fakes: Fakes, channels: Channels, reads: list[str], status: RunStatus
) -> None:
    _, run = ended_run(fakes, status)
    assert not run.notify
    reads.clear()

    outcomes = notifier(fakes, channels).run_finished(run)

    assert outcomes == {}
    assert channels.sns.published == []
    assert reads == []  # decided from the stream record alone
    assert stored(fakes, run).notifications == {}


def test_given_a_deployment_whose_topic_hears_of_every_final_status_when_a_run_succeeds_then_the_topic_gets_it(
    fakes: Fakes, channels: Channels
) -> None:
    every = topic_statuses("SUCCEEDED,FAILED,TIMED_OUT,SKIPPED,MISSED,CANCELLED")
    _, run = ended_run(fakes, RunStatus.SUCCEEDED)

    outcomes = notifier(fakes, channels, statuses=every).run_finished(run)

    assert [json.loads(p["Message"])["status"] for p in channels.sns.published] == ["SUCCEEDED"]
    assert outcomes == {"sns": "published sns-1"}


def test_given_a_topic_that_does_not_hear_of_failures_when_a_run_fails_then_only_the_jobs_webhook_gets_it(
    fakes: Fakes, channels: Channels
) -> None:
    _, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})

    outcomes = notifier(fakes, channels, statuses=frozenset({RunStatus.SUCCEEDED})).run_finished(
        run
    )

    assert channels.sns.published == []
    assert len(channels.http.requests) == 1
    assert outcomes == {"webhook": "delivered (HTTP 200, attempt 1)"}


def test_given_a_run_whose_job_is_gone_when_notified_then_the_topic_gets_it_without_a_job_name(
    fakes: Fakes, channels: Channels
) -> None:
    job, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})
    fakes.jobs.delete_job(OWNER, job.id)

    outcomes = notifier(fakes, channels).run_finished(run)

    (published,) = channels.sns.published
    assert json.loads(published["Message"])["job_name"] is None
    assert outcomes == {"sns": "published sns-1"}
    assert channels.http.requests == []  # its notify went with it


# --- webhooks -------------------------------------------------------------------------------


def test_given_a_webhook_when_a_run_fails_then_it_receives_one_request_signed_with_the_owners_secret(
    fakes: Fakes, channels: Channels
) -> None:
    job, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})

    outcomes = notifier(fakes, channels).run_finished(run)

    (hit,) = channels.http.requests
    assert (hit.method, hit.url) == ("POST", WEBHOOK)
    signature = hit.headers[r.SIGNATURE_HEADER]
    assert verify(signing_secret("master", OWNER), signature, hit.body, now=NOW)
    assert not verify(signing_secret("master", OWNER), signature, hit.body + b" ", now=NOW)
    assert not verify(signing_secret("master", "bob"), signature, hit.body, now=NOW)
    assert hit.headers[r.DELIVERY_HEADER] == f"{run.id}:FAILED"
    assert json.loads(hit.body)["job_id"] == job.id
    assert json.loads(hit.body) == json.loads(channels.sns.published[0]["Message"])
    assert outcomes["webhook"] == "delivered (HTTP 200, attempt 1)"
    assert stored(fakes, run).notifications["webhook"] == "delivered (HTTP 200, attempt 1)"


def test_given_a_failing_webhook_when_notified_then_it_is_retried_with_doubling_pauses_until_it_answers(
    fakes: Fakes, channels: Channels
) -> None:
    channels.http.statuses = [503, None, 429]
    _, run = ended_run(fakes, RunStatus.SUCCEEDED, notify={"on": ["SUCCEEDED"], "webhook": WEBHOOK})

    outcomes = notifier(fakes, channels).run_finished(run)

    assert len(channels.http.requests) == 4
    assert len({h.body for h in channels.http.requests}) == 1
    first = r.WEBHOOK_FIRST_BACKOFF_SECONDS
    assert channels.slept == [first, 2 * first, 4 * first]
    assert outcomes["webhook"] == "delivered (HTTP 200, attempt 4)"


def test_given_a_webhook_that_never_answers_when_notified_then_it_gives_up_after_the_last_attempt(
    fakes: Fakes, channels: Channels
) -> None:
    channels.http.statuses = [None] * r.WEBHOOK_ATTEMPTS
    _, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})

    outcomes = notifier(fakes, channels).run_finished(run)

    assert len(channels.http.requests) == r.WEBHOOK_ATTEMPTS
    assert len(channels.slept) == r.WEBHOOK_ATTEMPTS - 1
    assert outcomes["webhook"] == (
        f"failed (connection reset by peer, attempt {r.WEBHOOK_ATTEMPTS})"
    )
    assert stored(fakes, run).notifications["webhook"] == outcomes["webhook"]


@pytest.mark.parametrize("status", [400, 404, 410, 302])
def test_given_a_webhook_answering_a_client_error_when_notified_then_it_is_not_retried(
    fakes: Fakes, channels: Channels, status: int
) -> None:
    channels.http.statuses = [status]
    _, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})

    outcomes = notifier(fakes, channels).run_finished(run)

    assert len(channels.http.requests) == 1
    assert channels.slept == []
    assert outcomes["webhook"] == f"failed (HTTP {status}, attempt 1)"


def test_given_a_job_asking_for_success_when_its_run_succeeds_then_its_webhook_gets_it_and_the_topic_does_not(
    fakes: Fakes, channels: Channels
) -> None:
    job, run = ended_run(
        fakes, RunStatus.SUCCEEDED, notify={"on": ["SUCCEEDED"], "webhook": WEBHOOK}
    )
    assert run.notify  # marked when it was planned: the stream lets its end through

    outcomes = notifier(fakes, channels).run_finished(run)

    (hit,) = channels.http.requests
    assert json.loads(hit.body)["status"] == "SUCCEEDED"
    assert json.loads(hit.body)["job_id"] == job.id
    assert channels.sns.published == []  # SUCCEEDED is not a topic status by default
    assert outcomes == {"webhook": "delivered (HTTP 200, attempt 1)"}
    assert stored(fakes, run).notifications == outcomes


def test_given_a_status_the_job_did_not_ask_for_when_the_run_ends_then_no_webhook_is_called(
    fakes: Fakes, channels: Channels, reads: list[str]
) -> None:
    _, run = ended_run(fakes, RunStatus.SUCCEEDED, notify={"webhook": WEBHOOK})  # default on
    reads.clear()

    outcomes = notifier(fakes, channels).run_finished(run)

    assert channels.http.requests == []
    assert channels.sns.published == []
    assert outcomes == {}
    assert reads == [f"job {run.job_id}"]  # whom its job wants to tell; the run is not read
    assert stored(fakes, run).notifications == {}


# --- e-mail ---------------------------------------------------------------------------------


def test_given_an_email_when_a_run_times_out_then_ses_sends_it(
    fakes: Fakes, channels: Channels
) -> None:
    job, run = ended_run(
        fakes, RunStatus.TIMED_OUT, notify={"on": ["TIMED_OUT"], "email": "oncall@example.com"}
    )

    outcomes = notifier(fakes, channels).run_finished(run)

    (sent,) = channels.ses.sent
    assert sent["Source"] == SENDER
    assert sent["Destination"] == {"ToAddresses": ["oncall@example.com"]}
    assert sent["Message"]["Subject"]["Data"] == f"[chronoq] {job.name}: run TIMED_OUT"
    assert f"run_id: {run.id}" in sent["Message"]["Body"]["Text"]["Data"]
    assert outcomes == {"sns": "published sns-1", "email": "sent ses-1"}


def test_given_no_sender_configured_when_an_email_is_asked_for_then_it_is_skipped(
    fakes: Fakes, channels: Channels
) -> None:
    _, run = ended_run(fakes, RunStatus.FAILED, notify={"email": "oncall@example.com"})

    outcomes = notifier(fakes, channels, email_sender="").run_finished(run)

    assert channels.ses.sent == []
    assert outcomes["email"] == "skipped (no sender configured)"


def test_given_ses_rejecting_the_message_when_an_email_is_sent_then_the_failure_is_noted(
    fakes: Fakes, channels: Channels
) -> None:
    channels.ses.reject = True
    _, run = ended_run(fakes, RunStatus.MISSED, notify={"email": "oncall@example.com"})

    outcomes = notifier(fakes, channels).run_finished(run)

    assert outcomes["email"] == "failed (Email address is not verified.)"
    assert stored(fakes, run).notifications["email"] == outcomes["email"]


# --- at most once ---------------------------------------------------------------------------


def test_given_a_stream_batch_delivered_again_when_notified_then_nobody_is_told_twice(
    fakes: Fakes, channels: Channels
) -> None:
    _, run = ended_run(
        fakes,
        RunStatus.FAILED,
        notify={"on": ["FAILED"], "webhook": WEBHOOK, "email": "oncall@example.com"},
    )

    first = notifier(fakes, channels).run_finished(run)
    again = notifier(fakes, channels).run_finished(run)  # the same stream record, retried

    assert again == first
    assert len(channels.sns.published) == 1
    assert len(channels.http.requests) == 1
    assert len(channels.ses.sent) == 1


def test_given_a_channel_already_noted_on_the_run_when_notified_again_then_only_the_others_are_tried(
    fakes: Fakes, channels: Channels
) -> None:
    _, run = ended_run(fakes, RunStatus.FAILED, notify={"on": ["FAILED"], "webhook": WEBHOOK})
    # an earlier attempt published, then failed before the webhook was tried
    fakes.store.note_notification(run.job_id, run.id, "sns", "published sns-0")

    outcomes = notifier(fakes, channels).run_finished(run)

    assert channels.sns.published == []
    assert len(channels.http.requests) == 1
    assert outcomes == {
        "sns": "published sns-0",
        "webhook": "delivered (HTTP 200, attempt 1)",
    }
    assert stored(fakes, run).notifications == outcomes


# --- a webhook's own headers ---------------------------------------------------------------------


def test_given_a_webhook_with_headers_naming_a_secret_when_notified_then_they_are_sent_resolved_beside_chronoqs_own(
    fakes: Fakes, channels: Channels
) -> None:
    fakes.secrets.put(OWNER, "hook-key", "hk-0123456789")
    notify = {
        "on": ["FAILED"],
        "webhook": WEBHOOK,
        "webhook_headers": {"Authorization": "Bearer {{ secret.hook-key }}", "X-Team": "ops"},
    }
    _job, run = ended_run(fakes, RunStatus.FAILED, notify=notify)

    outcomes = notifier(fakes, channels).run_finished(run)

    (hit,) = channels.http.requests
    assert hit.headers["Authorization"] == "Bearer hk-0123456789"
    assert hit.headers["X-Team"] == "ops"
    assert hit.headers["Content-Type"] == "application/json"
    assert verify(
        signing_secret("master", OWNER), hit.headers[r.SIGNATURE_HEADER], hit.body, now=NOW
    )
    assert outcomes["webhook"] == "delivered (HTTP 200, attempt 1)"
    assert "hk-0123456789" not in repr(stored(fakes, run))


def test_given_a_webhook_whose_secret_is_gone_when_notified_then_nothing_is_sent_and_the_outcome_names_it(
    fakes: Fakes, channels: Channels
) -> None:
    fakes.secrets.put(OWNER, "hook-key", "hk-0123456789")
    notify = {
        "on": ["FAILED"],
        "webhook": WEBHOOK,
        "webhook_headers": {"X-Key": {"secret": "hook-key"}},
    }
    job, run = ended_run(fakes, RunStatus.FAILED, notify=notify)
    fakes.store.unuse_secrets(OWNER, job.id, ["hook-key"])
    fakes.secrets.delete(OWNER, "hook-key")

    outcomes = notifier(fakes, channels).run_finished(run)

    assert channels.http.requests == []
    assert outcomes["webhook"] == "not sent: secret 'hook-key': it no longer exists"
    assert stored(fakes, run).notifications["webhook"] == outcomes["webhook"]
