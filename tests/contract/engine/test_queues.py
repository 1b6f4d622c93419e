"""tests/contract/test_queues.py on the engine (see conftest)."""

from tests.contract.test_queues import *  # noqa: F403
