"""Secure by default: service targets and container images only where the deployment lists
them, container sizes and durations capped; chronoq local allows everything in its own AWS."""

from __future__ import annotations

from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import limits as lim

from tests.integration.conftest import Harness
from tests.integration.test_api_handler import assert_error, job_body, nothing_stored
from tests.support import api_event

ACCOUNT = "123456789012"
FUNCTION = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:reports"
QUEUE_URL = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/orders"
QUEUE_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders"
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:alerts"
BUS = f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/jobs"
IMAGE = "public.ecr.aws/docker/library/busybox:1.36"

#: One target of each kind, the field a refusal names and the setting that allows it.
TARGETS: list[tuple[dict[str, Any], str, str, str, str]] = [
    (
        {"type": "lambda", "function_arn": FUNCTION},
        "target.function_arn",
        r.ENV_LAMBDA_TARGETS,
        "lambda_targets",
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report*",
    ),
    (
        {"type": "sqs", "queue_url": QUEUE_URL},
        "target.queue_url",
        r.ENV_QUEUE_TARGETS,
        "queue_targets",
        QUEUE_ARN,
    ),
    (
        {"type": "sns", "topic_arn": TOPIC},
        "target.topic_arn",
        r.ENV_TOPIC_TARGETS,
        "topic_targets",
        TOPIC,
    ),
    (
        {"type": "eventbridge", "event_bus": "jobs"},
        "target.event_bus",
        r.ENV_EVENT_BUS_TARGETS,
        "event_bus_targets",
        BUS,
    ),
    (
        {"type": "container", "image": IMAGE, "command": ["echo", "hi"]},
        "target.image",
        r.ENV_CONTAINER_IMAGES,
        "container_images",
        "public.ecr.aws/docker/library/*",
    ),
]
IDS = [t[0]["type"] for t in TARGETS]


def as_in_aws(harness: Harness, **values: str) -> None:
    """The API configured as a deployment with the default context is (every list empty,
    the default caps), then ``values``."""
    for name in (
        r.ENV_LAMBDA_TARGETS,
        r.ENV_QUEUE_TARGETS,
        r.ENV_TOPIC_TARGETS,
        r.ENV_EVENT_BUS_TARGETS,
        r.ENV_CONTAINER_IMAGES,
    ):
        harness.aws.configure(name, values.get(name, ""))
    harness.aws.configure(r.ENV_MAX_CONTAINER_CPU, str(lim.DEFAULT_MAX_CONTAINER_CPU))
    harness.aws.configure(r.ENV_MAX_CONTAINER_MEMORY, str(lim.DEFAULT_MAX_CONTAINER_MEMORY))
    harness.aws.configure(r.ENV_MAX_CONTAINER_SECONDS, str(lim.DEFAULT_MAX_CONTAINER_SECONDS))


def post(harness: Harness, target: dict[str, Any], **extra: Any) -> tuple[int, Any]:
    return harness.api(api_event("create_at_job", body=job_body(target=target, **extra)))


@pytest.mark.parametrize(("target", "field", "variable", "setting", "pattern"), TARGETS, ids=IDS)
def test_given_the_default_aws_settings_when_a_job_names_a_service_target_or_image_then_422_names_the_field_and_the_setting(
    harness: Harness, target: dict[str, Any], field: str, variable: str, setting: str, pattern: str
) -> None:
    as_in_aws(harness)

    status, answer = post(harness, target)

    assert status == 422
    assert_error(answer, "invalid_field", field)
    assert f"-c {setting}=" in answer["error"]["message"]
    assert nothing_stored(harness)


@pytest.mark.parametrize(("target", "field", "variable", "setting", "pattern"), TARGETS, ids=IDS)
def test_given_a_listed_pattern_when_a_job_names_what_it_matches_then_it_is_created(
    harness: Harness, target: dict[str, Any], field: str, variable: str, setting: str, pattern: str
) -> None:
    as_in_aws(harness, **{variable: pattern})

    status, answer = post(harness, target)

    assert status == 201, answer


@pytest.mark.parametrize(("target", "field", "variable", "setting", "pattern"), TARGETS, ids=IDS)
def test_given_a_job_allowed_when_patched_to_an_unlisted_target_then_422_and_it_is_unchanged(
    harness: Harness, target: dict[str, Any], field: str, variable: str, setting: str, pattern: str
) -> None:
    as_in_aws(harness)
    status, job = harness.api(api_event("create_at_job", body=job_body()))
    assert status == 201, job

    status, answer = harness.api(
        api_event(
            "create_at_job", path=f"/jobs/{job['id']}", method="PATCH", body={"target": target}
        )
    )

    assert status == 422
    assert_error(answer, "invalid_field", field)
    stored = harness.api(api_event("list_jobs", path=f"/jobs/{job['id']}"))[1]
    assert stored["target"]["type"] == "http"


@pytest.mark.parametrize(
    ("changes", "field", "setting"),
    [
        ({"target": {"cpu": 2048}}, "target.cpu", "max_container_cpu"),
        ({"target": {"memory": 4096}}, "target.memory", "max_container_memory"),
        ({"timeout_seconds": 7200}, "timeout_seconds", "max_container_seconds"),
    ],
)
def test_given_the_default_container_caps_when_a_container_asks_for_more_then_422_names_the_field_and_the_setting(
    harness: Harness, changes: dict[str, Any], field: str, setting: str
) -> None:
    as_in_aws(harness, **{r.ENV_CONTAINER_IMAGES: IMAGE})
    target = {"type": "container", "image": IMAGE, "command": ["true"], **changes.get("target", {})}
    extra = {k: v for k, v in changes.items() if k != "target"}

    status, answer = post(harness, target, **extra)

    assert status == 422
    assert_error(answer, "invalid_field", field)
    assert setting in answer["error"]["message"]


def test_given_the_default_container_caps_when_a_container_stays_within_them_then_it_is_created(
    harness: Harness,
) -> None:
    as_in_aws(harness, **{r.ENV_CONTAINER_IMAGES: IMAGE})
    target = {"type": "container", "image": IMAGE, "command": ["true"], "cpu": 1024, "memory": 2048}

    status, answer = post(harness, target, timeout_seconds=3600)

    assert status == 201, answer


@pytest.mark.parametrize(("target", "field", "variable", "setting", "pattern"), TARGETS, ids=IDS)
def test_given_chronoq_local_when_a_job_names_any_service_target_or_image_then_it_is_created(
    harness: Harness, target: dict[str, Any], field: str, variable: str, setting: str, pattern: str
) -> None:
    status, answer = post(harness, {**target, **({"cpu": 4096} if "image" in target else {})})

    assert status == 201, answer
