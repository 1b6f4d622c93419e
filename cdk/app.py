"""CDK entry point: synthesizes the Chronoq stack (``-c shards=N`` sets the shard count)."""

from __future__ import annotations

import os
from pathlib import Path

from aws_cdk import App
from chronoq import resources as r
from chronoq_cdk.stack import ChronoqStack


def main() -> None:
    app = App(outdir=os.environ.get("CDK_OUTDIR", str(Path(__file__).parents[1] / "cdk.out")))
    shards = app.node.try_get_context("shards")
    ChronoqStack(
        app,
        "Chronoq",
        shards=r.DEFAULT_SHARDS if shards is None else int(shards),
        # Modules of the deployment's own Python tasks, shipped in a layer of its own.
        task_modules=app.node.try_get_context("task_modules") or "",
        task_layer_arns=[
            a for a in (app.node.try_get_context("task_layers") or "").split(",") if a
        ],
    )
    app.synth()


if __name__ == "__main__":
    main()
