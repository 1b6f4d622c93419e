"""The use cases over the in-memory fakes and a fake clock: no AWS, no network, no sleeps."""

from __future__ import annotations

import pytest

from tests.builders import Fakes


@pytest.fixture
def fakes() -> Fakes:
    """Every use case wired over fresh fakes; the clock stands at 2026-11-26 12:00:00 UTC
    until a test moves it (sleeping on it moves it too)."""
    return Fakes()
