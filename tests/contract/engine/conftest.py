"""The contract suite on chronoq local's engine: the same tests as the fakes and the AWS
adapters on moto (each module here takes its tests from the module of the same name one level
up), with the AWS adapters over the engine's tables, queues and state machines
(chronoq.local.engine) instead of moto's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from chronoq.local.aws import ENGINE_LOCAL, LocalAWS

from tests.contract.backends import SHARDS, Backend, MotoBackend


class EngineBackend(MotoBackend):
    """The AWS adapters on the engine, observed through the same APIs (which it answers)."""

    name = "engine"


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAWS]:
    saved = dict(os.environ)
    aws = LocalAWS(shards=SHARDS, engine=ENGINE_LOCAL).start()
    try:
        yield aws
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def backend(local_aws: LocalAWS) -> Iterator[Backend]:
    engine = EngineBackend(local_aws)
    try:
        yield engine
    finally:
        engine.reset()
