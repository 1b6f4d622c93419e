"""The core layer: the chronoq package and its runtime dependencies, bundled without Docker."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from chronoq import resources as r
from constructs import Construct

from .functions import ARCHITECTURE, RUNTIME

PACKAGE_DIR = Path(r.__file__).resolve().parent
LAYER_DIR = PACKAGE_DIR.parent
REQUIREMENTS = LAYER_DIR / "requirements.txt"
#: Subpackages that only serve the local runtime, the command line and the tests.
LOCAL_ONLY = ("local", "cli", "fakes")
#: Left out of the asset's source hash: changing them does not rebuild the layer.
NOT_SHIPPED = ["*.egg-info", "__pycache__", "*.pyc", *(f"chronoq/{p}" for p in LOCAL_ONLY)]
#: Wheels for the Lambda runtime, whatever the machine that synthesizes.
PIP_INSTALL = [
    "install",
    "--quiet",
    "--no-compile",
    "--only-binary=:all:",
    "--platform=manylinux2014_aarch64",  # the functions run on arm64 (Graviton)
    "--implementation=cp",
    f"--python-version={r.LAMBDA_RUNTIME.removeprefix('python')}",
]


def _left_out(directory: str, names: list[str]) -> set[str]:
    local_only = set(LOCAL_ONLY) if Path(directory) == PACKAGE_DIR else set()
    return {n for n in names if n in local_only or n == "__pycache__" or n.endswith(".pyc")}


@jsii.implements(ILocalBundling)
class LocalBundler:
    """Copies the package and pip-installs its requirements into ``python/``."""

    def try_bundle(self, output_dir: str, *, image: DockerImage, **options: Any) -> bool:
        target = Path(output_dir) / "python"
        shutil.copytree(PACKAGE_DIR, target / PACKAGE_DIR.name, ignore=_left_out)
        subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
            [sys.executable, "-m", "pip", *PIP_INSTALL, f"--target={target}", "-r", REQUIREMENTS],
            check=True,
        )
        return True


class CoreLayer(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        code = lambda_.Code.from_asset(
            str(LAYER_DIR),
            asset_hash_type=AssetHashType.SOURCE,
            exclude=NOT_SHIPPED,
            bundling=BundlingOptions(image=RUNTIME.bundling_image, local=LocalBundler()),
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=code,
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="chronoq core library and its runtime dependencies",
        )
