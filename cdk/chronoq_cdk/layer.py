"""The core layer: the chronoq package and its runtime dependencies, bundled without Docker."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from chronoq import resources as r

from .functions import ARCHITECTURE, RUNTIME

PACKAGE_DIR = Path(r.__file__).resolve().parent
LAYER_DIR = PACKAGE_DIR.parent
REQUIREMENTS = LAYER_DIR / "requirements.txt"
#: Subpackages that only serve the local runtime and the command line.
LOCAL_ONLY = ("local", "cli")


def _left_out(directory: str, names: list[str]) -> set[str]:
    local_only = set(LOCAL_ONLY) if Path(directory) == PACKAGE_DIR else set()
    return {n for n in names if n in local_only or n == "__pycache__" or n.endswith(".pyc")}


@jsii.implements(ILocalBundling)
class LocalBundler:
    """Copies the package and pip-installs Lambda wheels of its requirements."""

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python"
        shutil.copytree(PACKAGE_DIR, target / PACKAGE_DIR.name, ignore=_left_out)
        subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--no-compile",
                "--target", str(target),
                "--platform", "manylinux2014_x86_64",
                "--implementation", "cp",
                "--python-version", r.LAMBDA_RUNTIME.removeprefix("python"),
                "--only-binary=:all:",
                "-r", str(REQUIREMENTS),
            ],  # fmt: skip
            check=True,
        )
        return True


class CoreLayer(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        code = lambda_.Code.from_asset(
            str(LAYER_DIR),
            asset_hash_type=AssetHashType.SOURCE,
            exclude=["*.egg-info", "__pycache__", "*.pyc", *(f"chronoq/{p}" for p in LOCAL_ONLY)],
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
