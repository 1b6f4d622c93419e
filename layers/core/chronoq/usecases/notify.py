"""Telling owners about finished runs: the deployment's SNS topic when the run's final status
is one it hears of (``topic_statuses``), the job's webhook and e-mail when its ``notify``
asks. How each delivery went is noted on the run.

And about silent jobs (chronoq.domain.silence): a silence noted (SILENT) or ended by a success
(RECOVERED) goes to the topic whatever ``topic_statuses`` says (those name run statuses; a job
asks to hear of silence by setting ``expect``), and to the job's webhook and e-mail when its
``notify`` has them, whatever its ``notify.on``. How each went is noted on the silence's
record, each channel once, as for runs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import urllib3

from chronoq import resources as r
from chronoq.domain import notifications as notify
from chronoq.domain import secrets
from chronoq.domain.jobs import Job, JobState, OnComplete
from chronoq.domain.runs import Run, RunStatus, Trigger
from chronoq.domain.secrets import SecretUnavailable
from chronoq.domain.silence import SilenceEvent
from chronoq.domain.targets import has_controls
from chronoq.execution.egress import BlockedTarget, Egress
from chronoq.usecases.jobs import JobRemovalStore, remove_job
from chronoq.usecases.ports import RunStore
from chronoq.usecases.secrets import Resolver

logger = logging.getLogger(__name__)
_SECOND = timedelta(seconds=1)


class NotifierStore(JobRemovalStore, RunStore, Protocol):
    """What the notifier reads and writes (a job whose last run ended is removed)."""


@dataclass
class Notifier:
    store: NotifierStore
    sns: Any
    ses: Any
    topic_arn: str
    #: The final statuses published to the topic.
    topic_statuses: frozenset[RunStatus]
    email_sender: str
    master_secret: Callable[[], str]
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    #: How webhooks are called (the SSRF guard).
    egress: Egress = field(default_factory=Egress)
    #: The values of the secrets a webhook's headers name.
    secrets: Resolver | None = None

    def run_finished(self, run: Run) -> dict[str, str]:
        """Publish the run's end if the topic hears of its status, deliver it where its job
        asks; returns, per channel, how the delivery went (nothing: nobody was to be told).
        Each outcome is kept on the run (``notifications``) as soon as it is known, and a
        channel with an outcome is not tried again: a batch retried by the event source
        mapping sends nothing twice.

        ``run`` is as the stream shows it: a run whose status the topic does not hear of and
        whose job did not ask to be notified (``run.notify``) is let go without a read."""
        to_topic = run.status in self.topic_statuses
        if not to_topic and not run.notify:
            return {}
        job = self.store.get_job(run.job_id)
        outcomes = self._deliver(run, job, to_topic)
        if job is not None and self._ended_job(job, run):
            now = datetime.fromtimestamp(self.clock(), UTC)
            remove_job(self.store, job, now)  # (on_complete delete: its last run has ended)
        return outcomes

    def _ended_job(self, job: Job, run: Run) -> bool:
        """Is ``run`` the last of a job to delete on completion? (Its record was marked
        ``notify`` for that: Job.tells_end.) Asked as of the run's second at the earliest:
        a run skipped ahead of its time ends before it."""
        if job.on_complete is not OnComplete.DELETE or run.trigger is not Trigger.SCHEDULE:
            return False
        if not job.is_last(run.scheduled_at):  # (an earlier run that ended late)
            return False
        now = datetime.fromtimestamp(self.clock(), UTC)
        return job.as_of(max(now, run.scheduled_at + _SECOND)).state is JobState.COMPLETED

    def _deliver(self, run: Run, job: Job | None, to_topic: bool) -> dict[str, str]:
        document = notify.message(run, job)
        delivery = f"{run.id}:{run.status.value}"
        channels: dict[str, Callable[[], str]] = {}
        if to_topic:
            channels["sns"] = lambda: self._publish(document)
        if job is not None and job.notify is not None and notify.wants(job, run.status):
            channels.update(self._own_channels(job, run.owner, delivery, document))
        if not channels:  # (its job wants other statuses, or is gone)
            return {}
        kept = self.store.get_run(run.job_id, run.id)
        return self._send(channels, kept.notifications if kept else {}, run.job_id, run.id)

    def silence_noted(self, event: SilenceEvent) -> dict[str, str]:
        """Tell a silence (SILENT), or its end (RECOVERED): the topic, and the job's webhook
        and e-mail if its ``notify`` has them; returns, per channel, how the delivery went.
        Each outcome is kept on the silence's record, and a channel with an outcome is not
        tried again (a record delivered again sends nothing twice)."""
        job = self.store.get_job(event.job_id)
        document = notify.silence_message(event, job)
        delivery = f"{event.job_id}:{event.key}:{event.status.value}"
        channels: dict[str, Callable[[], str]] = {"sns": lambda: self._publish(document)}
        if job is not None and job.notify is not None:
            channels.update(self._own_channels(job, event.owner, delivery, document))
        kept = self.store.get_silence(event.job_id, event.key)
        return self._send(channels, kept.notifications if kept else {}, event.job_id, event.key)

    def _own_channels(
        self, job: Job, owner: str, delivery: str, document: dict[str, Any]
    ) -> dict[str, Callable[[], str]]:
        """The job's own channels (its ``notify``'s webhook and e-mail)."""
        assert job.notify is not None
        channels: dict[str, Callable[[], str]] = {}
        webhook, email = job.notify.webhook, job.notify.email
        if webhook:
            extra = job.notify.webhook_headers
            channels["webhook"] = lambda: self._post(webhook, owner, delivery, document, extra)
        if email:
            channels["email"] = lambda: self._email(email, document)
        return channels

    def _send(
        self,
        channels: Mapping[str, Callable[[], str]],
        done: Mapping[str, str],
        job_id: str,
        key: str,
    ) -> dict[str, str]:
        """Deliver on each channel not ``done`` yet, noting each outcome on the record of
        (``job_id``, ``key``) as soon as it is known."""
        outcomes = {}
        for channel, deliver in channels.items():
            if channel in done:
                outcomes[channel] = done[channel]
                continue
            outcomes[channel] = deliver()
            self.store.note_notification(job_id, key, channel, outcomes[channel])
        return outcomes

    def _publish(self, document: dict[str, Any]) -> str:
        answer = self.sns.publish(
            TopicArn=self.topic_arn,
            Message=notify.body(document).decode(),
            MessageAttributes={
                name: {"DataType": "String", "StringValue": str(document[name])}
                for name in ("job_id", "owner", "status")
            },
        )
        return f"published {answer['MessageId']}"

    def _headers(self, owner: str, extra: Mapping[str, Any]) -> dict[str, str]:
        """The webhook's own headers, the secrets they name resolved (raises
        SecretUnavailable)."""
        names = secrets.names_in(extra)
        if not names:
            return dict(extra)
        if self.secrets is None:
            raise SecretUnavailable(sorted(names)[0], "this deployment keeps no secrets")
        values = self.secrets.values_of(owner, names)
        headers = {
            name: secrets.resolve(value, values.__getitem__) for name, value in extra.items()
        }
        for name, value in headers.items():
            if has_controls(value):
                raise SecretUnavailable(
                    ", ".join(sorted(secrets.names_in(extra[name]))),
                    f"its value cannot be sent in header {name} (control characters)",
                )
        return headers

    def _post(
        self,
        url: str,
        owner: str,
        delivery: str,
        document: dict[str, Any],
        extra: Mapping[str, Any],
    ) -> str:
        """POST the signed document (with the job's own headers, their secrets resolved now);
        retried with doubling pauses on network errors, 408, 429 and 5xx answers. ``delivery``
        names what it tells (``<run id>:<status>``), for receivers to drop repeats."""
        try:
            own = self._headers(owner, extra)
        except SecretUnavailable as error:
            return f"not sent: {error}"
        payload = notify.body(document)
        secret = notify.signing_secret(self.master_secret(), owner)
        pause = r.WEBHOOK_FIRST_BACKOFF_SECONDS
        outcome = ""
        for attempt in range(1, r.WEBHOOK_ATTEMPTS + 1):
            headers = {
                **own,  # (chronoq's own after them: a job cannot set them)
                "Content-Type": "application/json",
                "User-Agent": "chronoq",
                r.SIGNATURE_HEADER: notify.sign(secret, int(self.clock()), payload),
                r.DELIVERY_HEADER: delivery,
            }
            try:
                answer = self.egress.request(
                    "POST",
                    url,
                    body=payload,
                    headers=headers,
                    timeout=urllib3.Timeout(total=r.WEBHOOK_TIMEOUT_SECONDS),
                )
                outcome = f"HTTP {answer.status}"
                if 200 <= answer.status < 300:
                    return f"delivered ({outcome}, attempt {attempt})"
                if answer.status < 500 and answer.status not in (408, 429):
                    break
            except BlockedTarget as error:
                outcome = f"refused: {error}"
                break
            except urllib3.exceptions.HTTPError as error:
                outcome = str(error)
            if attempt < r.WEBHOOK_ATTEMPTS:
                self.sleep(pause)
                pause *= 2
        # (not the whole URL: hook URLs often carry their credential in the path)
        logger.warning("webhook to %s failed for %s: %s", urlsplit(url).hostname, delivery, outcome)
        return f"failed ({outcome}, attempt {attempt})"

    def _email(self, address: str, document: dict[str, Any]) -> str:
        if not self.email_sender:
            return "skipped (no sender configured)"
        subject, text = notify.email_text(document)
        try:
            answer = self.ses.send_email(
                Source=self.email_sender,
                Destination={"ToAddresses": [address]},
                Message={"Subject": {"Data": subject}, "Body": {"Text": {"Data": text}}},
            )
        except self.ses.exceptions.MessageRejected as error:
            return f"failed ({error})"
        return f"sent {answer['MessageId']}"
