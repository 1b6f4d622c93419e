"""Lambda functions built from their definitions in chronoq.resources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from chronoq import resources as r
from constructs import Construct

RUNTIME = lambda_.Runtime(r.LAMBDA_RUNTIME, lambda_.RuntimeFamily.PYTHON)
#: Graviton: about 20% cheaper per GB-second than x86_64, at the same request price.
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


def python_function(
    scope: Construct,
    id: str,
    spec: r.Function,
    *,
    layer: lambda_.ILayerVersion,
    extra_layers: Sequence[lambda_.ILayerVersion] = (),
    environment: Mapping[str, str],
) -> lambda_.Function:
    """The function ``spec`` describes, given exactly the variables ``spec.env`` names."""
    log_group = logs.LogGroup(
        scope, f"{id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    return lambda_.Function(
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
        },
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
    )
