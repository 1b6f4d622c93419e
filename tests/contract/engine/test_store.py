"""tests/contract/test_store.py on the engine (see conftest)."""

from tests.contract.test_store import *  # noqa: F403
