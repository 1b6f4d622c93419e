"""AWS clients, built on first use (never at import time) and reused by a warm Lambda."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
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


def reset() -> None:
    """Forget every client (tests and the local runtime call this when the endpoint changes)."""
    _client.cache_clear()
