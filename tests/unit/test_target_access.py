"""The deployment's target policy: allow-lists matched as patterns, queues by their ARNs,
buses by name or ARN; the API's settings allow nothing unless told."""

from __future__ import annotations

import pytest
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.access import ANY_TARGET, TargetPolicy, patterns, queue_arn
from chronoq.domain.targets import ContainerTarget, EventBridgeTarget, LambdaTarget, SqsTarget
from chronoq.settings import ApiSettings

FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:reports"
REQUIRED = {
    r.ENV_JOBS_TABLE: "jobs",
    r.ENV_SCHEDULE_TABLE: "schedule",
    r.ENV_RUNS_TABLE: "runs",
    r.ENV_AUDIT_TABLE: "audit",
    r.ENV_SHARDS: "4",
    r.ENV_STATE_MACHINE_ARN: "arn:sm",
    r.ENV_OUTPUT_BUCKET: "out",
    r.ENV_ARCHIVE_BUCKET: "archive",
    r.ENV_SIGNING_SECRET_ARN: "arn:secret",
    r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
    **{name: f"https://q/{p}" for p, name in r.ENV_QUEUE_URLS.items()},
}


def lambda_target(arn: str = FUNCTION) -> LambdaTarget:
    return LambdaTarget(type="lambda", function_arn=arn)


@pytest.mark.parametrize(
    ("url", "arn"),
    [
        (
            "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
            "arn:aws:sqs:eu-west-1:123456789012:orders",
        ),
        (
            "https://eu-west-1.queue.amazonaws.com/123456789012/orders",
            "arn:aws:sqs:eu-west-1:123456789012:orders",
        ),
        (
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
            "arn:aws-cn:sqs:cn-north-1:123456789012:q",
        ),
    ],
)
def test_given_a_queue_url_when_read_then_its_arn(url: str, arn: str) -> None:
    assert queue_arn(url) == arn


def test_given_the_api_settings_without_lists_when_loaded_then_no_service_target_nor_image_is_allowed() -> (
    None
):
    policy = ApiSettings.from_env(REQUIRED).targets

    assert (
        policy.lambda_functions,
        policy.queues,
        policy.topics,
        policy.event_buses,
        policy.container_images,
    ) == ((), (), (), (), ())
    assert (policy.max_container_cpu, policy.max_container_memory) == (1024, 2048)
    assert policy.max_container_seconds == 3600
    assert policy.refusal(lambda_target(), 60) is not None


def test_given_any_in_the_settings_when_loaded_then_everything_is_allowed() -> None:
    env = {**REQUIRED, r.ENV_LAMBDA_TARGETS: "*", r.ENV_CONTAINER_IMAGES: " * "}
    policy = ApiSettings.from_env(env).targets

    assert policy.lambda_functions is None
    assert policy.container_images is None
    assert policy.refusal(lambda_target(), 60) is None


@pytest.mark.parametrize(
    ("allowed", "arn", "refused"),
    [
        (FUNCTION, FUNCTION, False),
        ("arn:aws:lambda:eu-west-1:123456789012:function:rep*", FUNCTION, False),
        (FUNCTION, FUNCTION + ":prod", True),  # IAM would refuse the alias too
        ("arn:aws:lambda:eu-west-1:123456789012:function:other", FUNCTION, True),
        ("", FUNCTION, True),
    ],
)
def test_given_lambda_patterns_when_a_target_is_checked_then_only_matches_pass(
    allowed: str, arn: str, refused: bool
) -> None:
    policy = TargetPolicy(lambda_functions=patterns(allowed))

    assert (policy.refusal(lambda_target(arn), 60) is not None) is refused


@pytest.mark.parametrize(
    ("bus", "refused"),
    [
        ("jobs", False),  # by name: a bus of the deployment's own account
        ("arn:aws:events:eu-west-1:123456789012:event-bus/jobs", False),
        ("default", True),
        ("arn:aws:events:eu-west-1:999999999999:event-bus/jobs", True),
    ],
)
def test_given_a_listed_bus_when_a_target_names_it_by_name_or_arn_then_only_it_passes(
    bus: str, refused: bool
) -> None:
    policy = TargetPolicy(event_buses=("arn:aws:events:eu-west-1:123456789012:event-bus/jobs",))
    target = EventBridgeTarget(type="eventbridge", event_bus=bus)

    assert (policy.refusal(target, 60) is not None) is refused


def test_given_a_listed_queue_arn_when_a_target_names_its_url_then_it_passes_and_others_not() -> (
    None
):
    policy = TargetPolicy(queues=("arn:aws:sqs:eu-west-1:123456789012:orders",))
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/"

    assert policy.refusal(SqsTarget(type="sqs", queue_url=url + "orders"), 60) is None
    assert policy.refusal(SqsTarget(type="sqs", queue_url=url + "other"), 60) == (
        "target.queue_url",
        "arn:aws:sqs:eu-west-1:123456789012:other is not a queue jobs may send to in this"
        " deployment: its operators allow it with the CDK context setting queue_targets"
        " (cdk deploy -c queue_targets=PATTERN,...; default: none)",
    )


def test_given_no_policy_when_use_cases_are_built_then_anything_within_fargate_is_allowed() -> None:
    big = ContainerTarget(type="container", image="x", command=["true"], cpu=4096, memory=30720)

    assert ANY_TARGET.refusal(big, lim.MAX_CONTAINER_TIMEOUT_SECONDS) is None
    assert ANY_TARGET.refusal(lambda_target(), 60) is None
