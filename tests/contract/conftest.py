"""One contract, two backends: every test here runs against the in-memory fakes and against
the AWS adapters on moto (as apscheduler runs one suite over every data store).

moto is started once per module, and only if a test of the module asks for it: other test
modules start their own, and only one may run at a time in a process."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest
from chronoq.local.aws import LocalAWS

from tests.contract.backends import BACKENDS, SHARDS, Backend, FakeBackend, MotoBackend


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAWS]:
    """moto with every chronoq resource, for the tests of one module; the environment is
    restored afterwards."""
    saved = dict(os.environ)
    # Each test purges the queues it used: let it do so more often than once a minute.
    os.environ["MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR"] = "false"
    aws = LocalAWS(shards=SHARDS).start()
    threads = set(threading.enumerate())
    try:
        yield aws
    finally:
        # Executions stopped by the tests may still be finishing the state they were in.
        deadline = time.monotonic() + 5
        while set(threading.enumerate()) - threads and time.monotonic() < deadline:
            time.sleep(0.01)
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """A fresh backend: the fakes, or the AWS adapters on moto (emptied after the test)."""
    if request.param == "fake":
        yield FakeBackend()
        return
    moto = MotoBackend(request.getfixturevalue("local_aws"))
    try:
        yield moto
    finally:
        moto.reset()
