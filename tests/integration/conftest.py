from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from chronoq import resources as r
from chronoq.local.aws import LocalAWS, function_name

from tests.support import Sink, http_sink


class Harness:
    """moto with chronoq's resources, and the handlers invoked through the local Lambda
    runtime exactly as Step Functions and the drivers invoke them."""

    def __init__(self, aws: LocalAWS) -> None:
        self.aws = aws

    def invoke(self, function: r.Function, event: Any) -> Any:
        assert self.aws.runtime is not None
        return self.aws.runtime.invoke(function_name(function), event)

    def api(self, event: dict[str, Any]) -> tuple[int, Any]:
        answer = self.invoke(r.API_FUNCTION, event)
        return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None

    def receive(self, priority: str = "normal") -> list[dict[str, Any]]:
        """Every message on a queue, delayed ones included (waits out their delay)."""
        sqs = self.aws.client("sqs")
        url = self.aws.queue_urls[priority]
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return list(answer.get("Messages", []))


@pytest.fixture
def harness() -> Iterator[Harness]:
    saved = dict(os.environ)
    aws = LocalAWS(shards=4).start()
    try:
        yield Harness(aws)
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def sink() -> Iterator[Sink]:
    with http_sink() as s:
        yield s
