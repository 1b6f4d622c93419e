"""tests/contract/test_expect_store.py on the engine (see conftest)."""

from tests.contract.test_expect_store import *  # noqa: F403
