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
  what lambda, sqs, sns and eventbridge targets may reach (default: any in the deployment's
  own account and region; an empty list: none). Whatever they allow, targets never reach
  chronoq's own functions, queues or topic.
"""

from __future__ import annotations

import os
from pathlib import Path

from aws_cdk import App
from chronoq import resources as r
from chronoq_cdk.access import TargetAccess, context_list
from chronoq_cdk.stack import ChronoqStack


def main() -> None:
    app = App(outdir=os.environ.get("CDK_OUTDIR", str(Path(__file__).parents[1] / "cdk.out")))
    shards = app.node.try_get_context("shards")
    groups = app.node.try_get_context("dispatch_groups")
    statuses = context_list(app.node, "topic_statuses")
    ChronoqStack(
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
    )
    app.synth()


if __name__ == "__main__":
    main()
