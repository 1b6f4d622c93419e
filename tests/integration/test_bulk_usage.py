"""What pausing and resuming many jobs at once costs on AWS (docs/api/jobs.md, "Pausing many jobs at
once"): through the api function on moto, a bulk pause of three labelled jobs counted against three
single pauses of three twins, request by request."""

from __future__ import annotations

from typing import Any

from chronoq.local.usage import uncounted

from tests.builders import unique_name
from tests.integration.conftest import Harness
from tests.support import Sink, api_event


def _minus(more: dict[str, Any], less: dict[str, Any]) -> dict[str, Any]:
    return {
        k: more.get(k, 0) - less.get(k, 0)
        for k in {*more, *less}
        if more.get(k, 0) != less.get(k, 0)
    }


def test_given_labelled_jobs_when_paused_and_resumed_by_label_then_each_costs_a_single_pause_plus_the_page(
    harness: Harness, sink: Sink
) -> None:
    label = unique_name().replace("_", "-")[-20:].strip("-.")
    target = {"type": "http", "url": sink.url + "/x"}
    every_ten = {"type": "cron", "expression": "*/10 * * * *"}
    with uncounted():
        labelled = [
            harness.create_job(target, schedule=every_ten, labels={"bulk": label}) for _ in range(3)
        ]
        twins = [harness.create_job(target, schedule=every_ten) for _ in range(3)]

    def usage_of(*requests: tuple[str, str]) -> dict[str, Any]:
        harness.aws.reset_usage()
        for path, method in requests:
            status, answer = harness.api(api_event("get_job", path=path, method=method))
            assert status == 200, answer
        return harness.aws.usage_document()

    singles = usage_of(*((f"/jobs/{j['id']}/pause", "POST") for j in twins))
    bulk = usage_of((f"/jobs/pause?label=bulk={label}", "POST"))
    single_resumes = usage_of(*((f"/jobs/{j['id']}/resume", "POST") for j in twins))
    bulk_resume = usage_of((f"/jobs/resume?label=bulk={label}", "POST"))

    with uncounted():  # (the owner's jobs the page looks at: this test's, and any before it)
        status, listed = harness.api(api_event("get_job", path="/jobs?limit=100", method="GET"))
        assert status == 200
        assert "next_token" not in listed
        looked = len(listed["jobs"])

    # the page: one query of the owner index (keys only: half a read unit for a few keys),
    # one batch read of every job it looks at (matching or not: the labels are in the job
    # item; eventually consistent: half a read unit each); then each job as its single pause
    # (resume): nothing more
    for more, less in ((bulk, singles), (bulk_resume, single_resumes)):
        assert _minus(more["aws_requests"], less["aws_requests"]) == {
            "dynamodb:Query": 1,
            "dynamodb:BatchGetItem": 1,
        }
        assert _minus(more["dynamodb"], less["dynamodb"]) == {"read_units": 0.5 + looked / 2}
    assert looked >= len(labelled) + len(twins)
    # a single pause: the job read (GetItem, consistent), written (UpdateItem), its audit
    # entry (ExecuteStatement: 2 write units); a resume adds its next occurrence's write
    # (BatchWriteItem) and a read of the job as resumed
    assert singles["aws_requests"] == {
        "dynamodb:GetItem": 3,
        "dynamodb:UpdateItem": 3,
        "dynamodb:ExecuteStatement": 3,
    }
    assert singles["dynamodb"] == {"read_units": 3.0, "write_units": 9.0}
    assert single_resumes["aws_requests"] == {
        "dynamodb:GetItem": 6,
        "dynamodb:UpdateItem": 3,
        "dynamodb:BatchWriteItem": 3,
        "dynamodb:ExecuteStatement": 3,
    }
    assert single_resumes["dynamodb"] == {"read_units": 6.0, "write_units": 12.0}
