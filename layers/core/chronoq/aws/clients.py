"""AWS clients, built on first use (never at import time) and reused by a warm Lambda."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from chronoq import resources as r

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=50)


@cache
def _client(service: str) -> Any:
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


@cache
def lambda_invoker() -> LambdaClient:
    """A Lambda client for synchronous invocations of targets: never retried by the SDK
    (the run's retry policy decides), waiting as long as any function may run."""
    config = Config(
        retries={"total_max_attempts": 1},
        read_timeout=r.MAX_TIMEOUT_SECONDS + 10,
        connect_timeout=10,
    )
    return boto3.client("lambda", config=config)


def reset() -> None:
    """Forget every client (tests and the local runtime call this when the endpoint changes)."""
    _client.cache_clear()
    lambda_invoker.cache_clear()
