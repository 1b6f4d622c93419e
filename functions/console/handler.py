"""Console: the web console's static files, on the HTTP API's routes without an authorizer
(``GET /``, ``GET /console/{proxy+}``). The page then calls the API with the user's token."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from chronoq import console
from chronoq.origin import refuse_client_context


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refuse_client_context(context)  # a job's lambda target, not API Gateway
    return console.answer(event)
