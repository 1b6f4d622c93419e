"""One synthesis of the Chronoq stack, shared by every infra test of the session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from tests.infra.synthesis import Synthesis, staged_assets

#: The CDK app's package lives outside the installed project.
CDK_DIR = str(Path(__file__).resolve().parents[2] / "cdk")
if CDK_DIR not in sys.path:
    sys.path.insert(0, CDK_DIR)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    from chronoq_cdk.application import new_app
    from chronoq_cdk.stack import ChronoqStack

    app = new_app(str(tmp_path_factory.mktemp("cdk.out")))
    stack = ChronoqStack(app, "Chronoq")
    template = dict(Template.from_stack(stack).to_json())
    return Synthesis(stack, template, staged_assets(app.synth(), stack))


#: Every setting a deployment may change from its default, as ``-c key=value`` gives it.
TUNED_CONTEXT = {
    "console_domain_prefix": "chronoq-example",
    "mfa_required": "true",
    "termination_protection": "true",
    "worker_max_concurrency": "10",
    "runner_reserved_concurrency": "0",
    "alarm_email": "ops@example.com",
    "shards": "8",
    "dispatch_groups": "2",
}


@pytest.fixture(scope="session")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Synthesis:
    """The stack as cdk/app.py builds it from a context that changes every hardening and
    concurrency setting (TUNED_CONTEXT); its template only (no assets staged)."""
    from app import stack_from_context
    from aws_cdk import App

    app = App(outdir=str(tmp_path_factory.mktemp("tuned")), context=TUNED_CONTEXT)
    stack = stack_from_context(app)
    return Synthesis(stack, dict(Template.from_stack(stack).to_json()), {})
