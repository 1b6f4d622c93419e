"""In-memory twins of the adapters, held to the same contract as the AWS ones
(tests/contract): use cases run on them in tests, with a clock that only moves when told."""

from chronoq.fakes.adapters import FakeArtifacts, FakeExecutor, FakeQueues, SentMessage
from chronoq.fakes.archive import FakeArchive
from chronoq.fakes.clock import FakeClock
from chronoq.fakes.store import FakeStore

__all__ = [
    "FakeArchive",
    "FakeArtifacts",
    "FakeClock",
    "FakeExecutor",
    "FakeQueues",
    "FakeStore",
    "SentMessage",
]
