"""Where moto's emulation differs from AWS in a way chronoq depends on, align it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def exact_wait_timestamps() -> None:
    """Step Functions' ``Wait`` with ``Timestamp``/``TimestampPath`` ends at that second.
    moto's interpreter rounds the wait down to whole seconds of its local clock, ending up
    to a second early; this waits until the instant itself."""
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )

    def _eval_body(self: Any, env: Any) -> None:
        self.string.eval(env=env)
        text: str = env.stack.pop()
        parsed = self._from_timestamp_string(text)
        if parsed is None:
            from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
                FailureEventException,
            )

            raise FailureEventException(self._create_failure_event(env, text))
        target = parsed.replace(tzinfo=UTC)
        while env.is_running():
            remaining = (target - datetime.now(UTC)).total_seconds()
            if remaining <= 0:
                return
            env.program_state_event.wait(remaining)  # pulsed when the execution stops

    Timestamp._eval_body = _eval_body  # type: ignore[method-assign]
