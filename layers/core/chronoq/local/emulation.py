"""Where moto's emulation differs from AWS in a way chronoq depends on, align it."""

from __future__ import annotations

import functools
import sys
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


def reuse_state_machine_clients() -> None:
    """moto's interpreter builds a new boto3 client for every task it runs, which costs
    more than the task itself when hundreds of runs start together; Step Functions' own
    service calls cost nothing of the sort. Reuse one client per region and service."""
    import importlib
    import pkgutil

    from moto.stepfunctions.parser.asl.component.state.exec import state_task
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for
    if getattr(original, "reused", False):
        return

    @functools.cache
    def shared(region: str, service: str) -> Any:
        return original(region=region, service=service)

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        return shared(region, service)

    boto_client_for.reused = True  # type: ignore[attr-defined]
    for info in pkgutil.walk_packages(state_task.__path__, state_task.__name__ + "."):
        importlib.import_module(info.name)
    for name, module in list(sys.modules.items()):
        if (
            name.startswith("moto.stepfunctions.")
            and getattr(module, "boto_client_for", None) is original
        ):
            module.boto_client_for = boto_client_for  # type: ignore[attr-defined]
