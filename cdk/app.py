"""CDK entry point: synthesizes the Chronoq stack.

Context values (``-c key=value``, or in cdk.json; lists as JSON lists or comma-separated):

- ``shards``: number of schedule shards (default chronoq.resources.DEFAULT_SHARDS);
- ``dispatch_groups``: dispatcher invocations per minute, each for its own group of shards,
  in parallel (default 1: one for every shard; at most ``shards``);
- ``task_modules``, ``task_layers``: the deployment's own Python tasks and their layers;
- ``email_sender``: the SES identity notification e-mails come from (default: no e-mail);
- ``topic_statuses``: the final statuses of the runs published to the SNS topic (default
  chronoq.resources.DEFAULT_TOPIC_STATUSES: FAILED, TIMED_OUT, MISSED);
- ``output_buckets``: names of buckets, besides the deployment's own, jobs may write
  their output to (bucket ARNs and s3:// URIs are read as their buckets' names; default: none);
- ``lambda_targets``, ``queue_targets``, ``topic_targets``, ``event_bus_targets``: ARNs of
  what lambda, sqs, sns and eventbridge targets may reach (default: none; ``*``: any in the
  deployment's own account and region; ``*`` inside an ARN matches any characters). The API
  refuses (422) a job naming anything else, and IAM grants exactly these. Whatever they
  allow, targets never reach chronoq's own functions, queues or topic.
- ``container_images``: images container targets may run (patterns such as
  ``123456789012.dkr.ecr.eu-west-1.amazonaws.com/jobs/*``; default: none; ``*``: any);
  ``max_container_cpu`` (CPU units, default 1024), ``max_container_memory`` (MiB, default
  2048), ``max_container_seconds`` (default 3600): caps on container targets.
- ``block_private_targets``: the SSRF guard of http targets and webhooks (default true:
  loopback, private, link-local, unique-local and metadata addresses refused);
  ``allowed_target_networks``: CIDRs they may call all the same (default: none);
- ``max_jobs_per_owner``: jobs one owner may have (default
  chronoq.domain.limits.DEFAULT_MAX_JOBS_PER_OWNER);
- ``max_running_backfills_per_job``, ``max_running_backfills_per_owner``,
  ``max_queued_runs_per_owner``: what one owner's backfills and re-runs may hold at once;
  ``max_waiting_triggers_per_job``: a job's manual triggers not started yet;
  ``max_asked_runs_in_flight``: an owner's runs asked for under way at once;
  ``max_runs_in_flight``: an owner's runs of every kind under way at once (defaults
  chronoq.domain.limits.DEFAULT_MAX_RUNNING_BACKFILLS_PER_JOB, ...: see docs/api/limits.md);
- ``api_burst_limit``, ``api_rate_limit``: API Gateway throttling of the HTTP API's stage
  (defaults chronoq.resources.DEFAULT_API_BURST_LIMIT and DEFAULT_API_RATE_LIMIT).
- ``mfa_required``: every user of the pool must sign in with a second factor (default false:
  MFA optional, an authenticator app for those who set one up);
- ``worker_max_concurrency``: batches the worker runs at once per priority queue (default
  chronoq.resources.DEFAULT_WORKER_MAX_CONCURRENCY); ``runner_reserved_concurrency``:
  concurrent executions reserved for (and the most taken by) the runner (default
  chronoq.resources.DEFAULT_RUNNER_RESERVED_CONCURRENCY; 0: none reserved);
- ``termination_protection``: CloudFormation refuses to delete the stack until it is turned
  off (default false);
- ``alarm_email``: an address the alarm topic sends every alarm to (an e-mail subscription,
  confirmed from the first message; default: none, subscribe as you like).
- ``archive_infrequent_access_days``: days after which archived objects move to S3
  Standard-IA (default chronoq.resources.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS; 0: never;
  else at least 30); ``archive_expiry_days``: days after which they are deleted (default
  chronoq.resources.DEFAULT_ARCHIVE_EXPIRY_DAYS; 0: kept for ever).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import App, Stack
from chronoq import resources as r
from chronoq.domain import limits as lim
from chronoq.domain.limits import SETTINGS as limit_settings
from chronoq.domain.limits import Limits
from chronoq_cdk.access import TargetAccess, context_list
from chronoq_cdk.application import new_app
from chronoq_cdk.stack import ChronoqStack


def _flag(value: object, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"expected true or false, not {value!r}")
    return text == "true"


def _number(app: App, key: str, default: int) -> int:
    value = app.node.try_get_context(key)
    return default if value is None else int(value)


def stack_from_context(app: App) -> ChronoqStack:
    """The Chronoq stack, configured by ``app``'s context (see above)."""
    shards = app.node.try_get_context("shards")
    groups = app.node.try_get_context("dispatch_groups")
    statuses = context_list(app.node, "topic_statuses")
    return ChronoqStack(
        app,
        "Chronoq",
        shards=r.DEFAULT_SHARDS if shards is None else int(shards),
        dispatch_groups=r.DEFAULT_DISPATCH_GROUPS if groups is None else int(groups),
        # Modules of the deployment's own Python tasks, shipped in a layer of its own.
        task_modules=app.node.try_get_context("task_modules") or "",
        task_layer_arns=context_list(app.node, "task_layers") or [],
        email_sender=app.node.try_get_context("email_sender") or "",
        topic_statuses=r.DEFAULT_TOPIC_STATUSES if statuses is None else statuses,
        target_access=TargetAccess.from_context(app.node),
        block_private_targets=_flag(app.node.try_get_context("block_private_targets"), True),
        allowed_target_networks=context_list(app.node, "allowed_target_networks") or [],
        max_jobs_per_owner=_number(app, "max_jobs_per_owner", lim.DEFAULT_MAX_JOBS_PER_OWNER),
        owner_limits=Limits(**{s.field: _number(app, s.name, s.default) for s in limit_settings}),
        api_burst_limit=_number(app, "api_burst_limit", r.DEFAULT_API_BURST_LIMIT),
        api_rate_limit=_number(app, "api_rate_limit", r.DEFAULT_API_RATE_LIMIT),
        mfa_required=_flag(app.node.try_get_context("mfa_required"), False),
        worker_max_concurrency=_number(
            app, "worker_max_concurrency", r.DEFAULT_WORKER_MAX_CONCURRENCY
        ),
        runner_reserved_concurrency=_number(
            app, "runner_reserved_concurrency", r.DEFAULT_RUNNER_RESERVED_CONCURRENCY
        ),
        termination_protection=_flag(app.node.try_get_context("termination_protection"), False),
        alarm_email=app.node.try_get_context("alarm_email") or "",
        archive_infrequent_access_days=_number(
            app, "archive_infrequent_access_days", r.DEFAULT_ARCHIVE_INFREQUENT_ACCESS_DAYS
        ),
        archive_expiry_days=_number(app, "archive_expiry_days", r.DEFAULT_ARCHIVE_EXPIRY_DAYS),
    )


#: ``python cdk/app.py --rules`` (make synth): check the stack against cdk-nag's packs first.
RULES_FLAG = "--rules"


def rule_findings(stack: Stack) -> list[str]:
    """What cdk-nag's AwsSolutions and Serverless packs find in ``stack`` and nobody
    acknowledged (cdk/chronoq_cdk/rules.py), one ``rule at construct path`` each."""
    from cdk_nag import AwsSolutionsChecks, ServerlessChecks

    return [
        f"{violation.rule_name} at {resource.construct_path or '?'}"
        for pack in (AwsSolutionsChecks(), ServerlessChecks())
        for violation in pack.validate_scope(stack).violations
        for resource in violation.violating_resources
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Synthesize the stack into cdk.out/ (or $CDK_OUTDIR); with ``--rules``, only once
    cdk-nag's packs find nothing left unacknowledged in it (else exit 1, listing them).
    (``cdk synth``/``deploy`` run it without: deploying does not need cdk-nag.)"""
    args = sys.argv[1:] if argv is None else list(argv)
    app = new_app(os.environ.get("CDK_OUTDIR", str(Path(__file__).parents[1] / "cdk.out")))
    stack = stack_from_context(app)
    if RULES_FLAG in args:
        left = rule_findings(stack)
        if left:
            listed = "\n".join(f"  {finding}" for finding in left)
            print(
                f"cdk-nag (AwsSolutions, Serverless): fix or acknowledge in"
                f" cdk/chronoq_cdk/rules.py:\n{listed}",
                file=sys.stderr,
            )
            sys.exit(1)
        print("cdk-nag (AwsSolutions, Serverless): nothing left unacknowledged", file=sys.stderr)
    app.synth()


if __name__ == "__main__":
    main()
