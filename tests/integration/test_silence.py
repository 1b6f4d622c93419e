"""Silence on moto, through the functions' handlers (docs/api/notifications.md, "Silence"): a job
whose ``expect`` passes with no success is found by the dispatcher in the minute it reads; its
SILENT record reaches the notifier through the runs table's stream (filtered as the stack filters
it), which tells the topic and the job's webhook once; the next success, heard through the same
stream, ends the silence and is told once (RECOVERED)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.runs import RunStatus
from chronoq.domain.silence import SilenceStatus

from tests.integration.conftest import Harness
from tests.integration.test_notifications import python_target, received, subscribe
from tests.support import Sink, api_event, load_event

#: The shortest promise: a success every minute.
MINUTE = lim.MIN_SUCCESS_WITHIN_SECONDS


def dispatch(harness: Harness) -> dict[str, Any]:
    report: dict[str, Any] = harness.invoke(r.DISPATCHER_FUNCTION, load_event("dispatcher/tick"))
    return report


def told(sink: Sink) -> list[str]:
    return [json.loads(hit.body)["status"] for hit in sink.hits_to("/hook")]


def test_given_a_job_expecting_a_success_each_minute_when_none_comes_then_it_is_told_silent_once_and_recovered_once(
    harness: Harness, sink: Sink
) -> None:
    url = subscribe(harness)
    harness.nothing_to_catch_up()
    job = harness.create_job(
        python_target("echo"),
        expect={"success_within_seconds": MINUTE},
        notify={"webhook": sink.url + "/hook"},
    )
    assert (job["last_success_at"], job["silent_since"]) == (None, None)

    harness.clock.advance(MINUTE + 3 * 60)  # past its deadline, and the minute that holds it
    assert dispatch(harness)["silent"] == 1
    harness.notify()
    assert dispatch(harness)["silent"] == 0  # (its minute is behind it now)
    harness.notify()

    assert told(sink) == ["SILENT"]
    (published,) = received(harness, url)
    document = json.loads(published["Message"])
    assert (document["type"], document["job_id"], document["success_within_seconds"]) == (
        "job.silent",
        job["id"],
        MINUTE,
    )
    assert published["MessageAttributes"]["status"]["Value"] == SilenceStatus.SILENT.value
    status, silent = harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))
    assert status == 200
    assert silent["silent_since"] == document["silent_since"]
    status, listed = harness.api(api_event("list_jobs", path="/jobs?silent=true"))
    assert [j["id"] for j in listed["jobs"]] == [job["id"]]

    run = harness.run(job)
    harness.notify()  # its success: the silence ends, its RECOVERED record written
    harness.notify()  # that record
    harness.notify()  # (nothing more)

    assert run.status is RunStatus.SUCCEEDED
    assert told(sink) == ["SILENT", "RECOVERED"]
    (recovered,) = received(harness, url)
    assert json.loads(recovered["Message"])["run_id"] == run.id
    _, shown = harness.api(api_event("get_job", path=f"/jobs/{job['id']}"))
    assert shown["silent_since"] is None
    assert shown["last_success_at"] == json.loads(recovered["Message"])["recovered_at"]
    _, listed = harness.api(api_event("list_jobs", path="/jobs?silent=true"))
    assert listed["jobs"] == []

    harness.clock.advance(MINUTE + 3 * 60)  # silent again: a new silence, told once
    assert dispatch(harness)["silent"] == 1
    harness.notify()
    assert told(sink) == ["SILENT", "RECOVERED", "SILENT"]


def test_given_a_paused_job_with_expect_when_its_deadline_passes_then_nobody_is_told(
    harness: Harness, sink: Sink
) -> None:
    harness.nothing_to_catch_up()
    job = harness.create_job(
        python_target("echo"),
        expect={"success_within_seconds": MINUTE},
        notify={"webhook": sink.url + "/hook"},
    )
    status, _ = harness.api(api_event("get_job", path=f"/jobs/{job['id']}/pause", method="POST"))
    assert status == 200

    harness.clock.advance(timedelta(minutes=5).total_seconds())
    assert dispatch(harness)["silent"] == 0
    harness.notify()

    assert told(sink) == []
