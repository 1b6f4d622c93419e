"""The OpenAPI document as the api function generates it, and the command that writes it to
``openapi.json`` at the repository's root:

    PYTHONPATH=layers/core:. .venv/bin/python -m tests.api.document
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import boto3
from chronoq import resources as r
from chronoq import settings
from chronoq.aws import clients

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "openapi.json"

#: Settings for importing the api function: never used to call AWS (the document is built
#: from its routes alone).
_PLACEHOLDERS = {
    r.ENV_JOBS_TABLE: "jobs",
    r.ENV_SCHEDULE_TABLE: "schedule",
    r.ENV_RUNS_TABLE: "runs",
    r.ENV_AUDIT_TABLE: "audit",
    r.ENV_SHARDS: "1",
    r.ENV_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:run",
    r.ENV_OUTPUT_BUCKET: "outputs",
    r.ENV_ARCHIVE_BUCKET: "archive",
    r.ENV_SIGNING_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:signing",
    r.ENV_SECRETS_PATH: "/chronoq/test/secrets",
    **{
        env: f"https://sqs.us-east-1.amazonaws.com/123456789012/{p}"
        for p, env in r.ENV_QUEUE_URLS.items()
    },
}


def generated() -> dict[str, Any]:
    """The document the api function serves at ``GET /openapi.json``."""
    region = os.environ.get("AWS_DEFAULT_REGION")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # (its clients are built)
    session = boto3.DEFAULT_SESSION
    try:
        with settings.environment(_PLACEHOLDERS):
            handler = importlib.import_module("functions.api.handler")
    finally:
        # Neither its clients nor the session they made are left for the tests after this
        # one: moto intercepts only sessions made once it has started.
        clients.reset()
        boto3.DEFAULT_SESSION = session
        if region is None:
            del os.environ["AWS_DEFAULT_REGION"]
    document: dict[str, Any] = handler._document()
    return document


def text(document: dict[str, Any]) -> str:
    """The document as it is committed."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    COMMITTED.write_text(text(generated()))
    print(f"wrote {COMMITTED}")


if __name__ == "__main__":
    main()
