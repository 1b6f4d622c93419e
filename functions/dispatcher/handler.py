"""Dispatcher: invoked once a minute by an EventBridge rule; enqueues the coming minute."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.settings import DispatcherSettings, load

logger = Logger(service="chronoq-dispatcher")
dispatcher = compose.dispatcher(load(DispatcherSettings))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = asdict(dispatcher.dispatch())
    logger.info("dispatched", extra={"report": report, "tick": event.get("time")})
    return report
