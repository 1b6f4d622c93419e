"""The synthesized stack against AWS's own rules: cdk-nag's AwsSolutions and Serverless packs,
run on the session's one synthesized stack. Every finding is either fixed or acknowledged
beside its construct, with its reason (cdk/chronoq_cdk/rules.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def _plain_queue_stack(app: App) -> Stack:
    stack = Stack(app, "Rules")
    sqs.Queue(stack, "Plain")
    return stack


def test_given_a_stack_breaking_the_rules_when_synthesized_as_make_synth_does_then_it_fails_listing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import app as cdk_app

    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path / "out"))
    monkeypatch.setattr(cdk_app, "stack_from_context", _plain_queue_stack)

    with pytest.raises(SystemExit) as exited:
        cdk_app.main([cdk_app.RULES_FLAG])

    assert exited.value.code == 1
    said = capsys.readouterr().err
    assert "AwsSolutions-SQS3 at Rules/Plain" in said
    assert "Serverless-SQSRedrivePolicy at Rules/Plain" in said
    assert not list((tmp_path / "out").glob("*.template.json"))  # nothing synthesized

    cdk_app.main([])  # (cdk synth and deploy: no check, as before)
    assert (tmp_path / "out" / "Rules.template.json").is_file()


def test_given_the_stack_when_its_findings_are_listed_as_make_synth_does_then_none_is_left(
    synth: Synthesis,
) -> None:
    from app import rule_findings

    assert rule_findings(synth.stack) == []
