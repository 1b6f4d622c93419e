"""The CDK app as `make synth` and the tests synthesize it."""

from __future__ import annotations

from aws_cdk import App

#: What the CDK CLI sets when it synthesizes (``cdk synth``), set here too for
#: ``python cdk/app.py``: each function's asset path in its metadata (``aws:asset:path``), which
#: ``sam local invoke`` reads to find the function's code in cdk.out.
SYNTH_CONTEXT = {"aws:cdk:enable-asset-metadata": True}


def new_app(outdir: str) -> App:
    return App(outdir=outdir, context=SYNTH_CONTEXT)
