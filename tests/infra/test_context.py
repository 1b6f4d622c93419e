"""A deployment configured through the app's context: e-mail sender, the topic's statuses and
what targets reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq_cdk.access import TargetAccess, context_list
from chronoq_cdk.stack import ChronoqStack

from tests.infra.synthesis import Synthesis, denials, grants, rendered

SENDER = "jobs@example.com"
FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:reports"
QUEUE = "arn:aws:sqs:eu-west-1:123456789012:orders"
BUS = "arn:aws:events:eu-west-1:123456789012:event-bus/default"
#: A topic that hears of every run that ends (in any case, as the context may give them).
EVERY_FINAL = ["succeeded", "FAILED", "TIMED_OUT", "SKIPPED", "MISSED", "CANCELLED"]
#: Output buckets as the context may give them: by name, ARN or s3:// URI.
OUTPUT_BUCKETS = ["team-reports", "arn:aws:s3:::archive/*", "s3://exports/daily/"]


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    app = App(outdir=str(tmp_path_factory.mktemp("configured")))
    stack = ChronoqStack(
        app,
        "Chronoq",
        email_sender=SENDER,
        topic_statuses=EVERY_FINAL,
        target_access=TargetAccess(
            lambda_functions=[FUNCTION],
            queues=[QUEUE],
            topics=[],
            event_buses=[BUS],
            output_buckets=OUTPUT_BUCKETS,
        ),
    )
    return Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})


def test_given_an_email_sender_when_synthesized_then_the_notifier_sends_only_from_it(
    configured: Synthesis,
) -> None:
    notifier = configured.stack.notifications.function
    variables = configured.resource(notifier)["Properties"]["Environment"]["Variables"]
    from_sender = json.dumps({"StringEquals": {"ses:FromAddress": SENDER}}, sort_keys=True)

    assert variables[r.ENV_EMAIL_SENDER] == SENDER
    assert {g for g in grants(configured.role_statements(notifier)) if g[0].startswith("ses:")} == {
        ("ses:SendEmail", "*", from_sender),
        ("ses:SendRawEmail", "*", from_sender),
    }


def test_given_every_final_status_for_the_topic_when_synthesized_then_the_notifier_hears_of_every_run_that_ends(
    configured: Synthesis,
) -> None:
    notifier = configured.stack.notifications.function
    variables = configured.resource(notifier)["Properties"]["Environment"]["Variables"]
    (mapping,) = (
        m["Properties"]
        for m in configured.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == configured.ref(notifier)
    )
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    final = ["CANCELLED", "FAILED", "MISSED", "SKIPPED", "SUCCEEDED", "TIMED_OUT"]

    assert variables[r.ENV_TOPIC_STATUSES] == ",".join(final)
    # every final status already passes: no pattern for runs marked notify is needed (a
    # silence's record passes as it is written)
    silence = sorted([*final, "RECOVERED", "SILENT"])
    assert [p["dynamodb"]["NewImage"] for p in patterns] == [
        {"status": {"S": silence}},
        {"status": {"S": final}},
    ]
    assert [p["eventName"] for p in patterns] == [["INSERT"], ["MODIFY"]]


@pytest.mark.parametrize("statuses", [["FAILED", "DONE"], ["RUNNING"], []])
def test_given_a_topic_status_that_is_not_a_final_status_when_synthesized_then_it_is_refused(
    statuses: list[str], tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"topic_statuses: .*final statuses: CANCELLED, FAILED"):
        ChronoqStack(App(outdir=str(tmp_path)), "Chronoq", topic_statuses=statuses)


def test_given_listed_targets_when_synthesized_then_the_runner_invokes_only_those_functions(
    configured: Synthesis,
) -> None:
    granted = grants(configured.role_statements(configured.stack.execution.runner))

    assert {g for g in granted if g[0].startswith("lambda:")} == {
        ("lambda:InvokeFunction", FUNCTION, "null")
    }


def test_given_listed_targets_when_synthesized_then_the_state_machine_delivers_only_to_those(
    configured: Synthesis,
) -> None:
    granted = grants(configured.role_statements(configured.stack.execution.state_machine))

    assert {
        g for g in granted if g[0] in ("sqs:SendMessage", "sns:Publish", "events:PutEvents")
    } == {
        ("sqs:SendMessage", QUEUE, "null"),  # and no topic at all: the list is empty
        ("events:PutEvents", BUS, "null"),
    }


def test_given_output_buckets_when_synthesized_then_the_runner_writes_and_the_api_reads_them(
    configured: Synthesis,
) -> None:
    stack = configured.stack
    outputs = f"${{{configured.logical_id(stack.storage.outputs)}.Arn}}/*"
    extra = [f"arn:${{AWS::Partition}}:s3:::{b}/*" for b in ("team-reports", "archive", "exports")]
    runner = grants(configured.role_statements(stack.execution.runner))
    api = grants(configured.role_statements(stack.api.function))

    assert {g for g in runner if g[0].startswith("s3:")} == {
        ("s3:PutObject", outputs, "null"),
        *(("s3:PutObject", arn, "null") for arn in extra),
    }
    archived = f"${{{configured.logical_id(stack.archive.bucket)}.Arn}}/{r.ARCHIVE_PREFIX}/*"
    listed = f"${{{configured.logical_id(stack.archive.bucket)}.Arn}}"
    assert {g for g in api if g[0].startswith("s3:")} == {
        ("s3:GetObject", outputs, "null"),
        *(("s3:GetObject", arn, "null") for arn in extra),
        # the archive: its owner's day listed and linked (GET /archive)
        ("s3:GetObject", archived, "null"),
        (
            "s3:ListBucket",
            listed,
            json.dumps({"StringLike": {"s3:prefix": [f"{r.ARCHIVE_PREFIX}/*"]}}),
        ),
    }


def test_given_output_buckets_as_names_arns_and_uris_when_synthesized_then_the_api_is_told_their_names(
    configured: Synthesis,
) -> None:
    api = configured.stack.api.function
    variables = configured.resource(api)["Properties"]["Environment"]["Variables"]

    assert variables[r.ENV_OUTPUT_BUCKETS] == "team-reports,archive,exports"


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({}, ()),
        ({"output_buckets": ""}, ()),
        ({"output_buckets": []}, ()),
        ({"output_buckets": "team-reports"}, ("team-reports",)),
        (
            {"output_buckets": "arn:aws:s3:::a, arn:aws-cn:s3:::b/logs/*, s3://c, S3://d/x/y"},
            ("a", "b", "c", "d"),
        ),
        ({"output_buckets": ["a", "s3://a/x", "arn:aws:s3:::a"]}, ("a",)),
    ],
)
def test_given_output_buckets_in_the_context_when_read_then_they_are_bucket_names(
    context: dict[str, object], expected: tuple[str, ...], tmp_path: Path
) -> None:
    app = App(outdir=str(tmp_path), context=context)

    assert TargetAccess.from_context(app.node).output_buckets == expected


def test_given_listed_targets_when_synthesized_then_chronoq_itself_stays_out_of_their_reach(
    configured: Synthesis,
) -> None:
    stack = configured.stack
    runner = denials(configured.role_statements(stack.execution.runner))
    state_machine = denials(configured.role_statements(stack.execution.state_machine))

    assert {d[1] for d in runner if d[0] == "lambda:InvokeFunction"} >= {
        rendered(configured.arn(f)) for f in stack.functions.values()
    }
    assert {d[1] for d in state_machine if d[0] == "sqs:SendMessage"} >= {
        rendered(configured.arn(q)) for q in stack.queues.by_priority.values()
    }
    assert ("sns:Publish", rendered(configured.ref(stack.notifications.topic)), "null") in (
        state_machine
    )


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({}, None),
        ({"queue_targets": ""}, []),
        ({"queue_targets": "arn:a, arn:b"}, ["arn:a", "arn:b"]),
        ({"queue_targets": ["arn:a", "arn:b"]}, ["arn:a", "arn:b"]),
    ],
)
def test_given_a_list_in_the_context_when_read_then_text_and_lists_both_work(
    context: dict[str, object], expected: list[str] | None, tmp_path: Path
) -> None:
    app = App(outdir=str(tmp_path), context=context)

    assert context_list(app.node, "queue_targets") == expected
    assert TargetAccess.from_context(app.node).queues == expected


# --- secure by default: service targets and images only where listed -------------------------


def test_given_the_default_context_when_synthesized_then_the_api_allows_no_service_target_nor_image(
    synth: Synthesis,
) -> None:
    api = synth.resource(synth.stack.api.function)["Properties"]["Environment"]["Variables"]

    assert {name: api[name] for name in r.ENV_TARGET_ACCESS} == {
        r.ENV_LAMBDA_TARGETS: "",
        r.ENV_QUEUE_TARGETS: "",
        r.ENV_TOPIC_TARGETS: "",
        r.ENV_EVENT_BUS_TARGETS: "",
        r.ENV_CONTAINER_IMAGES: "",
        r.ENV_MAX_CONTAINER_CPU: str(lim.DEFAULT_MAX_CONTAINER_CPU),
        r.ENV_MAX_CONTAINER_MEMORY: str(lim.DEFAULT_MAX_CONTAINER_MEMORY),
        r.ENV_MAX_CONTAINER_SECONDS: str(lim.DEFAULT_MAX_CONTAINER_SECONDS),
    }


def test_given_listed_targets_when_synthesized_then_the_api_is_told_the_same_lists_iam_grants(
    configured: Synthesis,
) -> None:
    api = configured.resource(configured.stack.api.function)["Properties"]["Environment"][
        "Variables"
    ]

    assert (
        api[r.ENV_LAMBDA_TARGETS],
        api[r.ENV_QUEUE_TARGETS],
        api[r.ENV_TOPIC_TARGETS],
        api[r.ENV_EVENT_BUS_TARGETS],
    ) == (FUNCTION, QUEUE, "", BUS)


def test_given_any_for_each_kind_when_synthesized_then_iam_grants_anything_in_the_own_account_and_the_api_any(
    tmp_path: Path,
) -> None:
    context = dict.fromkeys(
        (
            "lambda_targets",
            "queue_targets",
            "topic_targets",
            "event_bus_targets",
            "container_images",
        ),
        "*",
    )
    app = App(outdir=str(tmp_path), context=context)
    stack = ChronoqStack(app, "Chronoq", target_access=TargetAccess.from_context(app.node))
    synthesis = Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})
    own = "${AWS::Region}:${AWS::AccountId}"
    runner = grants(synthesis.role_statements(stack.execution.runner))
    machine = grants(synthesis.role_statements(stack.execution.state_machine))
    api = synthesis.resource(stack.api.function)["Properties"]["Environment"]["Variables"]

    assert (
        "lambda:InvokeFunction",
        f"arn:${{AWS::Partition}}:lambda:{own}:function:*",
        "null",
    ) in (runner)
    assert {
        g for g in machine if g[0] in ("sqs:SendMessage", "sns:Publish", "events:PutEvents")
    } == {
        ("sqs:SendMessage", f"arn:${{AWS::Partition}}:sqs:{own}:*", "null"),
        ("sns:Publish", f"arn:${{AWS::Partition}}:sns:{own}:*", "null"),
        ("events:PutEvents", f"arn:${{AWS::Partition}}:events:{own}:event-bus/*", "null"),
    }
    assert {api[name] for name in r.ENV_TARGET_ACCESS[:5]} == {"*"}
    pulls = grants(synthesis.statements(synthesis.arn(stack.containers.execution_role)))
    assert ("ecr:BatchGetImage", f"arn:${{AWS::Partition}}:ecr:{own}:repository/*", "null") in pulls


def test_given_container_caps_in_the_context_when_synthesized_then_the_api_enforces_them(
    tmp_path: Path,
) -> None:
    context = {
        "container_images": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/jobs/*",
        "max_container_cpu": "2048",
        "max_container_memory": 4096,
        "max_container_seconds": "600",
    }
    app = App(outdir=str(tmp_path), context=context)
    stack = ChronoqStack(app, "Chronoq", target_access=TargetAccess.from_context(app.node))
    synthesis = Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})
    api = synthesis.resource(stack.api.function)["Properties"]["Environment"]["Variables"]
    pulls = grants(synthesis.statements(synthesis.arn(stack.containers.execution_role)))
    repositories = "arn:${AWS::Partition}:ecr:eu-west-1:123456789012:repository/jobs/*"

    # the task execution role pulls from the allowed images' repository only
    assert {g for g in pulls if g[0].startswith("ecr:")} == {
        ("ecr:GetAuthorizationToken", "*", "null"),
        ("ecr:BatchCheckLayerAvailability", repositories, "null"),
        ("ecr:GetDownloadUrlForLayer", repositories, "null"),
        ("ecr:BatchGetImage", repositories, "null"),
    }

    assert (
        api[r.ENV_CONTAINER_IMAGES],
        api[r.ENV_MAX_CONTAINER_CPU],
        api[r.ENV_MAX_CONTAINER_MEMORY],
        api[r.ENV_MAX_CONTAINER_SECONDS],
    ) == ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/jobs/*", "2048", "4096", "600")


@pytest.mark.parametrize(
    "caps",
    [
        {"max_container_cpu": 128},
        {"max_container_memory": 64 * 1024},
        {"max_container_seconds": 0},
    ],
)
def test_given_a_container_cap_out_of_range_when_synthesized_then_it_is_refused(
    caps: dict[str, int], tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=next(iter(caps))):
        ChronoqStack(App(outdir=str(tmp_path)), "Chronoq", target_access=TargetAccess(**caps))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        (
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/jobs/report:v1",
            "arn:${AWS::Partition}:ecr:eu-west-1:123456789012:repository/jobs/report",
        ),
        (
            "*.dkr.ecr.*.amazonaws.com/jobs/*",
            "arn:${AWS::Partition}:ecr:*:*:repository/jobs/*",
        ),
        (
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/base@sha256:0123",
            "arn:${AWS::Partition}:ecr:eu-west-1:123456789012:repository/base",
        ),
        ("public.ecr.aws/docker/library/python:3.12", None),  # public: no right needed
        ("ghcr.io/acme/job:1", None),
    ],
)
def test_given_an_allowed_image_when_read_then_the_execution_role_pulls_only_from_its_repository(
    image: str, repository: str | None
) -> None:
    stack = Stack(App(), "Images")

    arns = [
        rendered(stack.resolve(a))
        for a in TargetAccess(container_images=[image]).ecr_repository_arns(stack)
    ]

    assert arns == ([repository] if repository else [])


def test_given_owner_limits_in_the_context_when_synthesized_then_the_api_and_the_worker_hold_owners_to_them(
    tmp_path: Path,
) -> None:
    from app import stack_from_context
    from chronoq.domain.limits import SETTINGS

    context = {s.name: str(s.default + 1 + n) for n, s in enumerate(SETTINGS)}
    app = App(outdir=str(tmp_path), context=context)
    stack = stack_from_context(app)
    synthesis = Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})

    def variables(function: r.Function) -> dict[str, str]:
        props = synthesis.resource(stack.functions[function.name])["Properties"]
        found: dict[str, str] = props["Environment"]["Variables"]
        return found

    api, worker = variables(r.API_FUNCTION), variables(r.WORKER_FUNCTION)
    env = r.ENV_OWNER_LIMITS
    assert {s.name: api[env[s.field]] for s in SETTINGS} == {
        s.name: context[s.name] for s in SETTINGS
    }
    assert worker[r.ENV_MAX_ASKED_RUNS_IN_FLIGHT] == context["max_asked_runs_in_flight"]
