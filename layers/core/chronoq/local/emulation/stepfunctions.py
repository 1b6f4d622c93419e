"""moto's Step Functions as chronoq's state machines see it on AWS: one client per service,
each definition parsed once, EXPRESS executions as AWS runs them, and Wait states and state
entry times by chronoq local's clock; and how often it looks whether a container task ended
(``container_checks_every``)."""

from __future__ import annotations

import datetime
import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chronoq.local.emulation.state import active


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


def parse_each_definition_once() -> None:
    """moto parses a state machine's ASL anew for every execution (about 0.1 s of CPU for
    chronoq's), and once more to validate it when the state machine is created; Step
    Functions starts executions of a stored definition. Parse each definition once, for
    both, and keep it for the next start (chronoq.local.parsed): the parsed program is
    immutable, executions keep their state in their own environment (a definition that
    fails to parse is not kept: it fails again)."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    if getattr(AmazonStateLanguageParser.parse, "cached", False):
        return
    from chronoq.local import parsed

    parse = AmazonStateLanguageParser.parse

    @functools.lru_cache(maxsize=64)
    def once(definition: str) -> tuple[Any, Any]:
        return parsed.program(definition, parse)

    once.cached = True  # type: ignore[attr-defined]
    AmazonStateLanguageParser.parse = staticmethod(once)  # type: ignore[method-assign]


def express_executions_as_on_aws() -> None:
    """moto treats EXPRESS state machines as STANDARD ones. On AWS, starting an EXPRESS
    execution is not idempotent (the same name again starts another execution) and
    StopExecution refuses EXPRESS executions: so locally too, so that nothing chronoq does
    locally leans on what AWS would not do."""
    import uuid

    from moto.stepfunctions.exceptions import ValidationException
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start = StepFunctionsParserBackend.start_execution
    if getattr(start, "express_as_on_aws", False):
        return

    def _express(machine: Any) -> bool:
        return (
            str(getattr(machine, "type", "")).upper() == "EXPRESS"
        )  # (sm_type is always STANDARD)

    @functools.wraps(start)
    def start_execution(
        self: Any, state_machine_arn: str, name: Any = None, *a: Any, **k: Any
    ) -> Any:
        if name is not None and _express(self.describe_state_machine(state_machine_arn)):
            name = f"{name}-{uuid.uuid4().hex[:12]}"  # a new execution, whatever the name
        return start(self, state_machine_arn, name, *a, **k)

    start_execution.express_as_on_aws = True  # type: ignore[attr-defined]
    StepFunctionsParserBackend.start_execution = start_execution  # type: ignore[method-assign]

    stop = StepFunctionsParserBackend.stop_execution

    @functools.wraps(stop)
    def stop_execution(self: Any, execution_arn: str, *a: Any, **k: Any) -> Any:
        execution = self.describe_execution(execution_arn)
        if _express(getattr(execution, "state_machine", None)):
            raise ValidationException("This operation is not supported by EXPRESS state machines")
        return stop(self, execution_arn, *a, **k)

    StepFunctionsParserBackend.stop_execution = stop_execution  # type: ignore[method-assign]


class _StateDatetime:
    """The ``datetime`` module as moto's state evaluation sees it: ``datetime.now`` is the
    local clock's (a state's ``$$.State.EnteredTime``)."""

    timezone = datetime.timezone

    class datetime:
        @staticmethod
        def now(tz: datetime.tzinfo | None = None) -> datetime.datetime:
            instant = active().clock.now()
            return instant.astimezone(tz) if tz is not None else instant.replace(tzinfo=None)


def waits_follow_the_clock() -> None:
    """moto's Wait states wait by the wall clock, a Timestamp whole seconds truncated (one
    0.7 s away is not waited for at all), and its states enter at the wall clock's time. Make
    them follow chronoq local's clock (the active state's: see chronoq.local.emulation.state):
    a Timestamp waited for to the millisecond, as Step Functions does; Seconds and SecondsPath
    waits, and state entry times, by that clock too (a test's clock may skip the waits, or
    hold them until it moves)."""
    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
        WaitFunction,
    )

    if getattr(Timestamp._wait_interval, "precise", False):
        return

    def seconds(self: Any, env: Any) -> float:
        self.string.eval(env=env)
        text: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=text)
        if timestamp is None:
            from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
                FailureEventException,
            )

            raise FailureEventException(self._create_failure_event(env, text))
        now = active().clock.now()
        now = now.replace(tzinfo=None)  # (moto reads the timestamp as naive UTC)
        return float((timestamp - now).total_seconds())

    def wait(self: Any, env: Any, wait_seconds: float) -> None:
        active().clock.wait(wait_seconds, env.program_state_event, env.is_running)

    wait.precise = True  # type: ignore[attr-defined]
    Timestamp._get_wait_seconds = seconds  # type: ignore[method-assign,assignment]
    Timestamp._wait_interval = wait  # type: ignore[method-assign]
    WaitFunction._wait_interval = wait  # type: ignore[method-assign]
    state.datetime = _StateDatetime  # type: ignore[attr-defined,assignment]


@contextmanager
def container_checks_every(seconds: float) -> Iterator[None]:
    """Within this, moto's Step Functions looks whether a container task (ECS RunTask .sync)
    has stopped every ``seconds`` of the wall clock, rather than every half second (so that a
    container run ends that much sooner after its task)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback as callback,
    )

    name = "_DELAY_SECONDS_SYNC_CONDITION_CHECK"  # (a Final in moto: set, not assigned)
    before = getattr(callback, name)
    setattr(callback, name, seconds)
    try:
        yield
    finally:
        setattr(callback, name, before)
