"""Lambda's ``Invoke`` as the run state machine makes it (its ``lambda:invoke`` tasks): chronoq's
own functions run in the in-process runtime (chronoq.local.lambdas), straight from the
interpreter's thread, with the answer shape boto3 gives; any other function is the embedded
AWS's."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from chronoq.local.lambdas import FunctionError, LambdaRuntime

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]


def function_name(name_or_arn: str) -> str:
    """A function's name from its name or ARN (``arn:aws:lambda:…:function:NAME[:qualifier]``)."""
    if ":function:" in name_or_arn:
        return name_or_arn.split(":function:", 1)[1].split(":", 1)[0]
    return name_or_arn


class LocalFunctions:
    """A Lambda client's ``invoke`` for the state machine's tasks."""

    def __init__(
        self,
        runtime: LambdaRuntime,
        other: Callable[[], Any],
        observer: Observer | None = None,
    ) -> None:
        self._runtime = runtime
        self._own = frozenset(runtime.names())
        self._other = other
        self._observer = observer

    def invoke(self, FunctionName: str, Payload: bytes | str = b"{}", **kwargs: Any) -> Any:
        name = function_name(FunctionName)
        if name not in self._own:
            return self._other().invoke(FunctionName=FunctionName, Payload=Payload, **kwargs)
        event = json.loads(Payload or b"{}")
        answer: dict[str, Any] = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
        try:
            result = self._runtime.invoke(name, event)
        except FunctionError as error:
            answer["FunctionError"] = "Unhandled"
            result = error.payload
        if self._observer is not None:
            self._observer("lambda:Invoke", {"FunctionName": FunctionName}, answer)
        answer["Payload"] = io.BytesIO(json.dumps(result).encode())
        return answer
