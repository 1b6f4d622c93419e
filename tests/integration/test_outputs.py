"""A run's output and logs: inline in the run record while small, in S3 when large; read back
through the API."""

from __future__ import annotations

import json
from typing import Any

from chronoq import resources as r
from chronoq.domain.runs import RunStatus

from tests.integration.conftest import Harness
from tests.support import api_event


def get(harness: Harness, path: str, user: str = "alice") -> tuple[int, Any]:
    return harness.api(api_event("get_run", path=path, user=user))


def python_target(task: str, **args: Any) -> dict[str, Any]:
    return {"type": "python", "task": f"chronoq.tasks:{task}", "args": args}


def test_given_a_small_output_when_the_run_succeeds_then_it_is_kept_in_the_run_and_served(
    harness: Harness,
) -> None:
    run = harness.run(harness.create_job(python_target("echo", colour="blue")))

    assert run.status is RunStatus.SUCCEEDED
    assert run.output_location is None
    status, output = get(harness, f"/runs/{run.id}/output")
    assert status == 200
    assert output["result"]["args"] == {"colour": "blue"}
    assert json.loads(run.output or "") == output


def test_given_an_output_over_32_kib_when_the_run_succeeds_then_it_is_kept_in_s3_and_served_whole(
    harness: Harness,
) -> None:
    big = "x" * (r.INLINE_BYTES + 1000)
    job = harness.create_job(python_target("echo", big=big))

    run = harness.run(job)

    assert run.output is None
    assert run.output_location == (
        f"s3://chronoq-local-outputs/runs/{job['id']}/{run.id}/output-1.json"
    )
    status, output = get(harness, f"/runs/{run.id}/output")
    assert status == 200
    assert output["result"]["args"]["big"] == big


def test_given_a_jobs_output_location_when_its_output_is_large_then_it_goes_there(
    harness: Harness,
) -> None:
    harness.aws.client("s3").create_bucket(Bucket="team-results")
    job = harness.create_job(
        python_target("echo", big="y" * (r.INLINE_BYTES + 1)),
        output_location="s3://team-results/nightly/",
    )

    run = harness.run(job)

    key = f"nightly/{job['id']}/{run.id}/output-1.json"
    assert run.output_location == f"s3://team-results/{key}"
    body = harness.aws.client("s3").get_object(Bucket="team-results", Key=key)["Body"].read()
    assert json.loads(body)["result"]["args"]["big"].startswith("yyy")


def test_given_a_failed_run_when_its_output_is_asked_for_then_404_says_there_is_none(
    harness: Harness,
) -> None:
    run = harness.run(harness.create_job(python_target("fail")))

    status, answer = get(harness, f"/runs/{run.id}/output")

    assert status == 404
    assert "has no output" in answer["error"]["message"]


def test_given_retried_attempts_when_the_logs_are_read_then_each_attempts_lines_come_in_order(
    harness: Harness,
) -> None:
    job = harness.create_job(
        python_target("flaky", succeed_on_attempt=3),
        retry={"max_attempts": 3, "interval_seconds": 1, "jitter": False},
    )
    run = harness.run(job, timeout=30)

    status, logs = get(harness, f"/runs/{run.id}/logs")

    assert status == 200
    lines = logs["lines"]
    attempts = [int(line.split("[attempt ", 1)[1].split("]", 1)[0]) for line in lines]
    assert attempts == sorted(attempts)
    assert set(attempts) == {1, 2, 3}
    assert any("[attempt 2] INFO attempt 2 of a flaky task" in line for line in lines)
    assert any("[attempt 1] chronoq.tasks:flaky raised RuntimeError" in line for line in lines)


def test_given_logs_over_32_kib_when_the_run_ends_then_they_are_kept_in_s3_and_served_whole(
    harness: Harness,
) -> None:
    job = harness.create_job(
        {
            "type": "container",
            "image": "alpine",
            "command": [
                "sh",
                "-c",
                "for i in $(seq 1 2000); do echo line-$i-padding-padding; done",
            ],
        }
    )
    run = harness.run(job)

    status, logs = get(harness, f"/runs/{run.id}/logs")

    assert status == 200
    container_lines = [line for line in logs["lines"] if "| line-" in line]
    assert len(container_lines) == 2000
    assert container_lines[-1].endswith("| line-2000-padding-padding")
    objects = harness.aws.client("s3").list_objects_v2(
        Bucket="chronoq-local-outputs", Prefix=f"runs/{job['id']}/{run.id}/"
    )["Contents"]
    assert [o["Key"].rsplit("/", 1)[1] for o in objects] == ["attempt-1.log"]


def test_given_someone_elses_run_when_its_output_or_logs_are_asked_for_then_404(
    harness: Harness,
) -> None:
    run = harness.run(harness.create_job(python_target("echo")))

    assert get(harness, f"/runs/{run.id}/output", user="bob")[0] == 404
    assert get(harness, f"/runs/{run.id}/logs", user="bob")[0] == 404


def test_given_a_bucket_the_deployment_may_not_write_to_when_a_job_names_it_then_422(
    harness: Harness,
) -> None:
    harness.aws.configure(r.ENV_OUTPUT_BUCKETS, "team-results")
    body = {
        "name": "t",
        "schedule": {"type": "rate", "every": "1 hour"},
        "target": python_target("echo"),
    }

    refused = harness.api(
        api_event("create_at_job", body={**body, "output_location": "s3://elsewhere/x"})
    )
    accepted = harness.api(
        api_event("create_at_job", body={**body, "output_location": "s3://team-results/x"})
    )
    own = harness.api(
        api_event(
            "create_at_job",
            body={**body, "name": "own", "output_location": "s3://chronoq-local-outputs/x"},
        )
    )

    assert refused[0] == 422
    assert refused[1]["error"]["field"] == "output_location"
    assert (accepted[0], own[0]) == (201, 201)
