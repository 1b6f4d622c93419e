"""When a run's message reaches a worker: the delay every queue adapter gives it (the SQS
adapter sends it as DelaySeconds, the fake queues record it)."""

from __future__ import annotations

import math
from datetime import datetime

from chronoq import resources as r
from chronoq.domain.runs import Priority, RunMessage


def delay_seconds(scheduled_at: datetime, now: datetime, priority: Priority) -> int:
    """Seconds to hold a run back so that it reaches a worker about when it is due, the
    earlier the higher its priority (see DISPATCH_LEAD_SECONDS); none for a run due now or
    past; clamped to what SQS allows."""
    if scheduled_at <= now:
        return 0
    lead = r.DISPATCH_LEAD_SECONDS[priority.value]
    seconds = math.floor((scheduled_at - now).total_seconds()) - lead
    return max(0, min(r.MAX_DELAY_SECONDS, seconds))


def message_delay(message: RunMessage, now: datetime, priority: Priority) -> int:
    """The delay of a run's message: to its planned start (or the second its flow reserved
    for it) as ``delay_seconds`` says; a run its flow held back: until it looks again."""
    if message.not_before is not None and not message.reserved:
        seconds = math.ceil((message.not_before - now).total_seconds())
        return max(0, min(r.MAX_DELAY_SECONDS, seconds))
    return delay_seconds(message.due_at, now, priority)
