"""Lambda functions built from their definitions in chronoq.resources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from chronoq import resources as r
from constructs import Construct

from .rules import acknowledge

RUNTIME = lambda_.Runtime(r.LAMBDA_RUNTIME, lambda_.RuntimeFamily.PYTHON)
#: Graviton: about 20% cheaper per GB-second than x86_64, at the same request price.
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
LAMBDA_SERVICE = "lambda.amazonaws.com"
RUNTIME_REASON = (
    f"{r.LAMBDA_RUNTIME} is the runtime the core layer's wheels are built for, and the one"
    " a deployment's task layers target (docs/api/targets.md: python); Lambda supports it until"
    " 2028."
)


def python_function(
    scope: Construct,
    id: str,
    spec: r.Function,
    *,
    layer: lambda_.ILayerVersion,
    extra_layers: Sequence[lambda_.ILayerVersion] = (),
    environment: Mapping[str, str],
    no_dead_letters: str,
    reserved_concurrency: int | None = None,
    unscoped: str = "",
) -> lambda_.Function:
    """The function ``spec`` describes, given exactly the variables ``spec.env`` names, with a
    role of its own that may write only to the function's own log group (not AWS's managed
    AWSLambdaBasicExecutionRole, which may create and write to any log group).
    ``no_dead_letters``: why the function has no dead-letter queue for asynchronous
    invocations (how it is invoked, and what happens to an invocation that fails)."""
    log_group = logs.LogGroup(
        scope, f"{id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal(LAMBDA_SERVICE),
        description=f"chronoq {spec.name} function",
    )
    log_group.grant(role, "logs:CreateLogStream", "logs:PutLogEvents")
    function = lambda_.Function(
        scope,
        id,
        description=spec.description,
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        handler=spec.handler,
        code=lambda_.Code.from_asset(str(spec.source_dir), exclude=["__pycache__", "*.pyc"]),
        memory_size=spec.memory_mb,
        timeout=Duration.seconds(spec.timeout_seconds),
        layers=[layer, *extra_layers],
        environment={
            **{name: environment[name] for name in spec.env},
            "POWERTOOLS_SERVICE_NAME": f"chronoq-{spec.name}",
            # chronoq's metrics (chronoq.metrics): one namespace for every function
            "POWERTOOLS_METRICS_NAMESPACE": r.METRICS_NAMESPACE,
        },
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        role=role,
        reserved_concurrent_executions=reserved_concurrency,
    )
    acknowledge(function, "AwsSolutions-L1", RUNTIME_REASON)
    acknowledge(function, "Serverless-LambdaLatestVersion", RUNTIME_REASON)
    acknowledge(function, "Serverless-LambdaDLQ", no_dead_letters)
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "X-Ray's PutTraceSegments and PutTelemetryRecords (active tracing) support no"
        " resource-level permissions." + (f" {unscoped}" if unscoped else ""),
    )
    return function
