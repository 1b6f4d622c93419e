"""The synthesized stack against AWS's own rules: cdk-nag's AwsSolutions and Serverless packs,
run on the session's one synthesized stack. Every finding is either fixed or acknowledged
beside its construct, with its reason (cdk/chronoq_cdk/rules.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from tests.infra.synthesis import Synthesis


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str


def findings(stack: Stack) -> list[Finding]:
    """What both packs find in ``stack`` and nobody acknowledged."""
    found = []
    for pack in (AwsSolutionsChecks(), ServerlessChecks()):
        report = pack.validate_scope(stack)
        found += [
            Finding(violation.rule_name, resource.construct_path or "?")
            for violation in report.violations
            for resource in violation.violating_resources
        ]
    return found


@pytest.fixture(scope="module")
def left(synth: Synthesis) -> list[Finding]:
    return findings(synth.stack)


def test_given_the_stack_when_checked_against_aws_solutions_and_serverless_rules_then_nothing_is_left(
    left: list[Finding],
) -> None:
    listed = "\n".join(f"{f.rule} at {f.path}" for f in left)

    assert not left, f"fix or acknowledge (cdk/chronoq_cdk/rules.py):\n{listed}"


def test_given_a_queue_breaking_the_rules_when_checked_then_its_findings_are_reported() -> None:
    """The packs really look: an unencrypted queue without a dead-letter queue is found."""
    stack = Stack(App(), "Rules")
    sqs.Queue(stack, "Plain")

    rules = {f.rule for f in findings(stack)}

    assert {"AwsSolutions-SQS3", "AwsSolutions-SQS4", "Serverless-SQSRedrivePolicy"} <= rules
