"""The API function's event handler: Powertools' HTTP API resolver, keeping the request it
resolves to the thread resolving it.

Powertools keeps the event being resolved (and the Lambda context) on its ``BaseRouter``
class: one process of Lambda serves one invocation at a time, so one place is enough there.
``chronoq local`` serves API requests concurrently in one process, each in its own container
(chronoq.local.lambdas) of the one handler file: two requests resolved at once would read each
other's event (its body, its caller's claims) from the shared class. This resolver reads both
from the resolving thread's own state instead; on Lambda it behaves as Powertools' does."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.typing import LambdaContext


class _Resolving(threading.local):
    event: APIGatewayProxyEventV2 | None = None
    context: LambdaContext | None = None


class HttpResolver(APIGatewayHttpResolver):
    """APIGatewayHttpResolver whose ``current_event`` and ``lambda_context`` are those of the
    request the calling thread resolves."""

    _resolving = _Resolving()

    @property  # type: ignore[override]
    def current_event(self) -> APIGatewayProxyEventV2:
        event = self._resolving.event
        assert event is not None, "no request is being resolved in this thread"
        return event

    @current_event.setter
    def current_event(self, value: APIGatewayProxyEventV2) -> None:
        self._resolving.event = value

    @property
    def lambda_context(self) -> LambdaContext:
        context = self._resolving.context
        assert context is not None, "no request is being resolved in this thread"
        return context

    @lambda_context.setter
    def lambda_context(self, value: LambdaContext) -> None:
        self._resolving.context = value

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        self._resolving.event = self._to_proxy_event(dict(event))  # type: ignore[assignment]
        self._resolving.context = context
        try:
            return super().resolve(event, context)
        finally:
            self._resolving.event = None
            self._resolving.context = None
