"""AWS clients, built on first use (never at import time) and reused by a warm Lambda."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from chronoq.domain import limits as lim

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=50)

#: Services answered in this process by objects with a client's methods instead of an
#: endpoint: chronoq local's engine (chronoq.local.engine) serves chronoq's own tables, queues
#: and state machines this way. Empty in AWS.
_SERVED: dict[str, Any] = {}


def serve(services: dict[str, Any]) -> None:
    """Answer ``services`` (name -> an object with that client's methods) in this process;
    an empty dict: every service from its endpoint again."""
    _SERVED.clear()
    _SERVED.update(services)


def _client(service: str) -> Any:
    served = _SERVED.get(service)
    return served if served is not None else _endpoint_client(service)


@cache
def _endpoint_client(service: str) -> Any:
    return boto3.client(service, config=_CONFIG)  # type: ignore[call-overload]


def dynamodb() -> DynamoDBClient:
    return _client("dynamodb")  # type: ignore[no-any-return]


def sqs() -> SQSClient:
    return _client("sqs")  # type: ignore[no-any-return]


def stepfunctions() -> SFNClient:
    return _client("stepfunctions")  # type: ignore[no-any-return]


def client(service: str) -> Any:
    """A client of any other service (S3, SNS, Lambda, ECS, CloudWatch Logs, ...)."""
    return _client(service)


def s3v4() -> Any:
    """S3, signing with Signature Version 4: what presigned links need (S3 takes no other
    for buckets made since 2020, nor for objects encrypted with KMS)."""
    served = _SERVED.get("s3")
    return served if served is not None else _s3v4_client()


@cache
def _s3v4_client() -> Any:
    return boto3.client("s3", config=_CONFIG.merge(Config(signature_version="s3v4")))


@cache
def lambda_invoker() -> LambdaClient:
    """A Lambda client for synchronous invocations of targets: never retried by the SDK
    (the run's retry policy decides), waiting as long as any function may run."""
    config = Config(
        retries={"total_max_attempts": 1},
        read_timeout=lim.MAX_TIMEOUT_SECONDS + 10,
        connect_timeout=10,
    )
    return boto3.client("lambda", config=config)


def reset() -> None:
    """Forget every client (tests and the local runtime call this when the endpoint changes)."""
    _endpoint_client.cache_clear()
    _s3v4_client.cache_clear()
    lambda_invoker.cache_clear()
