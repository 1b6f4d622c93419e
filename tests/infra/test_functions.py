"""The functions, their layer and their IAM rights in the synthesized stack."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq_cdk.layer import LOCAL_ONLY

from tests.infra.synthesis import Synthesis, allowed, denials, grants, rendered


def _files(directory: Path) -> set[Path]:
    return {
        p.relative_to(directory)
        for p in directory.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _environment(synth: Synthesis) -> dict[str, Any]:
    """What each variable chronoq.resources names must point at."""
    stack = synth.stack
    containers = stack.containers
    return {
        **{t.env: synth.ref(stack.storage.tables[t.id]) for t in r.TABLES},
        **{q.env: synth.ref(stack.queues.by_priority[q.priority]) for q in r.QUEUES},
        r.ENV_STATE_MACHINE_ARN: synth.ref(stack.execution.state_machine),
        r.ENV_EXPRESS_STATE_MACHINE_ARN: synth.ref(stack.execution.express_state_machine),
        r.ENV_SHARDS: str(r.DEFAULT_SHARDS),
        r.ENV_TASK_MODULES: "",  # no task modules of its own by default
        r.ENV_OUTPUT_BUCKET: synth.ref(stack.storage.outputs),
        r.ENV_OUTPUT_BUCKETS: "",  # no other bucket than its own by default
        r.ENV_ARCHIVE_BUCKET: synth.ref(stack.archive.bucket),
        r.ENV_TOPIC_ARN: synth.ref(stack.notifications.topic),
        r.ENV_TOPIC_STATUSES: "FAILED,MISSED,TIMED_OUT",  # the topic's audience by default
        r.ENV_SIGNING_SECRET_ARN: synth.ref(stack.notifications.signing_secret),
        r.ENV_EMAIL_SENDER: "",  # no e-mail unless the deployment names a sender
        r.ENV_CONTAINER_LOG_GROUP: synth.ref(containers.log_group),
        r.ENV_CONTAINER_EXECUTION_ROLE_ARN: synth.arn(containers.execution_role),
        r.ENV_CONTAINER_TASK_ROLE_ARN: synth.arn(containers.task_role),
        r.ENV_BLOCK_PRIVATE_TARGETS: "true",  # the SSRF guard is on in AWS by default
        r.ENV_ALLOWED_TARGET_NETWORKS: "",  # and lets no private network through
        r.ENV_MAX_JOBS_PER_OWNER: str(lim.DEFAULT_MAX_JOBS_PER_OWNER),
        r.ENV_SECRETS_PATH: "/chronoq/Chronoq/secrets",  # the stack's own path
        r.ENV_MAX_SECRETS_PER_OWNER: str(lim.DEFAULT_MAX_SECRETS_PER_OWNER),
        r.ENV_MAX_RUNNING_BACKFILLS_PER_JOB: str(lim.DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB),
        r.ENV_MAX_RUNNING_BACKFILLS_PER_OWNER: str(lim.DEFAULT_MAX_RUNNING_BACKFILLS_PER_OWNER),
        r.ENV_MAX_QUEUED_RUNS_PER_OWNER: str(lim.DEFAULT_MAX_QUEUED_RUNS_PER_OWNER),
        r.ENV_MAX_WAITING_TRIGGERS_PER_JOB: str(lim.DEFAULT_MAX_WAITING_TRIGGERS_PER_JOB),
        r.ENV_MAX_ASKED_RUNS_IN_FLIGHT: str(lim.DEFAULT_MAX_ASKED_RUNS_IN_FLIGHT),
        r.ENV_MAX_RUNS_IN_FLIGHT: str(lim.DEFAULT_MAX_RUNS_IN_FLIGHT),
        # no service target nor container image is allowed by default
        r.ENV_LAMBDA_TARGETS: "",
        r.ENV_QUEUE_TARGETS: "",
        r.ENV_TOPIC_TARGETS: "",
        r.ENV_EVENT_BUS_TARGETS: "",
        r.ENV_CONTAINER_IMAGES: "",
        r.ENV_MAX_CONTAINER_CPU: str(lim.DEFAULT_MAX_CONTAINER_CPU),
        r.ENV_MAX_CONTAINER_MEMORY: str(lim.DEFAULT_MAX_CONTAINER_MEMORY),
        r.ENV_MAX_CONTAINER_SECONDS: str(lim.DEFAULT_MAX_CONTAINER_SECONDS),
    }


def _resources_variables() -> set[str]:
    """Every environment variable chronoq.resources names."""
    return {
        *(v for k, v in vars(r).items() if k.startswith("ENV_") and isinstance(v, str)),
        *r.ENV_QUEUE_URLS.values(),
    }


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }


def _logical_ids(value: Any) -> set[str]:
    """The logical ids a policy's resources refer to (by Ref or Fn::GetAtt)."""
    if isinstance(value, list):
        return {i for v in value for i in _logical_ids(v)}
    if isinstance(value, dict):
        if "Ref" in value:
            return {value["Ref"]}
        if "Fn::GetAtt" in value:
            return {value["Fn::GetAtt"][0]}
        return {i for v in value.values() for i in _logical_ids(v)}
    return set()


def _role_statements(synth: Synthesis, function: str) -> list[dict[str, Any]]:
    return synth.role_statements(synth.stack.functions[function])


def _on(statements: list[dict[str, Any]], service: str) -> list[dict[str, Any]]:
    """The statements granting actions of ``service``."""
    return [s for s in statements if any(a.startswith(f"{service}:") for a in _actions([s]))]


@pytest.mark.parametrize("spec", r.FUNCTIONS, ids=lambda f: f.name)
def test_given_the_stack_when_synthesized_then_functions_match_resources(
    synth: Synthesis, spec: r.Function
) -> None:
    props = synth.resource(synth.stack.functions[spec.name])["Properties"]

    assert props["Handler"] == spec.handler
    assert props["Runtime"] == r.LAMBDA_RUNTIME
    assert props["MemorySize"] == spec.memory_mb
    assert props["Timeout"] == spec.timeout_seconds
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Layers"] == [synth.ref(synth.stack.layer)]


@pytest.mark.parametrize("spec", r.FUNCTIONS, ids=lambda f: f.name)
def test_given_a_function_when_synthesized_then_it_gets_exactly_the_variables_it_names(
    synth: Synthesis, spec: r.Function
) -> None:
    variables = synth.resource(synth.stack.functions[spec.name])["Properties"]["Environment"][
        "Variables"
    ]
    expected = _environment(synth)

    assert {k: v for k, v in variables.items() if not k.startswith("POWERTOOLS_")} == {
        name: expected[name] for name in spec.env
    }
    assert variables["POWERTOOLS_SERVICE_NAME"] == f"chronoq-{spec.name}"


def test_given_the_resources_variables_when_synthesized_then_the_stack_has_a_value_for_each(
    synth: Synthesis,
) -> None:
    assert set(_environment(synth)) == _resources_variables()
    assert {name for spec in r.FUNCTIONS for name in spec.env} <= _resources_variables()
    assert set(synth.stack.functions) == {spec.name for spec in r.FUNCTIONS}


@pytest.mark.parametrize("spec", r.FUNCTIONS, ids=lambda f: f.name)
def test_given_a_function_when_synthesized_then_its_code_is_staged_from_its_folder(
    synth: Synthesis, spec: r.Function
) -> None:
    code = synth.resource(synth.stack.functions[spec.name])["Properties"]["Code"]
    staged = synth.assets[code["S3Key"]]
    handler = spec.handler_file.relative_to(spec.source_dir)

    assert (staged / handler).read_bytes() == spec.handler_file.read_bytes()
    assert _files(staged) == _files(spec.source_dir)


def test_given_the_layer_when_bundled_then_it_holds_the_lambda_code_and_its_dependencies(
    synth: Synthesis,
) -> None:
    props = synth.resource(synth.stack.layer)["Properties"]
    python = synth.assets[props["Content"]["S3Key"]] / "python"
    package = Path(r.__file__).parent
    wanted = {f for f in _files(package) if f.parts[0] not in LOCAL_ONLY}

    assert props["CompatibleRuntimes"] == [r.LAMBDA_RUNTIME]
    assert props["CompatibleArchitectures"] == ["arm64"]
    assert (python / "chronoq" / "compose.py").is_file()
    assert (python / "chronoq" / "execution" / "statemachine" / "run.asl.json").is_file()
    assert (python / "pydantic").is_dir()
    assert LOCAL_ONLY == ("local", "cli", "fakes")
    for local_only in LOCAL_ONLY:
        assert not (python / "chronoq" / local_only).exists()
    assert _files(python / "chronoq") == wanted
    assert list((python / "pydantic_core").glob("*.cpython-312-aarch64-linux-gnu.so"))


def test_given_the_functions_when_synthesized_then_each_reaches_only_the_resources_it_uses(
    synth: Synthesis,
) -> None:
    stack = synth.stack
    tables = stack.storage.tables
    queues = list(stack.queues.by_priority.values())
    outputs = stack.storage.outputs
    secret = stack.notifications.signing_secret
    containers = stack.containers
    expected = {
        r.API_FUNCTION.name: [
            *tables.values(),
            *queues,
            stack.execution.state_machine,
            outputs,
            secret,
            stack.archive.bucket,  # an owner's day listed, and links to it signed
        ],
        r.DISPATCHER_FUNCTION.name: [
            tables[r.JOBS_TABLE.id],
            tables[r.SCHEDULE_TABLE.id],
            tables[r.RUNS_TABLE.id],
            *queues,
        ],
        r.WORKER_FUNCTION.name: [
            tables[r.JOBS_TABLE.id],
            tables[r.RUNS_TABLE.id],
            *queues,
            stack.execution.state_machine,
            stack.execution.express_state_machine,
        ],
        r.RUNNER_FUNCTION.name: [
            tables[r.JOBS_TABLE.id],  # its owner's secrets' versions
            tables[r.RUNS_TABLE.id],
            outputs,
            containers.execution_role,
            containers.task_role,
            containers.log_group,
        ],
        r.NOTIFIER_FUNCTION.name: [
            tables[r.JOBS_TABLE.id],
            tables[r.RUNS_TABLE.id],  # its stream
            stack.notifications.topic,
            secret,
            stack.notifications.dead_letter,  # records failing after their retries
            *queues,  # runs parked on a flow, woken as a run holding its slots ends
            tables[r.SCHEDULE_TABLE.id],  # a success of a job with expect: its next deadline
        ],
        r.ERASER_FUNCTION.name: [
            tables[r.JOBS_TABLE.id],
            tables[r.RUNS_TABLE.id],
            tables[r.AUDIT_TABLE.id],
            outputs,  # the owner's jobs' outputs and logs
            stack.archive.bucket,  # the owner's archive
            stack.execution.state_machine,  # runs under way, stopped
            stack.execution.express_state_machine,
        ],
        r.ARCHIVER_FUNCTION.name: [
            tables[r.RUNS_TABLE.id],  # its stream
            tables[r.AUDIT_TABLE.id],  # its stream (read only)
            stack.archive.bucket,  # PutObject under the archive's prefix
            stack.archive.dead_letter,  # records failing after their retries
        ],
    }

    assert set(expected) == {f.name for f in r.FUNCTIONS}
    for name, constructs in expected.items():
        statements = allowed(_role_statements(synth, name))
        reached = _logical_ids([s["Resource"] for s in statements])
        reached = {ref for ref in reached if not ref.startswith("AWS::")}  # pseudo parameters
        own_log = stack.functions[name].log_group  # and each writes its own log
        assert reached == {synth.logical_id(c) for c in [*constructs, own_log]}, name


def test_given_the_api_role_when_synthesized_then_it_cannot_start_executions(
    synth: Synthesis,
) -> None:
    actions = _actions(_role_statements(synth, r.API_FUNCTION.name))

    assert {a for a in actions if a.startswith("states:")} == {"states:StopExecution"}
    assert "dynamodb:PutItem" in actions


def test_given_the_api_role_when_synthesized_then_it_only_reads_outputs_the_archive_and_the_signing_secret(
    synth: Synthesis,
) -> None:
    stack = synth.stack
    statements = _role_statements(synth, r.API_FUNCTION.name)
    outputs = synth.logical_id(stack.storage.outputs)
    archive = synth.logical_id(stack.archive.bucket)
    secret = synth.logical_id(stack.notifications.signing_secret)

    assert grants(_on(statements, "s3")) == {
        ("s3:GetObject", f"${{{outputs}.Arn}}/*", "null"),
        # GET /archive: an owner's day listed (prefixes under the archive's only), and the
        # links to its objects signed
        ("s3:GetObject", f"${{{archive}.Arn}}/{r.ARCHIVE_PREFIX}/*", "null"),
        (
            "s3:ListBucket",
            f"${{{archive}.Arn}}",
            json.dumps({"StringLike": {"s3:prefix": [f"{r.ARCHIVE_PREFIX}/*"]}}),
        ),
    }
    assert grants(_on(statements, "secretsmanager")) == {
        ("secretsmanager:GetSecretValue", f"${{{secret}}}", "null")
    }


def test_given_the_runner_role_when_synthesized_then_it_only_appends_logs_writes_outputs_and_reads_secrets_versions(
    synth: Synthesis,
) -> None:
    stack = synth.stack
    statements = _role_statements(synth, r.RUNNER_FUNCTION.name)
    jobs = synth.logical_id(stack.storage.jobs)
    runs = synth.logical_id(stack.storage.runs)
    outputs = synth.logical_id(stack.storage.outputs)

    assert not _on(statements, "sqs")
    assert not _on(statements, "states")
    assert grants(_on(statements, "dynamodb")) == {
        ("dynamodb:UpdateItem", f"${{{runs}.Arn}}", "null"),
        # its owner's secrets' versions (the secrets#<owner> item), read with the job
        ("dynamodb:GetItem", f"${{{jobs}.Arn}}", "null"),
    }
    assert grants(_on(statements, "s3")) == {("s3:PutObject", f"${{{outputs}.Arn}}/*", "null")}


def test_given_no_lambda_targets_listed_when_synthesized_then_the_runner_may_invoke_no_function(
    synth: Synthesis,
) -> None:
    statements = _on(_role_statements(synth, r.RUNNER_FUNCTION.name), "lambda")

    assert grants(statements) == set()


@pytest.mark.parametrize("function", [f.name for f in r.FUNCTIONS])
def test_given_the_default_lambda_scope_when_synthesized_then_the_runner_may_not_invoke_chronoq_function(
    synth: Synthesis, function: str
) -> None:
    arn = rendered(synth.arn(synth.stack.functions[function]))
    denied = denials(_role_statements(synth, r.RUNNER_FUNCTION.name))

    assert ("lambda:InvokeFunction", arn, "null") in denied
    assert ("lambda:InvokeFunction", f"{arn}:*", "null") in denied  # versions and aliases


def test_given_the_runner_role_when_synthesized_then_it_is_denied_nothing_but_invoking_chronoq(
    synth: Synthesis,
) -> None:
    denied = denials(_role_statements(synth, r.RUNNER_FUNCTION.name))
    stack = synth.stack
    functions = [*stack.functions.values(), stack.console.function, stack.monitoring.provider]

    assert denied == {
        ("lambda:InvokeFunction", resource, "null")
        for f in functions
        for resource in (rendered(synth.arn(f)), rendered(synth.arn(f)) + ":*")
    }


@pytest.mark.parametrize("function", [f.name for f in r.FUNCTIONS if f is not r.RUNNER_FUNCTION])
def test_given_the_other_functions_when_synthesized_then_none_is_denied_anything(
    synth: Synthesis, function: str
) -> None:
    assert not denials(_role_statements(synth, function))


def test_given_the_runner_role_when_synthesized_then_it_registers_task_definitions_passing_the_container_roles(
    synth: Synthesis,
) -> None:
    containers = synth.stack.containers
    statements = _role_statements(synth, r.RUNNER_FUNCTION.name)

    assert grants(_on(statements, "ecs")) == {  # neither supports resource-level permissions
        ("ecs:DescribeTaskDefinition", "*", "null"),
        ("ecs:RegisterTaskDefinition", "*", "null"),
    }
    assert grants(_on(statements, "iam")) == {
        ("iam:PassRole", rendered(synth.arn(containers.execution_role)), "null"),
        ("iam:PassRole", rendered(synth.arn(containers.task_role)), "null"),
    }
    own_log = rendered(synth.arn(synth.stack.execution.runner.log_group))
    assert {g for g in grants(_on(statements, "logs")) if g[1] != own_log} == {
        ("logs:GetLogEvents", rendered(synth.arn(containers.log_group)), "null")
    }


def test_given_the_worker_role_when_synthesized_then_it_only_claims_runs(
    synth: Synthesis,
) -> None:
    runs = synth.logical_id(synth.stack.storage.runs)
    jobs = synth.logical_id(synth.stack.storage.jobs)
    schedule = synth.logical_id(synth.stack.storage.schedule)
    statements = _role_statements(synth, r.WORKER_FUNCTION.name)
    on_runs = [s for s in statements if runs in _logical_ids(s["Resource"])]
    on_jobs = [s for s in statements if jobs in _logical_ids(s["Resource"])]

    assert _actions(on_runs) == {
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",  # the waiting index only (the runs a flow parked)
    }
    (query,) = [s for s in on_runs if s["Action"] == "dynamodb:Query"]
    assert rendered(query["Resource"]).endswith(f"/index/{r.RUNS_WAITING_INDEX}")
    assert _actions(on_jobs) == {"dynamodb:BatchGetItem", "dynamodb:UpdateItem", "dynamodb:GetItem"}
    assert not [s for s in statements if schedule in _logical_ids(s["Resource"])]
    assert {a for a in _actions(statements) if a.startswith("states:")} == {
        "states:StartExecution",
        "states:StopExecution",
    }


def test_given_task_layers_and_modules_when_synthesized_then_only_the_runner_and_api_get_them(
    tmp_path: Path,
) -> None:
    from aws_cdk import App
    from aws_cdk.assertions import Template
    from chronoq_cdk.stack import ChronoqStack

    arn = "arn:aws:lambda:us-east-1:123456789012:layer:mytasks:3"
    stack = ChronoqStack(
        App(outdir=str(tmp_path)), "Chronoq", task_modules="mytasks.reports", task_layer_arns=[arn]
    )
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function")

    for name, function in stack.functions.items():
        props = functions[stack.get_logical_id(function.node.default_child)]["Properties"]  # type: ignore[arg-type]
        with_tasks = name in (r.API_FUNCTION.name, r.RUNNER_FUNCTION.name)
        assert (arn in props["Layers"]) is with_tasks, name
        assert (
            props["Environment"]["Variables"].get(r.ENV_TASK_MODULES) == "mytasks.reports"
        ) is with_tasks


def test_given_the_synthesized_template_when_sam_reads_it_then_every_function_and_layer_names_its_asset(
    synth: Synthesis,
) -> None:
    """``sam local invoke`` finds a function's code (and its layer's) in cdk.out by the
    asset metadata the CDK CLI writes; `make synth` writes it too."""
    found = {
        **synth.of_type("AWS::Lambda::Function"),
        **synth.of_type("AWS::Lambda::LayerVersion"),
    }
    assert found
    for logical_id, resource in found.items():
        metadata = resource.get("Metadata", {})
        assert metadata.get("aws:asset:path", "").startswith("asset."), logical_id
        expected = "Code" if resource["Type"] == "AWS::Lambda::Function" else "Content"
        assert metadata.get("aws:asset:property") == expected, logical_id


def test_given_the_local_mode_pages_sam_table_when_read_then_each_logical_id_is_a_function_of_the_template(
    synth: Synthesis,
) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "local.md").read_text()
    table = page[page.index("| Function | Logical id |") :].split("\n\n", 1)[0]
    named = dict(re.findall(r"^\| (\w+) \| `(\w+)` \|", table, re.MULTILINE))

    functions = synth.of_type("AWS::Lambda::Function")
    assert set(named) == {f.name for f in r.FUNCTIONS} | {"console"}  # every function
    for name, logical_id in named.items():
        assert logical_id in functions, (name, logical_id)
        assert functions[logical_id]["Properties"]["Environment"]["Variables"][
            "POWERTOOLS_SERVICE_NAME"
        ].endswith(name), (name, logical_id)
