"""tests/contract/test_after_store.py on the engine (see conftest)."""

from tests.contract.test_after_store import *  # noqa: F403
