"""Dispatcher: invoked once a minute by an EventBridge rule (one per group of shards);
enqueues the coming minutes of its shards, stopping cleanly before its timeout."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose
from chronoq.origin import refuse_client_context
from chronoq.settings import DispatcherSettings, load

logger = Logger(service="chronoq-dispatcher")
dispatcher = compose.dispatcher(load(DispatcherSettings))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not its event source
    # the rule of a group of shards names them (see cdk: dispatch groups); else every shard
    report = asdict(
        dispatcher.dispatch(
            event.get("shards"), lambda: context.get_remaining_time_in_millis() / 1000
        )
    )
    # (a tick with nothing to report is logged only at DEBUG: a line a minute is paid for)
    busy = report["dispatched"] or report["missed"] or report["unfinished"]
    log = logger.info if busy else logger.debug
    log("dispatched", extra={"report": report, "tick": event.get("time")})
    return report
