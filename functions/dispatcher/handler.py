"""Dispatcher: invoked once a minute by an EventBridge rule (one per group of shards);
enqueues the coming minutes of its shards, stopping cleanly before its timeout."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import compose, heartbeat
from chronoq import metrics as chronoq_metrics
from chronoq import resources as r
from chronoq.domain.time import utc_now
from chronoq.origin import refuse_client_context
from chronoq.settings import DispatcherSettings, load

logger = Logger(service="chronoq-dispatcher")
metrics = chronoq_metrics.for_function(r.DISPATCHER_FUNCTION)
dispatcher = compose.dispatcher(load(DispatcherSettings))


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not its event source
    if heartbeat.ENSURE in event:  # the deployment (and chronoq local) at start: see heartbeat
        return heartbeat.ensure(dispatcher.store, dispatcher.index, utc_now())
    started = time.monotonic()
    # the rule of a group of shards names them (see cdk: dispatch groups); else every shard
    done = dispatcher.dispatch(
        event.get("shards"), lambda: context.get_remaining_time_in_millis() / 1000
    )
    elapsed = time.monotonic() - started
    chronoq_metrics.dispatched(metrics, done.dispatched, done.missed, done.behind, elapsed)
    chronoq_metrics.flush(metrics)
    report = asdict(done)
    # (a tick with nothing to report is logged only at DEBUG: a line a minute is paid for)
    busy = report["dispatched"] or report["missed"] or report["unfinished"]
    log = logger.info if busy else logger.debug
    log("dispatched", extra={"report": report, "tick": event.get("time")})
    return report
